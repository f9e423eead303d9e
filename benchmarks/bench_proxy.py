"""Keep-alive GETs through squid: fastnet vs urllib3's ProxyManager vs requests, same proxy, same origin.

A private nginx (``/2b``) and a private squid (no auth, no cache, ``access_log none``) run on loopback;
each client sends plain-HTTP GETs through the proxy (absolute-form request line, one kept-alive
connection to squid, which keeps its own connection to nginx). Clients are interleaved within each round;
figures are medians of requests per second, with the ratio to urllib3's ProxyManager (issue 3's target:
fastnet at least 2× urllib3). Three processes share two CPUs here, so nothing is pinned.

Usage::

    PYTHONPATH=. python benchmarks/bench_proxy.py [--quick] [--clients fastnet,urllib3] [--record]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402

__all__ = ["CLIENTS", "main"]

_TIMEOUT = 10.0


def _check(status: int, body: bytes) -> None:
    if status != 200 or body != b"ok":
        raise common.ClientError(f"status {status}, body {body[:20]!r}")


def _raw(url: str, proxy: str) -> Any:
    """The floor: prebuilt absolute-form request bytes on one kept-alive socket to squid."""
    import socket
    from urllib.parse import urlsplit

    u, pu = urlsplit(url), urlsplit(proxy)
    req = f"GET {url} HTTP/1.1\r\nHost: {u.netloc}\r\n\r\n".encode()
    s = socket.create_connection((pu.hostname, pu.port), timeout=_TIMEOUT)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    buf = bytearray(65536)
    view = memoryview(buf)

    def run(n: int) -> float:
        t0 = time.perf_counter()
        for _ in range(n):
            s.sendall(req)
            got = s.recv_into(buf)
            while True:
                end = buf.find(b"\r\n\r\n", 0, got)
                if end >= 0:
                    i = buf.find(b"Content-Length: ", 0, end)
                    if got >= end + 4 + int(buf[i + 16 : buf.find(b"\r", i)]):
                        break
                more = s.recv_into(view[got:])
                if not more:
                    raise common.ClientError("proxy closed the connection")
                got += more
        elapsed = time.perf_counter() - t0
        _check(200 if buf.startswith(b"HTTP/1.1 200") else 0, bytes(buf[end + 4 : got]))
        return elapsed

    return run, s.close


def _fastnet(url: str, proxy: str) -> Any:
    import fastnet

    client = fastnet.Client(proxy=proxy)

    def run(n: int) -> float:
        get = client.get
        t0 = time.perf_counter()
        for _ in range(n):
            r = get(url)
            body = r.content
        elapsed = time.perf_counter() - t0
        _check(r.status_code, body)
        return elapsed

    return run, client.close


def _urllib3(url: str, proxy: str) -> Any:
    import urllib3

    pm = urllib3.ProxyManager(proxy, maxsize=1, timeout=_TIMEOUT)

    def run(n: int) -> float:
        req = pm.request
        t0 = time.perf_counter()
        for _ in range(n):
            r = req("GET", url)
            body = r.data
        elapsed = time.perf_counter() - t0
        _check(r.status, body)
        return elapsed

    return run, pm.clear


def _requests(url: str, proxy: str) -> Any:
    import requests

    session = requests.Session()
    session.proxies = {"http": proxy, "https": proxy}

    def run(n: int) -> float:
        get = session.get
        t0 = time.perf_counter()
        for _ in range(n):
            r = get(url, timeout=_TIMEOUT)
            body = r.content
        elapsed = time.perf_counter() - t0
        _check(r.status_code, body)
        return elapsed

    return run, session.close


CLIENTS: dict[str, Callable[[str, str], Any]] = {
    "raw": _raw,
    "fastnet": _fastnet,
    "urllib3 ProxyManager": _urllib3,
    "requests": _requests,
}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="3 short rounds")
    p.add_argument("--rounds", type=int, default=None, help="rounds (default 7; --quick 3)")
    p.add_argument("--clients", default="", help="comma-separated subset of: raw,fastnet,urllib3,requests")
    p.add_argument("--record", action="store_true", help="add the table to benchmarks/RESULTS.md")
    p.add_argument("--pin", action="store_true", help="pin client, squid and nginx to one CPU")
    p.add_argument("--deadline", type=float, default=600.0)
    p.add_argument("-v", "--verbose", action="store_true")
    args = p.parse_args(argv)
    rounds = args.rounds or (3 if args.quick else 7)
    target = 0.15 if args.quick else 0.5
    splits = 3 if args.quick else 5
    wanted = [c for c in CLIENTS if not args.clients or c.split()[0] in args.clients.split(",")]

    common.clean_proxy_env()
    log = (lambda s: print("  " + s, file=sys.stderr, flush=True)) if args.verbose else None
    results: dict[str, common.Timing] = {}
    with common.Nginx() as nginx, common.Squid() as squid:
        squid.ready(nginx.host, nginx.port)
        if args.pin:
            common.pin_for_sequential([*nginx.pids(), *squid.pids()])
        url = nginx.url("/2b")
        runners = {}
        stops = []
        for name in wanted:
            try:
                run, stop = CLIENTS[name](url, squid.url)
            except Exception as exc:  # noqa: BLE001
                results[name] = common.Timing(name, error=f"{type(exc).__name__}: {exc}")
                continue
            runners[name] = run
            stops.append(stop)
        try:
            results.update(
                common.run_rounds(
                    runners, rounds, target, max_n=20_000, splits=splits, deadline_s=args.deadline, log=log
                )
            )
        finally:
            for stop in stops:
                try:
                    stop()
                except Exception:  # noqa: BLE001
                    pass

    base = results.get("urllib3 ProxyManager")
    rows = []
    for name in wanted:
        t = results[name]
        if t.median is None:
            rows.append([name, f"error ({t.error})", "–", "–"])
            continue
        ratio = f"{base.median / t.median:.2f}×" if base is not None and base.median else "–"
        rows.append([name, f"{1.0 / t.median:.0f}", f"{t.median * 1e6:.1f}", ratio])
    table = common.markdown_table(
        ["client (through squid, keep-alive GET /2b)", "requests/s", "µs/request", "vs urllib3 ProxyManager"],
        rows,
    )
    squid_version = "?"
    try:
        import subprocess

        out = subprocess.run(["squid", "-v"], capture_output=True, text=True, timeout=5).stdout
        first = out.split("\n")[0]
        squid_version = first.rsplit(" ", 1)[-1]
    except Exception:  # noqa: BLE001
        pass
    errors = [f"{n}: {t.error}" for n, t in results.items() if t.error]
    notes = [
        f"Command: `{common.command_line()}`",
        f"Machine: {common.machine_notes({'squid': squid_version})}",
        f"Medians over {rounds} interleaved rounds × {splits} samples; "
        + ("client, squid and nginx pinned to one CPU." if args.pin else "not pinned (2 vCPUs)."),
        "raw = prebuilt request bytes on one kept-alive socket to squid: squid's and nginx's own cost.",
        "Batch sizes: " + ", ".join(f"{n}={t.batch}×{len(t.per_round)}" for n, t in results.items()),
    ]
    if errors:
        notes.append("Errors: " + "; ".join(errors))
    out = table + "\n\n" + "\n\n".join(notes)
    print(out)
    if args.record:
        common.record_results("Through an HTTP proxy (bench_proxy.py)", out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
