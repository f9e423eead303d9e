"""fastnet as the engine of requests, httpx, Locust and Scrapy, each against the framework's stock engine.

Pairs, one run, interleaved within every round (rotating who goes first), medians over rounds:

* ``requests``: a ``requests.Session`` with ``FastnetAdapter`` mounted, against a stock Session; sequential
  keep-alive GETs of a 2-byte body (``/2b``); µs per request (wall) and CPU µs per request (this process
  plus nginx, from schedstat, which other jobs on the machine barely move). In the same rounds,
  ``fastnet.contrib.requests.Session`` (the adapter, and the proxy environment read once per host instead
  of on every request: requests' own scan of the environment is a large part of its per-request cost).
* ``httpx``: ``httpx.Client(transport=FastnetTransport())`` against ``httpx.Client()``, the same workload.
* ``httpx-async``: ``httpx.AsyncClient(transport=AsyncFastnetTransport())`` against ``httpx.AsyncClient()``,
  sequential awaits on one event loop (the default loop).
* ``locust``: a locustfile whose user is ``FastnetUser`` against the same with ``FastHttpUser``, one Locust
  process, 64 users, no wait time, ``/2b``; requests/s from Locust's own statistics, and the process's CPU
  time per request.
* ``scrapy``: a spider fetching 2,000 pages (about 2 KiB of HTML each) with
  ``fastnet.contrib.scrapy.FastnetDownloadHandler`` against Scrapy's default HTTP/1.1 handler, both on the
  asyncio reactor, 64 requests in flight; pages/s from Scrapy's stats (first response to last).

The in-process pairs (requests, httpx) run on the CPU nginx is pinned to (waking a process on the other
CPU costs tens of µs); Locust and Scrapy run as child processes pinned to the other CPU, nginx keeping
its own. nginx is private (one worker, no access log), started by this script on a free loopback port.
Targets (the issue's): requests 1.6×, httpx 1.5×, FastnetUser 2× FastHttpUser, Scrapy 1.3×.

Usage::

    PYTHONPATH=. python benchmarks/bench_contrib.py [--quick] [--record] [--pairs requests,httpx,locust]

It never fails: a pair whose framework is missing or errors is reported as such in its cell.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402

__all__ = ["PAIRS", "TARGETS", "main"]

SERVER_CPU = 1
CHILD_CPU = 0
LOCUST_USERS = 64
SCRAPY_PAGES = 2000
SCRAPY_CONCURRENCY = 64

#: pair -> (fastnet's name, the stock engine's name, target ratio, unit)
PAIRS: dict[str, tuple[str, str, float, str]] = {
    "requests": ("requests + FastnetAdapter", "requests (urllib3)", 1.6, "µs/request"),
    "httpx": ("httpx + FastnetTransport", "httpx (httpcore)", 1.5, "µs/request"),
    "httpx-async": ("httpx + AsyncFastnetTransport", "httpx async (httpcore)", 1.5, "µs/request"),
    "locust": ("FastnetUser", "FastHttpUser", 2.0, "requests/s"),
    "scrapy": ("FastnetDownloadHandler", "HTTP11DownloadHandler", 1.3, "pages/s"),
}
TARGETS = {name: spec[2] for name, spec in PAIRS.items()}
#: More engines measured in a pair's rounds, each against the same stock figure: pair -> [(name, engine)]
VARIANTS: dict[str, list[tuple[str, str]]] = {
    "requests": [("fastnet.contrib.requests.Session", "session")],
}


def _check(status: int, body: bytes) -> None:
    if status != 200 or body != b"ok":
        raise common.ClientError(f"status {status}, body {body[:20]!r}")


# --------------------------------------------------------------------------- in-process pairs


def _requests_runner(url: str, fastnet_engine: Any) -> tuple[Callable[[int], float], Callable[[], None]]:
    import requests

    if fastnet_engine == "session":
        from fastnet.contrib.requests import Session

        session: Any = Session()
    else:
        session = requests.Session()
    if fastnet_engine is True:
        from fastnet.contrib.requests import FastnetAdapter

        adapter = FastnetAdapter()
        session.mount("http://", adapter)
        session.mount("https://", adapter)

    def run(n: int) -> float:
        get = session.get
        t0 = time.perf_counter()
        for _ in range(n):
            r = get(url)
        elapsed = time.perf_counter() - t0
        _check(r.status_code, r.content)
        return elapsed

    return run, session.close


def _httpx_runner(url: str, fastnet_engine: bool) -> tuple[Callable[[int], float], Callable[[], None]]:
    import httpx

    if fastnet_engine:
        from fastnet.contrib.httpx import FastnetTransport

        client = httpx.Client(transport=FastnetTransport())
    else:
        client = httpx.Client()

    def run(n: int) -> float:
        get = client.get
        t0 = time.perf_counter()
        for _ in range(n):
            r = get(url)
        elapsed = time.perf_counter() - t0
        _check(r.status_code, r.content)
        return elapsed

    return run, client.close


def _httpx_async_runner(url: str, fastnet_engine: bool) -> tuple[Callable[[int], float], Callable[[], None]]:
    import httpx

    loop = asyncio.new_event_loop()
    if fastnet_engine:
        from fastnet.contrib.httpx import AsyncFastnetTransport

        client = httpx.AsyncClient(transport=AsyncFastnetTransport())
    else:
        client = httpx.AsyncClient()

    async def batch(n: int) -> float:
        get = client.get
        t0 = time.perf_counter()
        for _ in range(n):
            r = await get(url)
        elapsed = time.perf_counter() - t0
        _check(r.status_code, r.content)
        return elapsed

    def run(n: int) -> float:
        return loop.run_until_complete(asyncio.wait_for(batch(n), 120))

    def close() -> None:
        loop.run_until_complete(client.aclose())
        loop.close()

    return run, close


_IN_PROCESS = {"requests": _requests_runner, "httpx": _httpx_runner, "httpx-async": _httpx_async_runner}


def _in_process(pair: str, url: str, rounds: int, target_s: float, server_pids: list[int]) -> dict[str, Any]:
    fastnet_name, stock_name = PAIRS[pair][0], PAIRS[pair][1]
    runners: dict[str, Callable[[int], float]] = {}
    closers = []
    errors: dict[str, str] = {}
    engines: list[tuple[str, Any]] = [(fastnet_name, True), (stock_name, False), *VARIANTS.get(pair, [])]
    for name, engine in engines:
        try:
            run, close = _IN_PROCESS[pair](url, engine)
        except Exception as exc:  # noqa: BLE001 - report and go on
            errors[name] = f"{type(exc).__name__}: {exc}"
            continue
        runners[name] = run
        closers.append(close)
    try:
        timings = common.run_rounds(
            runners, rounds, target_s, splits=3, cpu_pids=[0, *server_pids], max_n=20_000, deadline_s=300
        )
    finally:
        for close in closers:
            try:
                close()
            except Exception:  # noqa: BLE001
                pass
    out: dict[str, Any] = {}
    for name, _engine in engines:
        t = timings.get(name)
        if t is None or t.error or t.median is None:
            out[name] = {"error": errors.get(name) or (t.error if t else "not run")}
        else:
            out[name] = {"wall": t.median, "cpu": t.cpu_median, "samples": len(t.per_round), "batch": t.batch}
    return out


# --------------------------------------------------------------------------- Locust


_LOCUSTFILE = """
from locust import constant, task
from {module} import {user}


