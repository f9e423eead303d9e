"""asyncio clients side by side: fastnet.AsyncClient against aiohttp, httpx and pyreqwest, on a private nginx.

Workloads (keep-alive GETs, the body read whole):

* ``tiny`` - a 2-byte body (``/2b``), 32 and 256 requests in flight;
* ``64k`` - a 64 KiB body (``/64k.bin``), 32 and 256 in flight;
* ``seq`` - one request at a time, ``await client.get()`` against the blocking ``Client.get()`` (µs per
  request; the issue's bound is 1.5× the blocking client's time).

Clients: ``fastnet`` and ``aiohttp`` and ``httpx`` on uvloop and on the default loop, ``pyreqwest`` (its
async client; its Rust runtime runs its own threads, counted in its CPU time). Each run is a fresh child
process pinned to CPU 0 (nginx's one worker is pinned to CPU 1): ``concurrency`` tasks share one client,
each sending its share of the requests back to back. A child reports requests per second, its own CPU
time per request (all its threads: the figure other jobs on a shared machine barely move) and the p50/p99
of per-request latency. Rounds interleave the clients; the figures are medians over rounds and the ratio
is fastnet's over the peer's (requests per second) or the peer's over fastnet's (CPU, p99).

Usage::

    PYTHONPATH=. python benchmarks/bench_async.py [--quick] [--clients fastnet,aiohttp] [--rounds 5]
    FASTNET_NO_EXTENSIONS=1 PYTHONPATH=. python benchmarks/bench_async.py --quick    # the pure build

It never fails: a client that errors is reported as such in its cell. ``--record`` adds the tables to
``benchmarks/RESULTS.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402

CLIENTS = (
    "fastnet+uvloop",
    "fastnet",
    "aiohttp+uvloop",
    "aiohttp",
    "httpx+uvloop",
    "pyreqwest",
)
WORKLOADS = {"tiny": "/2b", "64k": "/64k.bin"}
CONCURRENCY = (32, 256)
SIXTY_FOUR_K = 64 * 1024


# -- the child: one client, one workload, one measurement -----------------------------------------


async def _fastnet(url: str, concurrency: int, count: int) -> tuple[float, float, list[float]]:
    import fastnet

    pool = fastnet.ConnectionPool(max_idle_connections=concurrency)
    async with fastnet.AsyncClient(connection_pool=pool, trust_env=False) as client:

        async def one() -> None:
            response = await client.get(url)
            if response.status_code != 200:
                raise RuntimeError(f"status {response.status_code}")

        return await _drive(one, concurrency, count)


async def _aiohttp(url: str, concurrency: int, count: int) -> tuple[float, float, list[float]]:
    import aiohttp

    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def one() -> None:
            async with session.get(url) as response:
                await response.read()
                if response.status != 200:
                    raise RuntimeError(f"status {response.status}")

        return await _drive(one, concurrency, count)


async def _httpx(url: str, concurrency: int, count: int) -> tuple[float, float, list[float]]:
    import httpx

    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(limits=limits, trust_env=False) as client:

        async def one() -> None:
            response = await client.get(url)
            if response.status_code != 200:
                raise RuntimeError(f"status {response.status_code}")

        return await _drive(one, concurrency, count)


async def _pyreqwest(url: str, concurrency: int, count: int) -> tuple[float, float, list[float]]:
    from pyreqwest.client import ClientBuilder

    async with ClientBuilder().build() as client:

        async def one() -> None:
            response = await client.get(url).build().send()
            await response.bytes()
            if response.status != 200:
                raise RuntimeError(f"status {response.status}")

        return await _drive(one, concurrency, count)


async def _drive(
    one: Callable[[], Awaitable[None]], concurrency: int, count: int
) -> tuple[float, float, list[float]]:
    """Warm up, then ``count`` requests over ``concurrency`` tasks: (wall s, CPU s, latencies)."""
    await asyncio.gather(*(one() for _ in range(concurrency)))
    await asyncio.gather(*(one() for _ in range(concurrency)))
    latencies: list[float] = []
    clock = time.perf_counter
    per_task = max(1, count // concurrency)

    async def worker() -> None:
        for _ in range(per_task):
            started = clock()
            await one()
            latencies.append(clock() - started)

    cpu = time.process_time()
    wall = clock()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return clock() - wall, time.process_time() - cpu, latencies


RUNNERS: dict[str, Callable[[str, int, int], Awaitable[tuple[float, float, list[float]]]]] = {
    "fastnet": _fastnet,
    "aiohttp": _aiohttp,
    "httpx": _httpx,
    "pyreqwest": _pyreqwest,
}


def _sequential(url: str, count: int, kind: str) -> tuple[float, float, list[float]]:
    import fastnet

    if kind == "sync":
        with fastnet.Client(trust_env=False) as client:
            for _ in range(200):
                client.get(url)
            cpu, wall = time.process_time(), time.perf_counter()
            for _ in range(count):
                client.get(url)
            return time.perf_counter() - wall, time.process_time() - cpu, []

    async def run() -> tuple[float, float, list[float]]:
        async with fastnet.AsyncClient(trust_env=False) as client:
            for _ in range(200):
                await client.get(url)
            cpu, wall = time.process_time(), time.perf_counter()
            for _ in range(count):
                await client.get(url)
            return time.perf_counter() - wall, time.process_time() - cpu, []

    if kind == "async+uvloop":
        import uvloop

        return uvloop.run(run())
    return asyncio.run(run())


def child(args: argparse.Namespace) -> None:
    common.pin_self(0)
    if args.workload == "seq":
        wall, cpu, latencies = _sequential(args.url, args.count, args.client)
    else:
        name, _, loop = args.client.partition("+")
        coro = RUNNERS[name](args.url, args.concurrency, args.count)
        if loop == "uvloop":
            import uvloop

            wall, cpu, latencies = uvloop.run(coro)
        else:
            wall, cpu, latencies = asyncio.run(coro)
    n = len(latencies) or args.count
    latencies.sort()
    print(
        json.dumps(
            {
                "rps": n / wall,
                "us_per_request": wall / n * 1e6,
                "cpu_us": cpu / n * 1e6,
                "p50_ms": latencies[len(latencies) // 2] * 1e3 if latencies else None,
                "p99_ms": latencies[int(len(latencies) * 0.99)] * 1e3 if latencies else None,
            }
        )
    )


# -- the parent: rounds, medians, tables ------------------------------------------------------------


def run_child(client: str, url: str, workload: str, concurrency: int, count: int) -> dict[str, Any]:
    command = [
        sys.executable,
        os.path.abspath(__file__),
        "--child",
        "--client",
        client,
        "--url",
        url,
        "--workload",
        workload,
        "--concurrency",
        str(concurrency),
        "--count",
        str(count),
    ]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    except subprocess.TimeoutExpired:
        return {"error": "timed out"}
    lines = done.stdout.strip().splitlines()
    if not lines or not lines[-1].startswith("{"):
        tail = (done.stderr.strip().splitlines() or ["?"])[-1]
        return {"error": tail[:120]}
    # a JSON line counts even from a child that then died: pyreqwest aborts at interpreter exit
    # ("PyGILState_Release: thread state must be current") after its run has been measured
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def median_of(runs: list[dict[str, Any]], key: str) -> float | None:
    values = [r[key] for r in runs if r.get(key) is not None and "error" not in r]
    return statistics.median(values) if values else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--client", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--workload", help=argparse.SUPPRESS)
    parser.add_argument("--concurrency", type=int, default=32, help=argparse.SUPPRESS)
    parser.add_argument("--count", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--quick", action="store_true", help="fewer requests and rounds")
    parser.add_argument("--rounds", type=int, default=0, help="interleaved rounds (default 5, quick 2)")
    parser.add_argument("--clients", default=",".join(CLIENTS), help="comma-separated subset")
    parser.add_argument("--workloads", default="tiny,64k,seq", help="comma-separated subset")
    parser.add_argument("--record", action="store_true", help="add the tables to benchmarks/RESULTS.md")
    args = parser.parse_args()
    if args.child:
        child(args)
        return

    rounds = args.rounds or (2 if args.quick else 5)
    clients = [c for c in args.clients.split(",") if c]
    workloads = [w for w in args.workloads.split(",") if w]
    started = time.monotonic()
    load_before = os.getloadavg()
    out: list[str] = []
    with common.Nginx() as nginx:
        (nginx.dir / "www" / "64k.bin").write_bytes(os.urandom(SIXTY_FOUR_K))
        common.pin_pids(nginx.pids(), 1)
        for workload in workloads:
            if workload == "seq":
                count = 2000 if args.quick else 8000
                kinds = ["sync", "async+uvloop", "async"]
                runs: dict[str, list[dict[str, Any]]] = {k: [] for k in kinds}
                for r in range(rounds):
                    for kind in kinds[r % len(kinds) :] + kinds[: r % len(kinds)]:
                        runs[kind].append(run_child(kind, nginx.url("/2b"), "seq", 1, count))
                sync = median_of(runs["sync"], "us_per_request")
                rows = []
                for kind in kinds:
                    us = median_of(runs[kind], "us_per_request")
                    cpu = median_of(runs[kind], "cpu_us")
                    ratio = f"{us / sync:.2f}×" if us and sync else ""
                    rows.append(
                        [kind, f"{us:.1f}" if us else _error(runs[kind]), f"{cpu:.1f}" if cpu else "", ratio]
                    )
                out.append(
                    "**Sequential keep-alive GET, 2-byte body (µs/request; ratio to the blocking client)**\n"
                )
                out.append(common.markdown_table(["client", "µs/request", "CPU µs/request", "÷ sync"], rows))
                out.append("")
                continue
            path = WORKLOADS[workload]
            for concurrency in CONCURRENCY:
                count = (
                    (3000 if args.quick else 20000) if workload == "tiny" else (2000 if args.quick else 8000)
                )
                count = max(count, concurrency * 8)
                runs = {c: [] for c in clients}
                for r in range(rounds):
                    order = clients[r % len(clients) :] + clients[: r % len(clients)]
                    for client in order:
                        runs[client].append(run_child(client, nginx.url(path), workload, concurrency, count))
                out.append(_table(workload, concurrency, clients, runs))
    took = time.monotonic() - started
    notes = common.machine_notes({"load average at start": " ".join(f"{x:.2f}" for x in load_before)})
    body = "\n".join(out) + (
        f"\nCommand: `{common.command_line()}`\n\n{notes}\n\nMedians over {rounds} interleaved rounds; "
        f"each run a fresh process pinned to CPU 0, nginx (one worker) to CPU 1. Took {took:.0f} s.\n"
    )
    print(body)
    if args.record:
        common.record_results("asyncio clients (bench_async.py)", body)


def _error(runs: list[dict[str, Any]]) -> str:
    errors = [r["error"] for r in runs if "error" in r]
    return f"error: {errors[0]}" if errors else "-"


def _table(workload: str, concurrency: int, clients: list[str], runs: dict[str, list[dict[str, Any]]]) -> str:
    ours = "fastnet+uvloop" if "fastnet+uvloop" in clients else "fastnet"
    rps0 = median_of(runs.get(ours, []), "rps")
    cpu0 = median_of(runs.get(ours, []), "cpu_us")
    p990 = median_of(runs.get(ours, []), "p99_ms")
    rows = []
    for client in clients:
        rps = median_of(runs[client], "rps")
        cpu = median_of(runs[client], "cpu_us")
        p50 = median_of(runs[client], "p50_ms")
        p99 = median_of(runs[client], "p99_ms")
        if rps is None:
            rows.append([client, _error(runs[client]), "", "", "", "", "", ""])
            continue
        rows.append(
            [
                client,
                f"{rps:,.0f}",
                f"{rps0 / rps:.2f}×" if rps0 and client != ours else "",
                f"{cpu:.1f}" if cpu else "",
                f"{cpu / cpu0:.2f}×" if cpu and cpu0 and client != ours else "",
                f"{p50:.2f}" if p50 else "",
                f"{p99:.2f}" if p99 else "",
                f"{p99 / p990:.2f}×" if p99 and p990 and client != ours else "",
            ]
        )
    title = f"**{workload} ({WORKLOADS[workload]}), {concurrency} in flight**\n"
    header = [
        "client",
        "requests/s",
        f"{ours} ÷ client",
        "CPU µs/request",
        "client ÷ ours (CPU)",
        "p50 ms",
        "p99 ms",
        "client p99 ÷ ours",
    ]
    return title + "\n" + common.markdown_table(header, rows) + "\n"


if __name__ == "__main__":
    main()
