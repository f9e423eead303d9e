"""HTTP client benchmark: fastnet against the raw-socket floor and the peers, on a private loopback nginx.

Workloads:

* W1 - sequential keep-alive GETs of a 2-byte body (µs per request)
* W2 - as W1, the response carries 40 extra headers (µs per request)
* W3 - 1 MiB downloads on a kept-alive connection, a new one per sample (MiB/s; see ``_fresh_per_sample``)
* W5 - a new connection per request (``Connection: close``; µs per request)
* W6 - a 3-hop redirect chain on one kept-alive connection (``/r3`` → ``/r2`` → ``/r1`` → ``/2b``,
  nginx's ``302`` with an absolute ``Location``; µs per chain of four requests). The raw floor sends the
  four prebuilt requests it knows, so it pays for no ``Location`` parsing.

Clients: ``raw`` (the floor: prebuilt request bytes, ``recv_into`` a reusable buffer until the
Content-Length is satisfied), ``fastnet``, ``fastnet-into`` (streamed, each body read with
``response.readinto`` into one reused buffer), ``urllib3``, ``requests``, ``httpx``, ``aiohttp``,
``aiohttp+uvloop`` (if uvloop is installed), ``pycurl`` and ``pyreqwest`` (its sync client). Each is
used the way its documentation shows, with default settings. The client process and nginx's worker
share one CPU. Clients are interleaved within each round; the figure is the median over rounds and the
ratio is to the raw floor's figure in the same run (time ratio for µs; for W3 the client's MiB/s over
the floor's).

Usage::

    PYTHONPATH=. python benchmarks/bench_http.py [--quick] [--clients raw,fastnet] [--workloads W1,W2]
    FASTNET_NO_EXTENSIONS=1 PYTHONPATH=. python benchmarks/bench_http.py --quick   # the pure build
    python benchmarks/bench_http.py --clients raw,fastnet --compare-with ../before   # before vs after

``--compare-with TREE`` adds ``fastnet@TREE``: the same fastnet client, run from another checkout (with its
extensions built in place) in a child process pinned to the same CPU and interleaved in the same rounds,
so a change is measured against the tree before it in one run.

It never fails: a client that errors is reported as such in its cell.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import os
import socket
import struct
import sys
import time
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402

__all__ = ["CLIENTS", "WORKLOADS", "main"]

#: name -> (path, new connection per request, unit)
WORKLOADS: dict[str, tuple[str, bool, str]] = {
    "W1": ("/2b", False, "µs"),
    "W2": ("/h40", False, "µs"),
    "W3": ("/1m.bin", False, "MiB/s"),
    "W5": ("/2b", True, "µs"),
    "W6": ("/r3", False, "µs"),
}
#: W6's chain as the raw floor walks it.
_REDIRECT_CHAIN = {"/r3": ["/r3", "/r2", "/r1", "/2b"]}
#: nginx locations W6 needs.
NGINX_LOCATIONS = """
        location = /r3 { return 302 /r2; }
        location = /r2 { return 302 /r1; }
        location = /r1 { return 302 /2b; }