class Load({user}):
    wait_time = constant(0)

    @task
    def get(self):
        self.client.get("/2b")
"""


def _taskset(cmd: list[str]) -> list[str]:
    return ["taskset", "-c", str(CHILD_CPU), *cmd]


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    root = str(common.REPO_ROOT)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def _locust_once(host: str, fastnet_engine: bool, seconds: float, tmp: str) -> dict[str, Any]:
    module, user = ("fastnet.contrib.locust", "FastnetUser") if fastnet_engine else ("locust", "FastHttpUser")
    locustfile = Path(tmp) / f"locustfile_{user}.py"
    locustfile.write_text(_LOCUSTFILE.format(module=module, user=user))
    prefix = str(Path(tmp) / f"run_{user}")
    cmd = [sys.executable, "-m", "locust", "-f", str(locustfile), "--headless", "-u", str(LOCUST_USERS)]
    cmd += ["-r", "1000", "-t", f"{seconds:g}s", "-H", host, "--csv", prefix, "--only-summary"]
    cmd += ["--loglevel", "ERROR", "--exit-code-on-error", "0"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(
        _taskset(cmd), capture_output=True, text=True, timeout=seconds + 60, cwd=tmp, env=_child_env()
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise common.ClientError(f"locust exit {proc.returncode}: {proc.stderr[-300:]}")
    with open(prefix + "_stats.csv", newline="") as f:
        row = {r["Name"]: r for r in csv.DictReader(f)}["Aggregated"]
    count = int(row["Request Count"])
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    if int(row["Failure Count"]):
        raise common.ClientError(f"{row['Failure Count']} failures")
    return {"rate": float(row["Requests/s"]), "cpu": cpu / count if count else None}


# --------------------------------------------------------------------------- Scrapy


_SPIDER = """
import scrapy


