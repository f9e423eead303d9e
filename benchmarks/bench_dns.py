"""Micro-benchmarks of fastnet.dns: cache hits and blacklist updates, compiled vs pure; DNS cost end to end.

    python benchmarks/bench_dns.py [--quick]

Prints medians (of 5 runs, 3 with --quick) and ratios; never fails. The end-to-end part needs the testbed
(``python tests/testbed.py start``: nginx on 127.0.0.1:19080, unbound on 127.0.0.1:19054) and is skipped
without it. It closes the connection after every request so each request pays for name resolution:
fastnet through ``CachingDns(UdpDns(unbound))`` and through a bare ``UdpDns`` (a query per connection),
and requests/urllib3 to ``localhost`` through the system resolver (they resolve on every new connection).
"""

from __future__ import annotations

import argparse
import importlib
import socket
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def median_ns(fn: Callable[[], None], n: int, runs: int) -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter_ns()
        fn()
        samples.append((time.perf_counter_ns() - start) / n)
    return statistics.median(samples)


def bench_unit(mod: Any, n: int, runs: int) -> dict[str, float]:
    hosts = [f"h{i}.test" for i in range(100)]
    dns = mod.CachingDns(lambda host: ["127.0.0.1", "127.0.0.2"], ttl=3600.0)
    for h in hosts:
        dns.lookup(h)
    lookup = dns.lookup
    cache = dns.cache
    get = cache.get
    bl = mod.IpBlacklist(threshold=5)
    ips = ["127.0.0.4", "127.0.0.1"]
    bl.record_failure("dirty.test", "127.0.0.4")

    def hits() -> None:
        for _ in range(n // 100):
            for h in hosts:
                lookup(h)

    def cache_gets() -> None:
        for _ in range(n // 100):
            for h in hosts:
                get(h)

    def bl_update() -> None:
        fail, ok = bl.record_failure, bl.record_success
        for _ in range(n // 2):
            fail("app.test", "127.0.0.4")
            ok("app.test", "127.0.0.4")

    def bl_filter_clean() -> None:
        f = bl.filter
        for _ in range(n):
            f("clean.test", ips)

    def bl_filter_dirty() -> None:
        f = bl.filter
        for _ in range(n):
            f("dirty.test", ips)

    return {
        "CachingDns.lookup hit": median_ns(hits, n, runs),
        "DnsCache.get hit": median_ns(cache_gets, n, runs),
        "IpBlacklist failure/success update": median_ns(bl_update, n, runs),
        "IpBlacklist.filter, host clean": median_ns(bl_filter_clean, n, runs),
        "IpBlacklist.filter, host with failures": median_ns(bl_filter_dirty, n, runs),
    }


def reachable(host: str, port: int) -> bool:
    try:
        socket.create_connection((host, port), timeout=0.5).close()
    except OSError:
        return False
    return True


def bench_end_to_end(n: int) -> None:
    if not reachable("127.0.0.1", 19080):
        print("\nend to end: skipped (start the testbed: python tests/testbed.py start)")
        return
    try:
        from fastnet.client import Client
    except ImportError:
        print("\nend to end: skipped (fastnet.client missing)")
        return
    from fastnet.dns import CachingDns, UdpDns

    print(f"\nend to end: {n} GETs, connection closed after each (so every request resolves)")
    rows: list[tuple[str, float]] = []
    close = {"Connection": "close"}
    for label, dns in (
        ("fastnet + CachingDns(UdpDns) app.test", CachingDns(UdpDns("127.0.0.1", 19054))),
        ("fastnet + UdpDns (no cache) app.test", UdpDns("127.0.0.1", 19054)),
    ):
        client = Client(dns=dns)
        try:
            start = time.perf_counter()
            for _ in range(n):
                _ = client.get("http://app.test:19080/whoami", headers=close).content
            rows.append((label, (time.perf_counter() - start) / n * 1e6))
        finally:
            client.close()
    try:
        import requests

        with requests.Session() as session:
            start = time.perf_counter()
            for _ in range(n):
                _ = session.get("http://localhost:19080/whoami", headers=close).content
            rows.append(("requests, system resolver, localhost", (time.perf_counter() - start) / n * 1e6))
    except ImportError:
        pass
    try:
        import urllib3

        with urllib3.PoolManager() as pool:
            start = time.perf_counter()
            for _ in range(n):
                _ = pool.request("GET", "http://localhost:19080/whoami", headers=close).data
            rows.append(("urllib3, system resolver, localhost", (time.perf_counter() - start) / n * 1e6))
    except ImportError:
        pass
    base = rows[0][1]
    for label, us in rows:
        print(f"  {label:45s} {us:8.1f} µs/request   x{us / base:5.2f}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    n, runs, e2e = (100_000, 3, 1_000) if args.quick else (1_000_000, 5, 10_000)
    results: dict[str, dict[str, float]] = {}
    for twin in ("py", "c"):
        try:
            mod = importlib.import_module(f"fastnet.dns._cache_{twin}")
        except ImportError:
            print(f"({twin} twin not built)")
            continue
        results[twin] = bench_unit(mod, n, runs)
    print(f"fastnet.dns hot path, median ns per operation ({n} ops x {runs} runs)")
    print(f"  {'operation':42s} {'pure':>9s} {'compiled':>9s} {'speed-up':>9s}")
    for op in results.get("py", {}):
        py = results["py"][op]
        c = results.get("c", {}).get(op)
        ctext = f"{c:9.1f}" if c is not None else "        -"
        ratio = f"x{py / c:8.2f}" if c else "        -"
        print(f"  {op:42s} {py:9.1f} {ctext} {ratio}")
    if "c" in results:
        hit = results["c"]["CachingDns.lookup hit"]
        print(f"  compiled hit: {hit:.0f} ns = {1e9 / hit / 1e6:.1f} M lookups/s (target < 1000 ns)")
    bench_end_to_end(e2e)


if __name__ == "__main__":
    main()
