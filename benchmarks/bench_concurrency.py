"""Concurrency benchmark: many requests in flight on a private loopback nginx, fastnet against the peers.

Workloads (each client keeps ``N`` requests in flight until the batch is done):

* C1 - 64 KiB responses, 32 in flight
* C2 - 64 KiB responses, 128 in flight
* C3 - 2-byte responses, 128 in flight

Clients, each configured for ``N`` connections the way its documentation shows:

* ``fastnet map``: ``client.map(urls, max_in_flight=N)``, on a pool that keeps ``N`` idle connections
* ``fastnet map (default pool)``: the same with the default pool (5 idle connections kept)
* ``fastnet dispatcher``: ``Dispatcher(max_requests=N, max_requests_per_host=N)``, the whole batch
  enqueued at once, then every future's result
* ``pycurl CurlMulti``: ``N`` easy handles on one multi handle, each re-added as it completes
* ``pyreqwest``: its sync client (``max_connections(N)``) from ``N`` threads
* ``urllib3``, ``requests``: one pool (``maxsize=N``) shared by ``N`` threads
* ``aiohttp``, ``aiohttp+uvloop``: ``TCPConnector(limit=N)``, ``N`` tasks
* ``httpx``: ``AsyncClient`` with ``Limits(max_connections=N)``, ``N`` tasks

Reported per client and workload: requests per second (wall clock, median over interleaved rounds;
the ratio is to pycurl's CurlMulti in the same run), the client process's CPU time per request
(``getrusage(RUSAGE_SELF)`` over the batch: every thread, those that ended during it too), and how many
connections the client opened in the whole run, counted by nginx (``stub_status`` accepts, read on
one kept-alive socket of the harness, before and after each batch). A client should open no more
connections than it has requests in flight. The client process and nginx are split: this process on
one CPU, nginx's worker on the other (``--no-pin`` leaves both to the scheduler).

Targets (issue 10): ``fastnet map`` at least 1.2x pycurl's CurlMulti and 3x aiohttp on C1.

Usage::

    PYTHONPATH=. python benchmarks/bench_concurrency.py [--quick] [--clients a,b] [--workloads C1,C3]
    PYTHONPATH=. python benchmarks/bench_concurrency.py --record     # add the tables to RESULTS.md
    PYTHONPATH=. python benchmarks/bench_concurrency.py --profile C1  # cProfile fastnet map on C1

It never fails: a client that errors is reported as such in its cells.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import io
import itertools
import os
import resource
import socket
import statistics
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402

__all__ = ["CLIENTS", "WORKLOADS", "main"]

KIB64 = 64 * 1024
#: name -> (path, body size, requests in flight)
WORKLOADS: dict[str, tuple[str, int, int]] = {
    "C1": ("/64k.bin", KIB64, 32),
    "C2": ("/64k.bin", KIB64, 128),
    "C3": ("/2b", 2, 128),
}
WORKLOAD_TITLES = {
    "C1": "C1 64 KiB, 32 in flight",
    "C2": "C2 64 KiB, 128 in flight",
    "C3": "C3 2 bytes, 128 in flight",
}
_TIMEOUT = 10.0
_STATUS = "/fastnet-bench-status"

Runner = Callable[[int], float]
#: A factory takes (url, in flight, expected body size) and returns (run(n) -> seconds, stop()).
Factory = Callable[[str, int, int], tuple[Runner, Callable[[], None]]]


def _check(status: int, body_len: int, expect: int) -> None:
    if status != 200 or body_len != expect:
        raise common.ClientError(f"status {status}, {body_len} body bytes (wanted 200, {expect})")


def _in_threads(width: int, n: int, one: Callable[[], None]) -> float:
    """Run ``one()`` ``n`` times from ``width`` threads (each takes the next request when it is free)."""
    counter = itertools.count()
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            while next(counter) < n:
                one()
        except BaseException as exc:  # noqa: BLE001 - reported by the caller
            errors.append(exc)

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(min(width, n))]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join(600)
    elapsed = time.perf_counter() - t0
    if errors:
        raise errors[0]
    return elapsed


# --------------------------------------------------------------------------- clients


def _fastnet_map(default_pool: bool) -> Factory:
    def factory(url: str, width: int, expect: int) -> Any:
        import fastnet

        if default_pool:
            client = fastnet.Client()
        else:
            client = fastnet.Client(connection_pool=fastnet.ConnectionPool(max_idle_connections=width))

        def run(n: int) -> float:
            t0 = time.perf_counter()
            for _url, r in client.map(itertools.repeat(url, n), max_in_flight=width):
                if isinstance(r, Exception):
                    raise r
                _check(r.status_code, len(r.content), expect)
            return time.perf_counter() - t0

        return run, client.close

    return factory


def _fastnet_dispatcher(url: str, width: int, expect: int) -> Any:
    import fastnet

    dispatcher = fastnet.Dispatcher(max_requests=width, max_requests_per_host=width)
    client = fastnet.Client(
        dispatcher=dispatcher, connection_pool=fastnet.ConnectionPool(max_idle_connections=width)
    )
    request = fastnet.Request("GET", url)

    def run(n: int) -> float:
        new_call = client.new_call
        t0 = time.perf_counter()
        futures = collections.deque(new_call(request).enqueue() for _ in range(n))
        while futures:  # each result taken and let go, as a crawler would (not n bodies held at once)
            r = futures.popleft().result(600)
            _check(r.status_code, len(r.content), expect)
        return time.perf_counter() - t0

    def stop() -> None:
        dispatcher.shutdown()
        client.close()

    return run, stop


def _pycurl_multi(url: str, width: int, expect: int) -> Any:
    import pycurl  # type: ignore[import-untyped]

    multi = pycurl.CurlMulti()
    handles = []
    buffers: dict[Any, io.BytesIO] = {}
    for _ in range(width):
        c = pycurl.Curl()
        c.setopt(pycurl.URL, url)
        c.setopt(pycurl.TIMEOUT, int(_TIMEOUT))
        c.setopt(pycurl.PROXY, "")
        handles.append(c)

    def run(n: int) -> float:
        free = list(handles)
        left = n

        def start(c: Any) -> None:
            out = buffers[c] = io.BytesIO()
            c.setopt(pycurl.WRITEDATA, out)
            multi.add_handle(c)

        t0 = time.perf_counter()
        while free and left:
            start(free.pop())
            left -= 1
        while True:
            while True:
                ret, _running = multi.perform()
                if ret != pycurl.E_CALL_MULTI_PERFORM:
                    break
            while True:
                queued, ok, failed = multi.info_read()
                for c in ok:
                    _check(c.getinfo(pycurl.RESPONSE_CODE), len(buffers[c].getvalue()), expect)
                    multi.remove_handle(c)
                    free.append(c)
                if failed:
                    raise common.ClientError(f"curl: {failed[0][2]}")
                if not queued:
                    break
            while free and left:
                start(free.pop())
                left -= 1
            if not left and len(free) == width:
                break
            multi.select(1.0)
        return time.perf_counter() - t0

    def stop() -> None:
        for c in handles:
            c.close()
        multi.close()

    return run, stop


def _pyreqwest(url: str, width: int, expect: int) -> Any:
    from pyreqwest.client import SyncClientBuilder

    client = SyncClientBuilder().max_connections(width).pool_max_idle_per_host(width).build()

    def one() -> None:
        r = client.get(url).build().send()
        _check(r.status, len(r.bytes()), expect)

    return (lambda n: _in_threads(width, n, one)), client.close


def _urllib3(url: str, width: int, expect: int) -> Any:
    import urllib3

    pool = urllib3.PoolManager(maxsize=width, block=True, timeout=_TIMEOUT, retries=False)

    def one() -> None:
        r = pool.request("GET", url)
        _check(r.status, len(r.data), expect)

    return (lambda n: _in_threads(width, n, one)), pool.clear


def _requests(url: str, width: int, expect: int) -> Any:
    import requests
    from requests.adapters import HTTPAdapter

    session = requests.Session()
    session.mount("http://", HTTPAdapter(pool_connections=1, pool_maxsize=width, pool_block=True))

    def one() -> None:
        r = session.get(url, timeout=_TIMEOUT)
        _check(r.status_code, len(r.content), expect)

    return (lambda n: _in_threads(width, n, one)), session.close


def _aiohttp_factory(use_uvloop: bool) -> Factory:
    def factory(url: str, width: int, expect: int) -> Any:
        import aiohttp

        if use_uvloop:
            import uvloop

            loop: asyncio.AbstractEventLoop = uvloop.new_event_loop()
        else:
            loop = asyncio.new_event_loop()

        async def make() -> aiohttp.ClientSession:
            return aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=width, limit_per_host=width),
                timeout=aiohttp.ClientTimeout(total=_TIMEOUT),
            )

        session = loop.run_until_complete(make())

        async def batch(n: int) -> float:
            counter = itertools.count()

            async def worker() -> None:
                while next(counter) < n:
                    async with session.get(url) as r:
                        body = await r.read()
                    _check(r.status, len(body), expect)

            t0 = time.perf_counter()
            await asyncio.gather(*(worker() for _ in range(min(width, n))))
            return time.perf_counter() - t0

        def run(n: int) -> float:
            return loop.run_until_complete(asyncio.wait_for(batch(n), 600))

        def stop() -> None:
            loop.run_until_complete(session.close())
            loop.run_until_complete(asyncio.sleep(0.01))
            loop.close()

        return run, stop

    return factory


def _httpx(url: str, width: int, expect: int) -> Any:
    import httpx

    loop = asyncio.new_event_loop()

    async def make() -> httpx.AsyncClient:
        limits = httpx.Limits(max_connections=width, max_keepalive_connections=width)
        return httpx.AsyncClient(limits=limits, timeout=_TIMEOUT, trust_env=False)

    client = loop.run_until_complete(make())

    async def batch(n: int) -> float:
        counter = itertools.count()

        async def worker() -> None:
            while next(counter) < n:
                r = await client.get(url)
                _check(r.status_code, len(r.content), expect)

        t0 = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(min(width, n))))
        return time.perf_counter() - t0

    def run(n: int) -> float:
        return loop.run_until_complete(asyncio.wait_for(batch(n), 600))

    def stop() -> None:
        loop.run_until_complete(client.aclose())
        loop.close()

    return run, stop


def _have(module: str) -> bool:
    try:
        __import__(module)
        return True
    except Exception:  # noqa: BLE001
        return False


CLIENTS: dict[str, tuple[Factory, Callable[[], bool]]] = {
    "fastnet map": (_fastnet_map(False), lambda: _have("fastnet")),
    "fastnet map (default pool)": (_fastnet_map(True), lambda: _have("fastnet")),
    "fastnet dispatcher": (_fastnet_dispatcher, lambda: _have("fastnet")),
    "pycurl CurlMulti": (_pycurl_multi, lambda: _have("pycurl")),
    "pyreqwest": (_pyreqwest, lambda: _have("pyreqwest")),
    "aiohttp+uvloop": (_aiohttp_factory(True), lambda: _have("aiohttp") and _have("uvloop")),
    "aiohttp": (_aiohttp_factory(False), lambda: _have("aiohttp")),
    "httpx": (_httpx, lambda: _have("httpx")),
    "urllib3": (_urllib3, lambda: _have("urllib3")),
    "requests": (_requests, lambda: _have("requests")),
}
BASELINE = "pycurl CurlMulti"


# --------------------------------------------------------------------------- measuring


def process_cpu() -> float:
    """CPU seconds this process has used, every thread (ended ones too), user and system."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class Accepts:
    """nginx's count of accepted connections, read from ``stub_status`` on one kept-alive socket."""

    def __init__(self, host: str, port: int) -> None:
        self.sock = socket.create_connection((host, port), timeout=_TIMEOUT)
        self.request = f"GET {_STATUS} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode()

    def __call__(self) -> int:
        self.sock.sendall(self.request)
        data = b""
        while b"\r\n\r\n" not in data:
            data += self._recv()
        head, body = data.split(b"\r\n\r\n", 1)
        length = next(
            int(line.split(b":", 1)[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        )
        while len(body) < length:
            body += self._recv()
        lines = body.decode().splitlines()
        i = next(n for n, line in enumerate(lines) if line.startswith("server accepts"))
        return int(lines[i + 1].split()[0])

    def _recv(self) -> bytes:
        chunk = self.sock.recv(4096)
        if not chunk:
            raise RuntimeError("the stub_status connection closed")
        return chunk

    def close(self) -> None:
        self.sock.close()


class Measured:
    """A runner wrapped to record, per call, the client's CPU time per request and nginx's accepts."""

    def __init__(self, run: Runner, accepts: Accepts, server_pids: list[int]) -> None:
        self.run = run
        self.accepts = accepts
        self.server_pids = server_pids
        self.cpu: list[float] = []  # seconds per request, one per call (calibration calls first)
        self.server_busy: list[float] = []  # nginx's CPU time over the wall time, one per call
        self.opened = 0  # connections nginx accepted during this client's calls

    def __call__(self, n: int) -> float:
        a0 = self.accepts()
        s0 = common.cpu_ns(self.server_pids)
        c0 = process_cpu()
        elapsed = self.run(n)
        self.cpu.append((process_cpu() - c0) / n)
        self.server_busy.append((common.cpu_ns(self.server_pids) - s0) / 1e9 / elapsed)
        self.opened += self.accepts() - a0
        return elapsed


# --------------------------------------------------------------------------- main


def _profile(workload: str) -> int:
    """cProfile one fastnet map batch (every thread) on ``workload``, then the top functions."""
    import cProfile
    import pstats

    path, size, width = WORKLOADS[workload]
    common.clean_proxy_env()
    with _nginx() as nginx:
        run, stop = _fastnet_map(False)(nginx.url(path), width, size)
        try:
            run(2000)  # warm up: connections, caches
            plain = 5000 / run(5000)
            profiles: list[cProfile.Profile] = []
            lock = threading.Lock()

            def profiled(frame: Any, event: str, arg: Any) -> None:
                prof = cProfile.Profile()
                with lock:
                    profiles.append(prof)
                prof.enable()  # this thread, from its first call on

            threading.setprofile(profiled)
            main_prof = cProfile.Profile()
            main_prof.enable()
            try:
                run(5000)
            finally:
                main_prof.disable()
                threading.setprofile(None)
            for prof in profiles:
                prof.disable()
        finally:
            stop()
    print(f"\n=== {workload} fastnet map: {plain:.0f} requests/s without the profiler; 5000 profiled")
    stats = pstats.Stats(main_prof, stream=sys.stdout)
    for prof in profiles:
        stats.add(prof)
    stats.strip_dirs().sort_stats("tottime").print_stats(25)
    return 0


def _nginx() -> common.Nginx:
    return common.Nginx(
        files={"64k.bin": os.urandom(KIB64)},
        locations=f"        location = {_STATUS} {{ stub_status; }}",
    )


def _rps_cell(t: common.Timing, base: common.Timing | None) -> str:
    if t.error is not None and not t.per_round:
        return f"error ({t.error[:60]})"
    if t.median is None:
        return "–"
    rps = 1.0 / t.median
    text = f"{rps:,.0f}"
    if base is not None and base.median:
        text += f" ({base.median / t.median:.2f}×)"
    return text


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="3 short rounds")
    p.add_argument("--rounds", type=int, default=None, help="rounds (default 7; --quick 3)")
    p.add_argument("--target", type=float, default=None, help="seconds per sample (default 1.0; quick 0.3)")
    p.add_argument("--clients", default="", help="comma-separated subset of: " + ", ".join(CLIENTS))
    p.add_argument("--workloads", default="", help="comma-separated subset of: " + ",".join(WORKLOADS))
    p.add_argument("--no-pin", action="store_true", help="leave this process and nginx to the scheduler")
    p.add_argument("--record", action="store_true", help="add the tables to benchmarks/RESULTS.md")
    p.add_argument("--label", default="", help="label for the recorded section")
    p.add_argument("--deadline", type=float, default=1500.0, help="stop starting rounds after this many s")
    p.add_argument("--profile", default="", metavar="WORKLOAD", help="cProfile fastnet map on one workload")
    p.add_argument("-v", "--verbose", action="store_true")
    args = p.parse_args(argv)
    if args.profile:
        return _profile(args.profile)

    rounds = args.rounds or (3 if args.quick else 7)
    target = args.target or (0.3 if args.quick else 1.0)
    wanted = [c for c in (args.clients.split(",") if args.clients else CLIENTS) if c]
    unknown = [c for c in wanted if c not in CLIENTS]
    if unknown:
        p.error(f"unknown clients {unknown}")
    workloads = [w for w in (args.workloads.split(",") if args.workloads else WORKLOADS) if w]
    if any(w not in WORKLOADS for w in workloads):
        p.error(f"unknown workloads {workloads}")

    common.clean_proxy_env()
    log = (lambda s: print("  " + s, file=sys.stderr, flush=True)) if args.verbose else None
    clients: dict[str, Factory] = {}
    skipped = []
    for name in wanted:
        factory, available = CLIENTS[name]
        if available():
            clients[name] = factory
        else:
            skipped.append(name)

    results: dict[str, dict[str, common.Timing]] = {}
    measured: dict[str, dict[str, Measured]] = {}
    load_at_start = os.getloadavg()
    with _nginx() as nginx:
        placement = "not pinned"
        if not args.no_pin:
            cpus = sorted(os.sched_getaffinity(0))
            if len(cpus) >= 2:
                common.pin_pids(nginx.pids(), cpus[-1])
                common.pin_self(cpus[0])
                placement = f"this process on CPU {cpus[0]}, nginx on CPU {cpus[-1]}"
        print(f"nginx on 127.0.0.1:{nginx.port}; {placement}", file=sys.stderr)
        accepts = Accepts(nginx.host, nginx.port)
        try:
            for wl in workloads:
                path, size, width = WORKLOADS[wl]
                url = nginx.url(path)
                runners: dict[str, Runner] = {}
                stops: list[Callable[[], None]] = []
                results[wl] = {}
                measured[wl] = {}
                for name, factory in clients.items():
                    try:
                        run, stop = factory(url, width, size)
                    except Exception as exc:  # noqa: BLE001
                        results[wl][name] = common.Timing(name, error=f"{type(exc).__name__}: {exc}")
                        continue
                    measured[wl][name] = Measured(run, accepts, nginx.pids())
                    runners[name] = measured[wl][name]
                    stops.append(stop)
                print(f"{wl}: {', '.join(runners)}; {rounds} rounds", file=sys.stderr, flush=True)
                try:
                    results[wl].update(
                        common.run_rounds(
                            runners,
                            rounds,
                            target,
                            min_n=10 * width,
                            max_n=200_000,
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
        finally:
            accepts.close()

    out = report(results, measured, workloads, clients, rounds, target, placement, load_at_start, skipped)
    print(out)
    if args.record:
        import fastnet

        label = args.label or ("compiled build" if fastnet.compiled else "pure-Python build")
        common.record_results(f"Concurrency (bench_concurrency.py), fastnet {label}", out)
    return 0


def report(
    results: dict[str, dict[str, common.Timing]],
    measured: dict[str, dict[str, Measured]],
    workloads: list[str],
    clients: dict[str, Factory],
    rounds: int,
    target: float,
    placement: str,
    load_at_start: tuple[float, float, float],
    skipped: list[str],
) -> str:
    header = ["client", *(WORKLOAD_TITLES[w] for w in workloads)]
    rps_rows, cpu_rows, conn_rows = [], [], []
    for name in clients:
        rps_row, cpu_row, conn_row = [name], [name], [name]
        for wl in workloads:
            t = results[wl].get(name)
            m = measured[wl].get(name)
            rps_row.append(_rps_cell(t, results[wl].get(BASELINE)) if t else "–")
            rounds_of = len(t.per_round) if t is not None else 0
            samples = m.cpu[-rounds_of:] if m is not None and rounds_of else []
            busy = m.server_busy[-rounds_of:] if m is not None and rounds_of else []
            cpu_row.append(
                f"{statistics.median(samples) * 1e6:.1f} (nginx {statistics.median(busy):.0%} busy)"
                if samples
                else "–"
            )
            width = WORKLOADS[wl][2]
            if m is None or t is None or (t.error is not None and not t.per_round):
                conn_row.append("–")
            else:
                conn_row.append(f"{m.opened} {'✓' if m.opened <= width else '✗ more than ' + str(width)}")
        rps_rows.append(rps_row)
        cpu_rows.append(cpu_row)
        conn_rows.append(conn_row)
    tables = [
        f"**Requests per second** (median; ratio to {BASELINE} in the same run)\n\n"
        + common.markdown_table(header, rps_rows),
        "**Client CPU time per request, µs** (this process, every thread; median), and how busy nginx's "
        "worker was meanwhile (its CPU time over the wall time: near 100% the server is the limit)\n\n"
        + common.markdown_table(header, cpu_rows),
        "**Connections opened in the whole run** (nginx's accepts; ✓ when no more than in flight)\n\n"
        + common.markdown_table(header, conn_rows),
    ]
    targets = []
    c1 = results.get("C1", {})
    mapped = c1.get("fastnet map")
    if mapped is not None and mapped.median:
        for peer, goal in ((BASELINE, 1.2), ("aiohttp", 3.0)):
            other = c1.get(peer)
            if other is not None and other.median:
                ratio = other.median / mapped.median
                verdict = "met" if ratio >= goal else "NOT met"
                targets.append(f"fastnet map / {peer} on C1: {ratio:.2f}× (target {goal}×: {verdict})")
    batches = "; ".join(
        f"{wl}: " + ", ".join(f"{n}={t.batch}×{len(t.per_round)}" for n, t in results[wl].items())
        for wl in workloads
    )
    errors = [f"{wl}/{n}: {t.error}" for wl in workloads for n, t in results[wl].items() if t.error]
    notes = [
        f"Command: `{common.command_line()}`",
        f"Machine: {common.machine_notes({'pyreqwest': common._pkg_version('pyreqwest')})}".replace(
            "load average at start", "load average at start (nginx up)"
        ),
        "Load average before nginx started: {:.2f} {:.2f} {:.2f}".format(*load_at_start),
        f"Medians over {rounds} interleaved rounds, one sample of about {target} s per client per round; "
        f"{placement}.",
        f"Batch sizes (requests per sample × samples): {batches}",
    ]
    if targets:
        notes.insert(0, "Targets: " + "; ".join(targets))
    if skipped:
        notes.append("Not installed: " + ", ".join(skipped))
    if errors:
        notes.append("Errors: " + "; ".join(errors))
    return "\n\n".join(tables) + "\n\n" + "\n\n".join(notes)


if __name__ == "__main__":
    sys.exit(main())