class Pages(scrapy.Spider):
    name = "pages"

    def __init__(self, base, pages, **kwargs):
        super().__init__(**kwargs)
        self.base = base
        self.pages = int(pages)

    async def start(self):
        for i in range(self.pages):
            yield scrapy.Request(f"{self.base}/p/{i}.html", dont_filter=True)

    def parse(self, response):
        yield {"n": len(response.body)}
"""


def _write_pages(www: Path) -> None:
    pages = www / "p"
    pages.mkdir(exist_ok=True)
    filler = "<p>" + "lorem ipsum dolor sit amet " * 70 + "</p>"
    for i in range(SCRAPY_PAGES):
        (pages / f"{i}.html").write_text(f"<html><head><title>{i}</title></head><body>{filler}</body></html>")
    for path in (pages, *pages.iterdir()):
        os.chmod(path, 0o755 if path.is_dir() else 0o644)


def _scrapy_once(host: str, fastnet_engine: bool, tmp: str) -> dict[str, Any]:
    spider = Path(tmp) / "pages_spider.py"
    spider.write_text(_SPIDER)
    stats_file = Path(tmp) / f"stats_{int(fastnet_engine)}.json"
    settings = {
        "LOG_LEVEL": "ERROR",
        "TELNETCONSOLE_ENABLED": "False",
        "CONCURRENT_REQUESTS": str(SCRAPY_CONCURRENCY),
        "CONCURRENT_REQUESTS_PER_DOMAIN": str(SCRAPY_CONCURRENCY),
        "ROBOTSTXT_OBEY": "False",
        "TWISTED_REACTOR": "twisted.internet.asyncioreactor.AsyncioSelectorReactor",
    }
    if fastnet_engine:
        handler = "fastnet.contrib.scrapy.FastnetDownloadHandler"
        settings["DOWNLOAD_HANDLERS"] = json.dumps({"http": handler, "https": handler})
    script = (
        "import json, sys\n"
        "from scrapy.crawler import CrawlerProcess\n"
        "sys.path.insert(0, sys.argv[1])\n"
        "from pages_spider import Pages\n"
        "settings = json.loads(sys.argv[2])\n"
        "if 'DOWNLOAD_HANDLERS' in settings:\n"
        "    settings['DOWNLOAD_HANDLERS'] = json.loads(settings['DOWNLOAD_HANDLERS'])\n"
        "process = CrawlerProcess(settings)\n"
        "crawler = process.create_crawler(Pages)\n"
        "process.crawl(crawler, base=sys.argv[3], pages=sys.argv[4])\n"
        "process.start()\n"
        "s = crawler.stats.get_stats()\n"
        "open(sys.argv[5], 'w').write(json.dumps({k: str(v) for k, v in s.items()}))\n"
    )
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    proc = subprocess.run(
        _taskset(
            [
                sys.executable,
                "-c",
                script,
                tmp,
                json.dumps(settings),
                host,
                str(SCRAPY_PAGES),
                str(stats_file),
            ]
        ),
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp,
        env=_child_env(),
    )
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise common.ClientError(f"scrapy exit {proc.returncode}: {proc.stderr[-400:]}")
    stats = json.loads(stats_file.read_text())
    pages = int(stats.get("response_received_count", 0))
    if pages != SCRAPY_PAGES:
        raise common.ClientError(f"{pages} of {SCRAPY_PAGES} pages ({proc.stderr[-300:]})")
    elapsed = float(stats.get("elapsed_time_seconds", wall))
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return {"rate": pages / elapsed, "cpu": cpu / pages}


# --------------------------------------------------------------------------- the child-process pairs


def _children(pair: str, host: str, rounds: int, seconds: float, tmp: str) -> dict[str, Any]:
    fastnet_name, stock_name = PAIRS[pair][0], PAIRS[pair][1]
    samples: dict[str, list[dict[str, Any]]] = {fastnet_name: [], stock_name: []}
    errors: dict[str, str] = {}
    engines = [(fastnet_name, True), (stock_name, False)]
    for r in range(rounds):
        for name, engine in engines[r % 2 :] + engines[: r % 2]:
            if name in errors:
                continue
            try:
                if pair == "locust":
                    sample = _locust_once(host, engine, seconds, tmp)
                else:
                    sample = _scrapy_once(host, engine, tmp)
            except Exception as exc:  # noqa: BLE001
                errors[name] = f"{type(exc).__name__}: {str(exc)[:200]}"
                continue
            samples[name].append(sample)
            print(f"  {pair} round {r + 1} {name}: {sample['rate']:,.0f}/s", file=sys.stderr)
    out: dict[str, Any] = {}
    for name, got in samples.items():
        if name in errors or not got:
            out[name] = {"error": errors.get(name, "no sample")}
            continue
        cpus = [s["cpu"] for s in got if s["cpu"] is not None]
        out[name] = {
            "rate": statistics.median(s["rate"] for s in got),
            "cpu": statistics.median(cpus) if cpus else None,
            "samples": len(got),
            "all": [round(s["rate"]) for s in got],
        }
    return out


# --------------------------------------------------------------------------- report


def _us(x: float | None) -> str:
    return "-" if x is None else f"{x * 1e6:.1f}"


def _table(results: dict[str, dict[str, Any]]) -> str:
    header = ["pair", "fastnet's engine", "stock engine", "ratio (wall)", "ratio (CPU/request)", "target"]
    rows = []
    for pair, got in results.items():
        fastnet_name, stock_name, target, unit = PAIRS[pair]
        f, s = got.get(fastnet_name, {}), got.get(stock_name, {})
        if "error" in f or "error" in s or not f or not s:
            rows.append([pair, f.get("error", "-"), s.get("error", "-"), "-", "-", f"{target}×"])
            continue
        if unit == "µs/request":
            ratio = s["wall"] / f["wall"]
            cpu_ratio = s["cpu"] / f["cpu"] if f.get("cpu") and s.get("cpu") else None
            cells = [
                f"{fastnet_name}: {_us(f['wall'])} µs ({_us(f['cpu'])} µs CPU)",
                f"{stock_name}: {_us(s['wall'])} µs ({_us(s['cpu'])} µs CPU)",
            ]
        else:
            ratio = f["rate"] / s["rate"]
            cpu_ratio = s["cpu"] / f["cpu"] if f.get("cpu") and s.get("cpu") else None
            cells = [
                f"{fastnet_name}: {f['rate']:,.0f} {unit} ({_us(f['cpu'])} µs CPU/request)",
                f"{stock_name}: {s['rate']:,.0f} {unit} ({_us(s['cpu'])} µs CPU/request)",
            ]
        met = "met" if ratio >= target else "missed"
        rows.append(
            [
                pair,
                *cells,
                f"**{ratio:.2f}×**",
                "-" if cpu_ratio is None else f"{cpu_ratio:.2f}×",
                f"{target}× ({met})",
            ]
        )
        for variant, _engine in VARIANTS.get(pair, []):
            v = got.get(variant, {})
            if "error" in v or not v:
                rows.append(
                    [f"{pair} ({variant})", v.get("error", "-"), "(the same)", "-", "-", f"{target}×"]
                )
                continue
            ratio = s["wall"] / v["wall"]
            cpu_ratio = s["cpu"] / v["cpu"] if v.get("cpu") and s.get("cpu") else None
            met = "met" if ratio >= target else "missed"
            rows.append(
                [
                    f"{pair} ({variant})",
                    f"{variant}: {_us(v['wall'])} µs ({_us(v['cpu'])} µs CPU)",
                    "(the same)",
                    f"**{ratio:.2f}×**",
                    "-" if cpu_ratio is None else f"{cpu_ratio:.2f}×",
                    f"{target}× ({met})",
                ]
            )
    return common.markdown_table(header, rows)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="fewer and shorter rounds")
    p.add_argument("--rounds", type=int, default=None, help="rounds (default 5; --quick 2)")
    p.add_argument("--pairs", default="", help="comma-separated subset of: " + ",".join(PAIRS))
    p.add_argument("--record", action="store_true", help="add the table to benchmarks/RESULTS.md")
    args = p.parse_args(argv)
    rounds = args.rounds or (2 if args.quick else 5)
    seconds = 3.0 if args.quick else 5.0
    target_s = 0.3 if args.quick else 0.6
    pairs = [x for x in (args.pairs.split(",") if args.pairs else PAIRS) if x]
    if any(x not in PAIRS for x in pairs):
        p.error(f"unknown pairs: {pairs}")
    if len(os.sched_getaffinity(0)) < 2:
        p.error("needs two CPUs (one for nginx and the in-process clients, one for Locust and Scrapy)")
    common.clean_proxy_env()
    started = time.monotonic()
    versions = {
        name: common._pkg_version(name) for name in ("locust", "scrapy", "twisted", "geventhttpclient")
    }
    machine = common.machine_notes(versions)
    results: dict[str, dict[str, Any]] = {}
    with common.Nginx() as nginx, tempfile.TemporaryDirectory(prefix="fastnet-bench-contrib-") as tmp:
        if "scrapy" in pairs:
            _write_pages(nginx.dir / "www")
        server_pids = nginx.pids()
        common.pin_pids(server_pids, SERVER_CPU)
        common.pin_self(SERVER_CPU)
        url = nginx.url("/2b")
        host = nginx.url("").rstrip("/")
        for pair in pairs:
            print(f"{pair} ...", file=sys.stderr)
            if pair in _IN_PROCESS:
                results[pair] = _in_process(pair, url, rounds, target_s, server_pids)
            else:
                results[pair] = _children(
                    pair, host, max(2, rounds - 2) if pair == "scrapy" else rounds, seconds, tmp
                )
    out = _table(results)
    end_load = "{:.2f} {:.2f} {:.2f}".format(*os.getloadavg())
    notes = [
        f"Command: `{common.command_line()}`",
        f"Machine: {machine}; load average at the end {end_load}",
        " ".join(
            [
                f"Medians over {rounds} interleaved rounds (Scrapy: {max(2, rounds - 2)}).",
                f"requests and httpx in this process on CPU {SERVER_CPU} with nginx (one worker, no access",
                "log), sequential keep-alive GETs of /2b;",
                f"Locust ({LOCUST_USERS} users, one process, {seconds:g} s per run) and Scrapy",
                f"({SCRAPY_PAGES} pages of 2 KiB, {SCRAPY_CONCURRENCY} in flight, asyncio reactor) as child",
                f"processes on CPU {CHILD_CPU}. Ratios: the stock engine's time over fastnet's, or fastnet's",
                "rate over the stock engine's; CPU ratios the same for CPU time per request (client and",
                "nginx for the in-process pairs, the child process alone for Locust and Scrapy).",
                f"Took {time.monotonic() - started:.0f} s.",
            ]
        ),
    ]
    out += "\n\n" + "\n\n".join(notes)
    print(out)
    if args.record:
        common.record_results("Framework integrations (bench_contrib.py)", out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