"""
WORKLOAD_TITLES = {
    "W1": "W1 keep-alive GET, 2-byte body (µs/request)",
    "W2": "W2 as W1 + 40 response headers (µs/request)",
    "W3": "W3 1 MiB download (MiB/s)",
    "W5": "W5 new connection per request (µs/request)",
    "W6": "W6 3-hop redirect chain (µs/chain)",
}
_TIMEOUT = 10.0
_CLOSE = {"Connection": "close"}


def _check(status: int, body_len: int, expect: int) -> None:
    if status != 200 or body_len != expect:
        raise common.ClientError(f"status {status}, {body_len} body bytes (wanted 200, {expect})")


# --------------------------------------------------------------------------- clients
# Each factory takes (url, host, port, path, close, expect) and returns (run(n) -> seconds, close()).

Factory = Callable[[str, str, int, str, bool, int], tuple[Callable[[int], float], Callable[[], None]]]


def _raw(url: str, host: str, port: int, path: str, close: bool, expect: int) -> Any:
    reqs = [
        (
            f"GET {hop} HTTP/1.1\r\nHost: {host}:{port}\r\n"
            + ("Connection: close\r\n" if close else "")
            + "\r\n"
        ).encode()
        for hop in _REDIRECT_CHAIN.get(path, [path])
    ]
    last = reqs[-1]
    buf = bytearray(65536)
    view = memoryview(buf)
    body = bytearray(expect)
    bview = memoryview(body)
    tv = struct.pack("ll", int(_TIMEOUT), 0)
    state: dict[str, socket.socket | None] = {"sock": None}

    def connect() -> socket.socket:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        # Kernel timeouts keep it to one syscall per send/recv (settimeout would poll first).
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, tv)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, tv)
        s.connect((host, port))
        return s

    def one(s: socket.socket) -> None:
        for req in reqs:
            one_request(s, req)

    def one_request(s: socket.socket, req: bytes) -> None:
        s.sendall(req)
        got = s.recv_into(buf)
        end = buf.find(b"\r\n\r\n", 0, got)
        while end < 0:
            if got == len(buf) or not got:
                raise common.ClientError("head too large or connection closed")
            n = s.recv_into(view[got:])
            if not n:
                raise common.ClientError("connection closed in head")
            got += n
            end = buf.find(b"\r\n\r\n", 0, got)
        i = buf.find(b"Content-Length: ", 0, end)
        j = buf.find(b"\r", i)
        length = int(buf[i + 16 : j])
        start = end + 4
        have = got - start
        if length <= len(buf) - start:
            while have < length:
                n = s.recv_into(view[got:])
                if not n:
                    raise common.ClientError("connection closed in body")
                got += n
                have += n
        else:
            bview[:have] = view[start:got]
            while have < length:
                n = s.recv_into(bview[have:])
                if not n:
                    raise common.ClientError("connection closed in body")
                have += n
        if length != expect and req is last:
            raise common.ClientError(f"body of {length} bytes")

    def run(n: int) -> float:
        if close:
            t0 = time.perf_counter()
            for _ in range(n):
                fresh = connect()
                try:
                    one(fresh)
                finally:
                    fresh.close()
            return time.perf_counter() - t0
        kept = state["sock"]
        if kept is None:
            kept = connect()
            state["sock"] = kept
        t0 = time.perf_counter()
        for _ in range(n):
            one(kept)
        return time.perf_counter() - t0

    def stop() -> None:
        if state["sock"] is not None:
            state["sock"].close()

    return run, stop


def _fastnet(url: str, host: str, port: int, path: str, close: bool, expect: int) -> Any:
    import fastnet

    client = fastnet.Client()
    headers = _CLOSE if close else None

    def run(n: int) -> float:
        get = client.get
        t0 = time.perf_counter()
        for _ in range(n):
            r = get(url, headers=headers)
            body = r.content
        elapsed = time.perf_counter() - t0
        _check(r.status_code, len(body), expect)
        return elapsed

    return run, client.close


def _fastnet_into(url: str, host: str, port: int, path: str, close: bool, expect: int) -> Any:
    """fastnet's zero-copy path: each body read with ``readinto`` into one reused buffer, as the raw floor
    reads (a streamed request, so the body is not first made into ``content``)."""
    import fastnet

    client = fastnet.Client()
    headers = _CLOSE if close else None
    buffer = bytearray(max(expect, 65536))
    view = memoryview(buffer)

    def run(n: int) -> float:
        stream = client.stream
        t0 = time.perf_counter()
        for _ in range(n):
            with stream("GET", url, headers=headers) as r:
                got = 0
                while k := r.readinto(view[got:]):
                    got += k
        elapsed = time.perf_counter() - t0
        _check(r.status_code, got, expect)
        return elapsed

    return run, client.close


def _urllib3(url: str, host: str, port: int, path: str, close: bool, expect: int) -> Any:
    import urllib3

    pool = urllib3.HTTPConnectionPool(host, port, maxsize=1, timeout=_TIMEOUT)
    headers = _CLOSE if close else None

    def run(n: int) -> float:
        req = pool.request
        t0 = time.perf_counter()
        for _ in range(n):
            r = req("GET", path, headers=headers)
            body = r.data
        elapsed = time.perf_counter() - t0
        _check(r.status, len(body), expect)
        return elapsed

    return run, pool.close


def _fastnet_elsewhere(tree: str) -> Factory:
    """The fastnet client run from ``tree`` (another checkout) in a child process: see ``--compare-with``."""

    def factory(url: str, host: str, port: int, path: str, close: bool, expect: int) -> Any:
        import json
        import subprocess

        env = dict(os.environ, PYTHONPATH=os.path.abspath(tree))
        child = subprocess.Popen(
            [sys.executable, "-u", os.path.abspath(__file__), "--worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
            cwd=os.path.abspath(tree),
        )
        assert child.stdin is not None and child.stdout is not None
        child.stdin.write(json.dumps([url, host, port, path, close, expect]) + "\n")
        child.stdin.flush()
        ready = child.stdout.readline().strip()
        if ready != "ready":
            child.kill()
            raise common.ClientError(f"worker for {tree} failed to start: {ready!r}")
        _WORKER_PIDS.append(child.pid)

        def run(n: int) -> float:
            assert child.stdin is not None and child.stdout is not None
            child.stdin.write(f"{n}\n")
            child.stdin.flush()
            answer = child.stdout.readline().strip()
            try:
                return float(answer)
            except ValueError:
                raise common.ClientError(f"worker for {tree}: {answer!r}") from None

        def stop() -> None:
            if child.stdin is not None:
                child.stdin.close()
            try:
                child.wait(timeout=10)
            except subprocess.TimeoutExpired:
                child.kill()
            if child.pid in _WORKER_PIDS:
                _WORKER_PIDS.remove(child.pid)

        return run, stop

    return factory


#: The child processes of ``--compare-with`` clients: their CPU time counts in the CPU-time table.
_WORKER_PIDS: list[int] = []


def _worker() -> int:
    """Child side of ``--compare-with``: one fastnet client, batches on request, elapsed seconds back."""
    import json

    url, host, port, path, close, expect = json.loads(sys.stdin.readline())
    try:
        run, stop = _fastnet(url, host, port, path, close, expect)
    except Exception as exc:  # noqa: BLE001 - reported to the parent
        print(f"error {type(exc).__name__}: {exc}", flush=True)
        return 1
    print("ready", flush=True)
    for line in sys.stdin:
        try:
            print(f"{run(int(line)):.9f}", flush=True)
        except Exception as exc:  # noqa: BLE001
            print(f"error {type(exc).__name__}: {exc}", flush=True)
    stop()
    return 0


def _requests(url: str, host: str, port: int, path: str, close: bool, expect: int) -> Any:
    import requests

    session = requests.Session()
    headers = _CLOSE if close else None

    def run(n: int) -> float:
        get = session.get
        t0 = time.perf_counter()
        for _ in range(n):
            r = get(url, headers=headers, timeout=_TIMEOUT)
            body = r.content
        elapsed = time.perf_counter() - t0
        _check(r.status_code, len(body), expect)
        return elapsed

    return run, session.close


def _httpx(url: str, host: str, port: int, path: str, close: bool, expect: int) -> Any:
    import httpx

    client = httpx.Client(timeout=_TIMEOUT, follow_redirects=True)
    headers = _CLOSE if close else None

    def run(n: int) -> float:
        get = client.get
        t0 = time.perf_counter()
        for _ in range(n):
            r = get(url, headers=headers)
            body = r.content
        elapsed = time.perf_counter() - t0
        _check(r.status_code, len(body), expect)
        return elapsed

    return run, client.close


def _aiohttp_factory(use_uvloop: bool) -> Factory:
    def factory(url: str, host: str, port: int, path: str, close: bool, expect: int) -> Any:
        import aiohttp

        if use_uvloop:
            import uvloop

            loop: asyncio.AbstractEventLoop = uvloop.new_event_loop()
        else:
            loop = asyncio.new_event_loop()
        headers = _CLOSE if close else None

        async def make() -> aiohttp.ClientSession:
            return aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=_TIMEOUT))

        session = loop.run_until_complete(make())

        async def batch(n: int) -> float:
            get = session.get
            t0 = time.perf_counter()
            for _ in range(n):
                async with get(url, headers=headers) as r:
                    body = await r.read()
            elapsed = time.perf_counter() - t0
            _check(r.status, len(body), expect)
            return elapsed

        def run(n: int) -> float:
            return loop.run_until_complete(asyncio.wait_for(batch(n), 600))

        def stop() -> None:
            loop.run_until_complete(session.close())
            loop.run_until_complete(asyncio.sleep(0.01))
            loop.close()

        return run, stop

    return factory


def _pycurl(url: str, host: str, port: int, path: str, close: bool, expect: int) -> Any:
    import pycurl  # type: ignore[import-untyped]

    c = pycurl.Curl()
    c.setopt(pycurl.URL, url)
    c.setopt(pycurl.TIMEOUT, int(_TIMEOUT))
    c.setopt(pycurl.PROXY, "")
    c.setopt(pycurl.FOLLOWLOCATION, 1)
    if close:
        c.setopt(pycurl.HTTPHEADER, ["Connection: close"])

    def run(n: int) -> float:
        perform = c.perform
        setopt = c.setopt
        t0 = time.perf_counter()
        for _ in range(n):
            out = io.BytesIO()
            setopt(pycurl.WRITEDATA, out)
            perform()
        elapsed = time.perf_counter() - t0
        _check(c.getinfo(pycurl.RESPONSE_CODE), len(out.getvalue()), expect)
        return elapsed

    return run, c.close


def _pyreqwest(url: str, host: str, port: int, path: str, close: bool, expect: int) -> Any:
    from pyreqwest.client import SyncClientBuilder

    client = SyncClientBuilder().build()  # follows redirects by default (reqwest's policy: up to 10)

    def run(n: int) -> float:
        get = client.get
        t0 = time.perf_counter()
        for _ in range(n):
            builder = get(url)
            if close:
                builder = builder.header("Connection", "close")
            r = builder.build().send()
            body = r.bytes()
        elapsed = time.perf_counter() - t0
        _check(r.status, len(body), expect)
        return elapsed

    return run, client.close


def _have(module: str) -> bool:
    try:
        __import__(module)
        return True
    except Exception:  # noqa: BLE001
        return False


CLIENTS: dict[str, tuple[Factory, Callable[[], bool]]] = {
    "raw": (_raw, lambda: True),
    "fastnet": (_fastnet, lambda: _have("fastnet")),
    "fastnet-into": (_fastnet_into, lambda: _have("fastnet")),
    "pycurl": (_pycurl, lambda: _have("pycurl")),
    "pyreqwest": (_pyreqwest, lambda: _have("pyreqwest")),
    "aiohttp+uvloop": (_aiohttp_factory(True), lambda: _have("aiohttp") and _have("uvloop")),
    "aiohttp": (_aiohttp_factory(False), lambda: _have("aiohttp")),
    "urllib3": (_urllib3, lambda: _have("urllib3")),
    "httpx": (_httpx, lambda: _have("httpx")),
    "requests": (_requests, lambda: _have("requests")),
}


# --------------------------------------------------------------------------- main


def _cell(t: common.Timing, unit: str, floor: common.Timing | None, cpu: bool = False) -> str:
    if t.error is not None and not t.per_round:
        return f"error ({t.error[:60]})"
    med = t.cpu_median if cpu else t.median
    base = None if floor is None else (floor.cpu_median if cpu else floor.median)
    if med is None:
        return "–"
    if unit == "MiB/s":
        value = 1.0 / med  # per-sample figure is seconds per MiB
        text = f"{value:.0f}"
        if base:
            text += f" ({value * base:.2f}×)"
    else:
        text = f"{med * 1e6:.1f}"
        if base:
            text += f" ({med / base:.2f}×)"
    return text


def _fresh_per_sample(factory: Factory, url: str, host: str, port: int, path: str, expect: int) -> Any:
    """A W3 runner that makes a new client (so a new connection) for every sample, warmed by one download
    before the timed ones. One loopback connection downloads 1 MiB bodies at one of two speeds for its
    whole life (about 5,000 or 1,700 MiB/s here, whatever its receive buffer's size), so a client that
    kept one connection for the whole run would be timed on a coin toss; the median over samples is not."""

    def run(n: int) -> float:
        sample, stop = factory(url, host, port, path, False, expect)
        try:
            sample(1)
            return float(sample(n))
        finally:
            stop()

    return run


def _profile(n: int, workloads: list[str], pin: bool) -> int:
    """cProfile fastnet's per-request path (top functions by own time, then by cumulative time)."""
    import cProfile
    import pstats

    import fastnet

    common.clean_proxy_env()
    with common.Nginx(locations=NGINX_LOCATIONS) as nginx:
        if pin:
            common.pin_for_sequential(nginx.pids())
        for wl in workloads:
            path, close, _ = WORKLOADS[wl]
            expect = common.ONE_MIB if wl == "W3" else 2
            run, stop = _fastnet(nginx.url(path), nginx.host, nginx.port, path, close, expect)
            try:
                run(min(n, 200))  # warm up: connection, caches
                plain = run(n) / n
                prof = cProfile.Profile()
                prof.enable()
                run(n)
                prof.disable()
            finally:
                stop()
            print(
                f"\n=== {wl} fastnet {'compiled' if fastnet.compiled else 'pure'}: "
                f"{plain * 1e6:.1f} µs/request without the profiler; {n} requests profiled"
            )
            stats = pstats.Stats(prof, stream=sys.stdout)
            stats.strip_dirs().sort_stats("tottime").print_stats(25)
            stats.sort_stats("cumulative").print_stats(15)
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="3 short rounds")
    p.add_argument("--rounds", type=int, default=None, help="rounds (default 7; --quick 3)")
    p.add_argument(
        "--target", type=float, default=None, help="seconds per client per round (default 0.5; quick 0.15)"
    )
    p.add_argument(
        "--splits", type=int, default=None, help="samples per client per round (default 5; quick 3)"
    )
    p.add_argument("--clients", default="", help="comma-separated subset of: " + ",".join(CLIENTS))
    p.add_argument("--workloads", default="", help="comma-separated subset of: " + ",".join(WORKLOADS))
    p.add_argument("--no-pin", action="store_true", help="do not pin client and nginx to one CPU")
    p.add_argument("--record", action="store_true", help="add the table to benchmarks/RESULTS.md")
    p.add_argument("--label", default="", help="label for the recorded section (e.g. 'compiled build')")
    p.add_argument("--deadline", type=float, default=900.0, help="stop starting rounds after this many s")
    p.add_argument(
        "--profile",
        type=int,
        default=0,
        metavar="N",
        help="instead of the comparison, run fastnet N requests per workload under cProfile",
    )
    p.add_argument(
        "--compare-with",
        action="append",
        default=[],
        metavar="TREE",
        help="also run fastnet from this checkout (extensions built in place), as client fastnet@TREE",
    )
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("-v", "--verbose", action="store_true")
    args = p.parse_args(argv)
    if args.worker:
        return _worker()
    if args.profile:
        return _profile(
            args.profile,
            [w for w in (args.workloads.split(",") if args.workloads else WORKLOADS) if w],
            not args.no_pin,
        )

    rounds = args.rounds or (3 if args.quick else 7)
    target = args.target or (0.15 if args.quick else 0.5)
    splits = args.splits or (3 if args.quick else 5)
    wanted = [c for c in (args.clients.split(",") if args.clients else CLIENTS) if c]
    unknown = [c for c in wanted if c not in CLIENTS]
    if unknown:
        p.error(f"unknown clients {unknown}")
    if "raw" not in wanted:
        wanted.insert(0, "raw")  # the floor is what the ratios are taken against
    workloads = [w for w in (args.workloads.split(",") if args.workloads else WORKLOADS) if w]
    if any(w not in WORKLOADS for w in workloads):
        p.error(f"unknown workloads {workloads}")

    common.clean_proxy_env()
    log = (lambda s: print("  " + s, file=sys.stderr, flush=True)) if args.verbose else None
    clients = {}
    skipped = []
    for name in wanted:
        factory, available = CLIENTS[name]
        if available():
            clients[name] = factory
        else:
            skipped.append(name)
    for tree in args.compare_with:
        clients[f"fastnet@{os.path.basename(os.path.abspath(tree))}"] = _fastnet_elsewhere(tree)

    results: dict[str, dict[str, common.Timing]] = {}
    with common.Nginx(locations=NGINX_LOCATIONS) as nginx:
        cpu = None if args.no_pin else common.pin_for_sequential(nginx.pids())
        print(
            f"nginx pid {nginx.proc.pid if nginx.proc else '?'} on 127.0.0.1:{nginx.port}; "
            f"pinned to CPU {cpu}"
            if cpu is not None
            else "not pinned",
            file=sys.stderr,
        )
        for wl in workloads:
            path, close, unit = WORKLOADS[wl]
            expect = common.ONE_MIB if wl == "W3" else 2
            url = nginx.url(path)
            runners: dict[str, Callable[[int], float]] = {}
            stops: list[Callable[[], None]] = []
            results[wl] = {}
            for name, factory in clients.items():
                if wl == "W3":
                    runners[name] = _fresh_per_sample(factory, url, nginx.host, nginx.port, path, expect)
                    continue
                try:
                    run, stop = factory(url, nginx.host, nginx.port, path, close, expect)
                except Exception as exc:  # noqa: BLE001
                    results[wl][name] = common.Timing(name, error=f"{type(exc).__name__}: {exc}")
                    continue
                runners[name] = run
                stops.append(stop)
            print(f"{wl}: {', '.join(runners)}; {rounds} rounds", file=sys.stderr, flush=True)
            try:
                max_n = 2000 if close else 50_000
                results[wl].update(
                    common.run_rounds(
                        runners,
                        rounds,
                        target,
                        max_n=max_n,
                        splits=splits,
                        cpu_pids=[0, *nginx.pids(), *_WORKER_PIDS],
                        deadline_s=args.deadline,
                        log=log,
                    )
                )
            finally:
                for stop in stops:
                    try:
                        stop()
                    except Exception:  # noqa: BLE001
                        pass

    header = ["client", *(WORKLOAD_TITLES[w] for w in workloads)]
    tables = []
    for cpu_view in (False, True):
        rows = []
        for name in clients:
            row = [name]
            for wl in workloads:
                t = results[wl].get(name)
                row.append(_cell(t, WORKLOADS[wl][2], results[wl].get("raw"), cpu_view) if t else "–")
            rows.append(row)
        title = (
            "CPU time per request, client + nginx (schedstat; other processes' time excluded)"
            if cpu_view
            else "Wall clock"
        )
        tables.append(f"**{title}**\n\n" + common.markdown_table(header, rows))
    table = "\n\n".join(tables)
    batches = "; ".join(
        f"{wl}: " + ", ".join(f"{n}={t.batch}×{len(t.per_round)}" for n, t in results[wl].items())
        for wl in workloads
    )
    errors = [f"{wl}/{n}: {t.error}" for wl in workloads for n, t in results[wl].items() if t.error]
    notes = [
        f"Command: `{common.command_line()}`",
        f"Machine: {common.machine_notes()}",
        f"Medians over {rounds} interleaved rounds × {splits} samples per client per round; "
        "ratio in parentheses is to the raw floor in the same run "
        "(time ratio for µs, throughput ratio for MiB/s). "
        + ("Client and nginx pinned to one CPU." if cpu is not None else "Not pinned."),
        f"Batch sizes (requests per sample × samples): {batches}",
    ]
    if skipped:
        notes.append("Not installed: " + ", ".join(skipped))
    if errors:
        notes.append("Errors: " + "; ".join(errors))
    out = table + "\n\n" + "\n\n".join(notes)
    print(out)
    if args.record:
        import fastnet

        label = args.label or ("compiled build" if fastnet.compiled else "pure-Python build")
        common.record_results(f"HTTP clients (bench_http.py), fastnet {label}", out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
