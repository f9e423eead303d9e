"""Response-head parsing cost: compiled twin, h11-based pure twin, raw h11 and httptools.

Each round parses the same head (2 headers, then 40 headers) with every available parser, interleaved
so drift affects all alike; the table reports the median µs per head and the ratio to the compiled twin.
Never fails; missing parsers are skipped. ``--quick`` runs fewer rounds.

    python benchmarks/bench_parser.py [--quick]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout without installing

__all__ = ["main"]

HEADS = {
    "2 headers": b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 0\r\n\r\n",
    "40 headers": b"HTTP/1.1 200 OK\r\n"
    + b"".join(b"X-Header-Number-%02d: some typical header value %d\r\n" % (i, i) for i in range(39))
    + b"Content-Length: 0\r\n\r\n",
}


def _fastnet(module_name: str) -> Callable[[bytes], Any] | None:
    try:
        module = __import__(module_name, fromlist=["*"])
    except ImportError:
        return None
    cls = module.ResponseParser

    def parse(data: bytes) -> Any:
        p = cls()
        p.feed(data)
        return p.read_head()

    return parse


def _h11() -> Callable[[bytes], Any] | None:
    try:
        import h11
    except ImportError:
        return None

    def parse(data: bytes) -> Any:
        conn = h11.Connection(h11.CLIENT)
        conn.send(h11.Request(method="GET", target="/", headers=[("Host", "x")]))
        conn.send(h11.EndOfMessage())
        conn.receive_data(data)
        return conn.next_event()

    return parse


def _httptools() -> Callable[[bytes], Any] | None:
    try:
        import httptools
    except ImportError:
        return None

    class Proto:
        __slots__ = ("headers", "done")

        def __init__(self) -> None:
            self.headers: list[tuple[bytes, bytes]] = []
            self.done = False

        def on_header(self, name: bytes, value: bytes) -> None:
            self.headers.append((name, value))

        def on_headers_complete(self) -> None:
            self.done = True

    def parse(data: bytes) -> Any:
        proto = Proto()
        p = httptools.HttpResponseParser(proto)
        p.feed_data(data)
        return p.get_status_code(), proto.headers

    return parse


def _time(fn: Callable[[bytes], Any], data: bytes, n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        fn(data)
    return (time.perf_counter() - start) / n * 1e6


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    rounds, inner = (5, 200) if args.quick else (21, 2000)
    parsers = {
        "fastnet compiled": _fastnet("fastnet._internal.http1.parser"),
        "fastnet pure (h11)": _fastnet("fastnet._internal.http1.parser"),
        "h11": _h11(),
        "httptools": _httptools(),
    }
    available = {k: v for k, v in parsers.items() if v is not None}
    missing = [k for k, v in parsers.items() if v is None]
    results: dict[tuple[str, str], float] = {}
    for head_name, data in HEADS.items():
        samples: dict[str, list[float]] = {k: [] for k in available}
        for fn in available.values():
            fn(data)  # warm up
        for _ in range(rounds):
            for name, fn in available.items():
                samples[name].append(_time(fn, data, inner))
        for name in available:
            results[(head_name, name)] = statistics.median(samples[name])
    base_name = "fastnet compiled" if "fastnet compiled" in available else next(iter(available))
    print(f"rounds={rounds} x {inner} parses; median µs per head; ratio = parser / {base_name}")
    print()
    print("| parser | " + " | ".join(f"{h} µs | {h} ratio" for h in HEADS) + " |")
    print("| --- |" + " --- | --- |" * len(HEADS))
    for name in available:
        cells = []
        for head_name in HEADS:
            us = results[(head_name, name)]
            cells.append(f"{us:.2f} | {us / results[(head_name, base_name)]:.1f}×")
        print(f"| {name} | " + " | ".join(cells) + " |")
    if missing:
        print(f"\nskipped (not installed or not built): {', '.join(missing)}")


if __name__ == "__main__":
    main()
