"""DNS cost end to end: GETs to ``localhost`` with a new connection each time, so every request resolves.

``Connection: close`` on every request makes each client open a new connection per request. fastnet's
default ``CachingDns`` resolves ``localhost`` once per TTL; urllib3 and requests call ``getaddrinfo`` on
every new connection. For contrast: fastnet with ``dns=SystemDns()`` (no cache), and two raw-socket
floors, one resolving per connection and one connecting to the cached address. The client process and
nginx share one CPU. 10,000 requests per client (``--quick``: 1,000), split over interleaved rounds;
the figure is the median µs per request over rounds, the ratio is to urllib3's figure.

Usage::

    PYTHONPATH=. python benchmarks/bench_dns_e2e.py [--quick] [--requests N] [--clients fastnet,urllib3]
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import time
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402

__all__ = ["CLIENTS", "main"]

_TIMEOUT = 10.0
_NAME = "localhost"
_CLOSE = {"Connection": "close"}


def _check(status: int, body: bytes) -> None:
    if status != 200 or body != b"ok":
        raise common.ClientError(f"status {status}, body {body[:20]!r}")


def _raw_factory(resolve_each: bool) -> Callable[[str, int], Any]:
    def factory(url: str, port: int) -> Any:
        req = f"GET /2b HTTP/1.1\r\nHost: {_NAME}:{port}\r\nConnection: close\r\n\r\n".encode()
        cached = socket.getaddrinfo(_NAME, port, type=socket.SOCK_STREAM)[0]
        buf = bytearray(4096)

        def run(n: int) -> float:
            t0 = time.perf_counter()
            for _ in range(n):
                family, kind, proto, _, addr = (
                    socket.getaddrinfo(_NAME, port, type=socket.SOCK_STREAM)[0] if resolve_each else cached
                )
                with socket.socket(family, kind, proto) as s:
                    s.settimeout(_TIMEOUT)
                    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                    s.connect(addr)
                    s.sendall(req)
                    got = 0
                    while True:
                        k = s.recv_into(memoryview(buf)[got:])
                        got += k
                        if not k or buf[:got].endswith(b"ok"):
                            break
            elapsed = time.perf_counter() - t0
            _check(200 if buf.startswith(b"HTTP/1.1 200") else 0, bytes(buf[got - 2 : got]))
            return elapsed

        return run, lambda: None

    return factory


def _fastnet_factory(system: bool) -> Callable[[str, int], Any]:
    def factory(url: str, port: int) -> Any:
        import fastnet

        if system:
            from fastnet.dns import SystemDns

            client = fastnet.Client(dns=SystemDns())
        else:
            client = fastnet.Client()

        def run(n: int) -> float:
            get = client.get
            t0 = time.perf_counter()
            for _ in range(n):
                r = get(url, headers=_CLOSE)
                body = r.content
            elapsed = time.perf_counter() - t0
            _check(r.status_code, body)
            return elapsed

        return run, client.close

    return factory


def _urllib3(url: str, port: int) -> Any:
    import urllib3

    pm = urllib3.PoolManager(maxsize=1, timeout=_TIMEOUT)

    def run(n: int) -> float:
        req = pm.request
        t0 = time.perf_counter()
        for _ in range(n):
            r = req("GET", url, headers=_CLOSE)
            body = r.data
        elapsed = time.perf_counter() - t0
        _check(r.status, body)
        return elapsed

    return run, pm.clear


def _requests(url: str, port: int) -> Any:
    import requests

    session = requests.Session()

    def run(n: int) -> float:
        get = session.get
        t0 = time.perf_counter()
        for _ in range(n):
            r = get(url, headers=_CLOSE, timeout=_TIMEOUT)
            body = r.content
        elapsed = time.perf_counter() - t0
        _check(r.status_code, body)
        return elapsed

    return run, session.close


CLIENTS: dict[str, Callable[[str, int], Any]] = {
    "raw (address cached)": _raw_factory(False),
    "raw (getaddrinfo per connection)": _raw_factory(True),
    "fastnet (default CachingDns)": _fastnet_factory(False),
    "fastnet (SystemDns, no cache)": _fastnet_factory(True),
    "urllib3": _urllib3,
    "requests": _requests,
}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="1,000 requests per client")
    p.add_argument("--requests", type=int, default=None, help="requests per client (default 10,000)")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--clients", default="", help="comma-separated first words: raw,fastnet,urllib3,requests")
    p.add_argument("--no-pin", action="store_true")
    p.add_argument("--record", action="store_true", help="add the table to benchmarks/RESULTS.md")
    p.add_argument("--deadline", type=float, default=900.0)
    p.add_argument("-v", "--verbose", action="store_true")
    args = p.parse_args(argv)
    total = args.requests or (1_000 if args.quick else 10_000)
    rounds = max(1, args.rounds)
    per_round = max(1, total // rounds)
    wanted = [c for c in CLIENTS if not args.clients or c.split()[0] in args.clients.split(",")]

    common.clean_proxy_env()
    log = (lambda s: print("  " + s, file=sys.stderr, flush=True)) if args.verbose else None
    hosts = sorted({str(ai[4][0]) for ai in socket.getaddrinfo(_NAME, None, type=socket.SOCK_STREAM)})
    results: dict[str, common.Timing] = {}
    with common.Nginx(hosts=hosts) as nginx:
        cpu = None if args.no_pin else common.pin_for_sequential(nginx.pids())
        url = f"http://{_NAME}:{nginx.port}/2b"
        runners = {}
        stops = []
        for name in wanted:
            try:
                run, stop = CLIENTS[name](url, nginx.port)
            except Exception as exc:  # noqa: BLE001
                results[name] = common.Timing(name, error=f"{type(exc).__name__}: {exc}")
                continue
            runners[name] = run
            stops.append(stop)
        try:
            results.update(
                common.run_rounds(runners, rounds, 0.0, fixed_n=per_round, deadline_s=args.deadline, log=log)
            )
        finally:
            for stop in stops:
                try:
                    stop()
                except Exception:  # noqa: BLE001
                    pass

    base = results.get("urllib3")
    rows = []
    for name in wanted:
        t = results[name]
        if t.median is None:
            rows.append([name, f"error ({t.error})", "–", "–"])
            continue
        ratio = f"{t.median / base.median:.2f}×" if base is not None and base.median else "–"
        rows.append([name, f"{t.median * 1e6:.1f}", f"{1.0 / t.median:.0f}", ratio])
    table = common.markdown_table(
        [
            f"client (GET http://{_NAME}:PORT/2b, Connection: close)",
            "µs/request",
            "requests/s",
            "time vs urllib3",
        ],
        rows,
    )
    errors = [f"{n}: {t.error}" for n, t in results.items() if t.error]
    notes = [
        f"Command: `{common.command_line()}`",
        f"Machine: {common.machine_notes()}",
        f"{_NAME} resolves to {', '.join(hosts)} (system resolver, /etc/hosts). "
        f"{per_round} requests per client per round × {rounds} interleaved rounds; medians. "
        + ("Client and nginx pinned to one CPU." if cpu is not None else "Not pinned."),
    ]
    if errors:
        notes.append("Errors: " + "; ".join(errors))
    out = table + "\n\n" + "\n\n".join(notes)
    print(out)
    if args.record:
        common.record_results("DNS end to end (bench_dns_e2e.py)", out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
