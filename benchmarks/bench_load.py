"""Load generators side by side: ``fastnet load`` against wrk, hey and Locust FastHttpUser, on private nginx.

Workloads, both over 64 keep-alive connections: ``tiny`` (a 2-byte body, ``/2b``) and ``64k`` (a 64 KiB
static file). Every tool runs as its own process pinned to CPU 0 (the generator's CPU; Go's runtime and
Locust's gevent loop then use that one CPU too); nginx (one worker, no access log) and this script are
pinned to CPU 1. Tools are interleaved within each round (rotating who goes first) and the figure is the
median over rounds; the ratios are fastnet's requests/s over each peer's in the same run.

Each tool's own CPU use (its process's user + system time over the wall time) is shown, and the CPU time
it spent per request: other processes on the machine take wall time from a tool but barely change its CPU
time per request, so "tool ÷ fastnet" of those is the steadier comparison of what each tool does with one
CPU. nginx's share of CPU 1 (its worker's schedstat time) and CPU 1's busy share as a whole (/proc/stat:
nginx, the kernel's network work for its sends, and anything else that ran there) are shown too: near
100% means the server's side, not the tool, set the figure.

Tools: ``fastnet`` (``python -m fastnet load``, the compiled loop), ``wrk`` (``-t1``), ``hey``, ``locust``
(FastHttpUser, one process, no wait time), and two alternatives measured for the engine's design:
``fastnet-py`` (the pure-Python loop twin: in a compiled build it still calls the compiled parser) and
``client-threads`` (64 threads sharing one ``fastnet.Client``).

Latency at the same rate: wrk over 4 connections paced by a Lua ``delay()`` (each connection waits 1 ms
after each response) sets a rate; ``fastnet load --rate`` then runs at that rate over 4 connections, and
the p50/p90/p99 of the two are compared: fastnet's "sent → done" (from the actual send to the last byte,
which is what wrk measures) and its corrected latency (from each request's intended start, so it also
holds the generator's own lateness against the timetable). Few connections, because wrk's millisecond
timers fire together on every connection: at 64 connections wrk sends in bursts of 64 that queue in
nginx, while fastnet's timetable spaces requests evenly, and the two would not measure the same load.

Usage::

    PYTHONPATH=. python benchmarks/bench_load.py [--quick] [--record] [--tools fastnet,wrk,hey,locust]

It never fails: a tool that is missing or errors is reported as such in its cell.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import resource
import shutil
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

__all__ = ["TOOLS", "WORKLOADS", "main"]

CONNECTIONS = 64
#: Connections of the latency comparison at the same rate: few, so that neither tool queues requests in
#: bursts (wrk's 1 ms timers fire together on every connection) and the two measure the same thing.
PACED_CONNECTIONS = 4
GENERATOR_CPU = 0
SERVER_CPU = 1
WORKLOADS = {"tiny": "/2b", "64k": "/64k.bin"}
WORKLOAD_TITLES = {"tiny": "2-byte body", "64k": "64 KiB body"}
_SIZE_64K = 64 * 1024
_UNITS = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0}

_CLIENT_THREADS = r"""
import statistics, sys, threading, time
import fastnet
url, seconds, threads = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
client = fastnet.Client(trust_env=False)
lat, lock, end = [], threading.Lock(), time.monotonic() + seconds
def work():
    mine = []
    while time.monotonic() < end:
        t0 = time.perf_counter()
        r = client.get(url)
        r.content
        mine.append(time.perf_counter() - t0)
    with lock:
        lat.extend(mine)
start = time.monotonic()
ts = [threading.Thread(target=work) for _ in range(threads)]
for t in ts: t.start()
for t in ts: t.join()
elapsed = time.monotonic() - start
q = statistics.quantiles(lat, n=100)
print(len(lat) / elapsed, q[49], q[89], q[98])
"""

_LOCUSTFILE = """
from locust import FastHttpUser, constant, task

class Load(FastHttpUser):
    wait_time = constant(0)

    @task
    def get(self):
        self.client.get({path!r})
"""


class Failed(RuntimeError):
    pass


def _pinned(cmd: list[str]) -> list[str]:
    return ["taskset", "-c", str(GENERATOR_CPU), *cmd]


def _run(cmd: list[str], seconds: float, cwd: str | None = None) -> tuple[str, float]:
    """Run a tool to its end (bounded); its stdout and its CPU use (fraction of the wall time)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    proc = subprocess.run(
        _pinned(cmd), capture_output=True, text=True, timeout=seconds + 60, cwd=cwd, env=_env()
    )
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) / wall
    if proc.returncode not in (0, 1) or not proc.stdout.strip():
        raise Failed(f"exit {proc.returncode}: {(proc.stderr or proc.stdout)[-300:]}")
    return proc.stdout, cpu


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(common.REPO_ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _seconds(text: str) -> float:
    match = re.match(r"([0-9.]+)(us|ms|s|m)$", text.strip())
    if match is None:
        raise Failed(f"cannot read the time {text!r}")
    return float(match.group(1)) * _UNITS[match.group(2)]


# --------------------------------------------------------------------------- tools
# Each takes (url, seconds, rate) and returns {"rps", "p50", "p90", "p99", "cpu", "errors"}.


def _fastnet_tool(engine: str) -> Callable[..., dict[str, Any]]:
    def run(
        url: str, seconds: float, rate: float | None = None, connections: int = CONNECTIONS
    ) -> dict[str, Any]:
        cmd = [sys.executable, "-m", "fastnet", "load", url, "-c", str(connections), "-z", f"{seconds}s"]
        cmd += ["--json", "--quiet", "--engine", engine]
        if rate:
            cmd += ["--rate", f"{rate:.0f}"]
        out, cpu = _run(cmd, seconds)
        doc = json.loads(out)
        lat, sent = doc["latency"] or {}, doc["phases"]["response"] or {}
        return {
            "rps": doc["requests_per_second"],
            "p50": lat.get("p50"),
            "p90": lat.get("p90"),
            "p99": lat.get("p99"),
            "sent_p50": sent.get("p50"),
            "sent_p90": sent.get("p90"),
            "sent_p99": sent.get("p99"),
            "cpu": cpu,
            "errors": doc["failed"],
            "saturated": doc["generator"]["saturated"],
        }

    return run


def _wrk(
    url: str,
    seconds: float,
    rate: float | None = None,
    script: str | None = None,
    connections: int = CONNECTIONS,
) -> dict[str, Any]:
    cmd = ["wrk", "-t1", f"-c{connections}", f"-d{max(1, round(seconds))}s", "--latency", url]
    if script:
        cmd += ["-s", script]
    out, cpu = _run(cmd, seconds)
    rps = float(re.search(r"Requests/sec:\s+([0-9.]+)", out).group(1))  # type: ignore[union-attr]
    dist = dict(re.findall(r"^\s+(50|75|90|99)%\s+(\S+)$", out, re.MULTILINE))
    errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    return {
        "rps": rps,
        "p50": _seconds(dist["50"]),
        "p90": _seconds(dist["90"]),
        "p99": _seconds(dist["99"]),
        "cpu": cpu,
        "errors": sum(int(x) for x in errors.groups()) if errors else 0,
    }


def _hey(url: str, seconds: float, rate: float | None = None) -> dict[str, Any]:
    out, cpu = _run(["hey", "-c", str(CONNECTIONS), "-z", f"{seconds}s", url], seconds)
    rps = float(re.search(r"Requests/sec:\s+([0-9.]+)", out).group(1))  # type: ignore[union-attr]
    dist = dict(re.findall(r"^\s+(50|90|99)%+ in ([0-9.]+) secs", out, re.MULTILINE))
    codes = re.findall(r"\[(\d+)\]\s+(\d+) responses", out)
    return {
        "rps": rps,
        "p50": float(dist["50"]),
        "p90": float(dist["90"]),
        "p99": float(dist["99"]),
        "cpu": cpu,
        "errors": sum(int(n) for code, n in codes if code != "200"),
    }


def _locust(url: str, seconds: float, rate: float | None = None) -> dict[str, Any]:
    base, _, path = url.partition("://")[2].partition("/")
    with tempfile.TemporaryDirectory(prefix="fastnet-bench-locust-") as tmp:
        locustfile = Path(tmp) / "locustfile.py"
        locustfile.write_text(_LOCUSTFILE.format(path="/" + path))
        prefix = str(Path(tmp) / "run")
        cmd = [sys.executable, "-m", "locust", "-f", str(locustfile), "--headless", "-u", str(CONNECTIONS)]
        cmd += ["-r", "1000", "-t", f"{seconds:g}s", "-H", f"http://{base}", "--csv", prefix]
        cmd += ["--only-summary", "--loglevel", "ERROR", "--exit-code-on-error", "0"]
        _out, cpu = _run_locust(cmd, seconds, tmp)
        with open(prefix + "_stats.csv", newline="") as f:
            rows = {row["Name"]: row for row in csv.DictReader(f)}
    row = rows["Aggregated"]
    return {
        "rps": float(row["Requests/s"]),
        "p50": float(row["50%"]) / 1e3,
        "p90": float(row["90%"]) / 1e3,
        "p99": float(row["99%"]) / 1e3,
        "cpu": cpu,
        "errors": int(row["Failure Count"]),
    }


def _run_locust(cmd: list[str], seconds: float, cwd: str) -> tuple[str, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    proc = subprocess.run(
        _pinned(cmd), capture_output=True, text=True, timeout=seconds + 60, cwd=cwd, env=_env()
    )
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise Failed(f"locust exit {proc.returncode}: {proc.stderr[-300:]}")
    return proc.stdout, (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) / wall


def _client_threads(url: str, seconds: float, rate: float | None = None) -> dict[str, Any]:
    out, cpu = _run([sys.executable, "-c", _CLIENT_THREADS, url, str(seconds), str(CONNECTIONS)], seconds)
    rps, p50, p90, p99 = (float(x) for x in out.split())
    return {"rps": rps, "p50": p50, "p90": p90, "p99": p99, "cpu": cpu, "errors": 0}


def _cpu_busy(cpu: int) -> list[int]:
    """One CPU's jiffies from /proc/stat: user, nice, system, idle, iowait, irq, softirq, steal, ..."""
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith(f"cpu{cpu} "):
                return [int(x) for x in line.split()[1:]]
    return []


def _busy_since(before: list[int], after: list[int]) -> float | None:
    """The CPU's busy share between two readings: everything but idle and iowait, so the kernel's network
    work for nginx's sends (system, softirq) counts, and so does anyone else's work on that CPU."""
    if not before or not after:
        return None
    delta = [a - b for a, b in zip(after, before, strict=True)]
    total = sum(delta)
    return (total - delta[3] - delta[4]) / total if total > 0 else None


def _breakdown(before: list[int], after: list[int]) -> dict[str, float]:
    delta = [a - b for a, b in zip(after, before, strict=True)]
    total = sum(delta) or 1
    return {
        "user": (delta[0] + delta[1]) / total,
        "system": delta[2] / total,
        "softirq": (delta[5] + delta[6]) / total,
        "idle": (delta[3] + delta[4]) / total,
    }


def _have_locust() -> bool:
    try:
        import locust  # noqa: F401
    except ImportError:
        return False
    return True


#: name -> (run, available)
TOOLS: dict[str, tuple[Callable[..., dict[str, Any]], Callable[[], bool]]] = {
    "fastnet": (_fastnet_tool("c"), lambda: True),
    "wrk": (_wrk, lambda: shutil.which("wrk") is not None),
    "hey": (_hey, lambda: shutil.which("hey") is not None),
    "locust": (_locust, _have_locust),
    "fastnet-py": (_fastnet_tool("py"), lambda: True),
    "client-threads": (_client_threads, lambda: True),
}
_DEFAULT_TOOLS = ["fastnet", "wrk", "hey", "locust"]
#: Targets of issue 14: fastnet's requests/s over each peer's.
TARGETS = {"wrk": 0.5, "hey": 2.0, "locust": 8.0}


# --------------------------------------------------------------------------- reporting


def _ms(value: float | None) -> str:
    if value is None:
        return "–"
    return f"{value * 1e3:.2f}" if value >= 1e-3 else f"{value * 1e3:.3f}"


def _median(samples: list[dict[str, Any]], key: str) -> float | None:
    values = [s[key] for s in samples if s.get(key) is not None]
    return statistics.median(values) if values else None


def _tables(
    results: dict[str, dict[str, list[dict[str, Any]]]], tools: list[str], failures: dict[str, str]
) -> str:
    blocks = []
    for wl in results:
        rows = []
        fastnet_rps = _median(results[wl].get("fastnet", []), "rps")
        fastnet_cost = _median(results[wl].get("fastnet", []), "cost")
        for tool in tools:
            samples = results[wl].get(tool, [])
            rps = _median(samples, "rps")
            if rps is None:
                rows.append([tool, failures.get(f"{wl}/{tool}", "–"), "", "", "", "", "", "", "", "", ""])
                continue
            ratio = cost_ratio = ""
            cost = _median(samples, "cost")
            if tool != "fastnet" and fastnet_rps:
                ratio = f"{fastnet_rps / rps:.2f}×"
                if tool in TARGETS:
                    verdict = "met" if fastnet_rps / rps >= TARGETS[tool] else "missed"
                    ratio += f" (target {TARGETS[tool]:g}×: {verdict})"
            if tool != "fastnet" and fastnet_cost and cost:
                cost_ratio = f"{cost / fastnet_cost:.2f}×"
            rows.append(
                [
                    tool,
                    f"{rps:,.0f}",
                    ratio,
                    f"{cost * 1e6:.1f}" if cost else "–",
                    cost_ratio,
                    _ms(_median(samples, "p50")),
                    _ms(_median(samples, "p90")),
                    _ms(_median(samples, "p99")),
                    f"{_median(samples, 'cpu') or 0:.0%}",
                    f"{_median(samples, 'server_cpu') or 0:.0%} / "
                    f"{_median(samples, 'server_cpu_busy') or 0:.0%}",
                    f"{sum(s['errors'] for s in samples):,}",
                ]
            )
        header = ["tool", "requests/s", "fastnet ÷ tool", "tool CPU µs/request", "tool ÷ fastnet"]
        header += ["p50 ms", "p90 ms", "p99 ms"]
        header += ["tool CPU", f"nginx / CPU {SERVER_CPU} busy", "errors"]
        title = f"**{WORKLOAD_TITLES[wl]} ({WORKLOADS[wl]}), {CONNECTIONS} connections, closed loop**"
        block = title + "\n\n" + common.markdown_table(header, rows)
        splits = [s["server_split"] for s in results[wl].get("fastnet", []) if "server_split" in s]
        if splits:
            parts = ", ".join(
                f"{k} {statistics.median(s[k] for s in splits):.0%}"
                for k in ("user", "system", "softirq", "idle")
            )
            block += f"\n\nCPU {SERVER_CPU} (nginx's) during the fastnet runs: {parts}."
        blocks.append(block)
    return "\n\n".join(blocks)


def _paced(url: str, seconds: float, tmp: str) -> str:
    """wrk paced by a 1 ms delay per connection sets a rate; fastnet load runs open loop at that rate."""
    script = Path(tmp) / "pace.lua"
    script.write_text("function delay()\n  return 1\nend\n")
    try:
        wrk = _wrk(url, seconds, script=str(script), connections=PACED_CONNECTIONS)
        fast = _fastnet_tool("c")(url, seconds, wrk["rps"], connections=PACED_CONNECTIONS)
    except Exception as exc:  # noqa: BLE001
        return f"paced comparison failed: {exc}"
    rows = [
        [
            f"wrk, {PACED_CONNECTIONS} connections, 1 ms delay after each response",
            f"{wrk['rps']:,.0f}",
            _ms(wrk["p50"]),
            _ms(wrk["p90"]),
            _ms(wrk["p99"]),
            "",
        ],
        [
            "fastnet load --rate, sent → done",
            f"{fast['rps']:,.0f}",
            _ms(fast["sent_p50"]),
            _ms(fast["sent_p90"]),
            _ms(fast["sent_p99"]),
            "/".join(
                f"{fast['sent_' + k] / wrk[k]:.2f}" if fast.get("sent_" + k) and wrk[k] else "–"
                for k in ("p50", "p90", "p99")
            ),
        ],
        [
            "fastnet load --rate, from intended start",
            "",
            _ms(fast["p50"]),
            _ms(fast["p90"]),
            _ms(fast["p99"]),
            "/".join(
                f"{fast[k] / wrk[k]:.2f}" if fast.get(k) and wrk[k] else "–" for k in ("p50", "p90", "p99")
            ),
        ],
    ]
    header = ["run", "requests/s", "p50 ms", "p90 ms", "p99 ms", "÷ wrk (p50/p90/p99)"]
    title = f"**Latency at the same rate ({url.rsplit('/', 1)[-1]}, {PACED_CONNECTIONS} connections)**"
    return title + "\n\n" + common.markdown_table(header, rows)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="2 rounds of 2 s per tool")
    p.add_argument("--rounds", type=int, default=None, help="rounds (default 3; --quick 2)")
    p.add_argument("--seconds", type=float, default=None, help="seconds per run (default 5; --quick 2)")
    p.add_argument("--tools", default="", help="comma-separated subset of: " + ",".join(TOOLS))
    p.add_argument("--workloads", default="", help="comma-separated subset of: " + ",".join(WORKLOADS))
    p.add_argument("--no-paced", action="store_true", help="skip the latency comparison at the same rate")
    p.add_argument("--record", action="store_true", help="add the tables to benchmarks/RESULTS.md")
    p.add_argument("-v", "--verbose", action="store_true")
    args = p.parse_args(argv)
    rounds = args.rounds or (2 if args.quick else 3)
    seconds = args.seconds or (2.0 if args.quick else 5.0)
    wanted = [t for t in (args.tools.split(",") if args.tools else _DEFAULT_TOOLS) if t]
    workloads = [w for w in (args.workloads.split(",") if args.workloads else WORKLOADS) if w]
    if any(t not in TOOLS for t in wanted) or any(w not in WORKLOADS for w in workloads):
        p.error(f"unknown tools or workloads: {wanted} {workloads}")
    if len(os.sched_getaffinity(0)) < 2:
        p.error("needs two CPUs (one for the generator, one for nginx)")
    tools = [t for t in wanted if TOOLS[t][1]()]
    missing = [t for t in wanted if t not in tools]
    common.clean_proxy_env()
    results: dict[str, dict[str, list[dict[str, Any]]]] = {}
    failures: dict[str, str] = {}
    paced = []
    started = time.monotonic()
    versions = {
        "wrk": _version(["wrk", "-v"]),
        "hey": "Debian 0.1.4",
        "locust": common._pkg_version("locust"),
    }
    machine = common.machine_notes(versions)  # now: the load average before the run
    with common.Nginx() as nginx, tempfile.TemporaryDirectory(prefix="fastnet-bench-load-") as tmp:
        big = nginx.dir / "www" / "64k.bin"
        big.write_bytes(os.urandom(_SIZE_64K))
        os.chmod(big, 0o644)
        server_pids = nginx.pids()
        common.pin_pids(server_pids, SERVER_CPU)
        common.pin_self(SERVER_CPU)
        print(
            f"nginx on 127.0.0.1:{nginx.port} pinned to CPU {SERVER_CPU}; tools on CPU {GENERATOR_CPU}",
            file=sys.stderr,
        )
        for wl in workloads:
            url = nginx.url(WORKLOADS[wl])
            results[wl] = {t: [] for t in tools}
            for r in range(rounds):
                order = tools[r % len(tools) :] + tools[: r % len(tools)]
                for tool in order:
                    if f"{wl}/{tool}" in failures:
                        continue
                    try:
                        c0, t0, busy0 = common.cpu_ns(server_pids), time.monotonic(), _cpu_busy(SERVER_CPU)
                        sample = TOOLS[tool][0](url, seconds)
                        wall = time.monotonic() - t0
                        sample["server_cpu"] = (common.cpu_ns(server_pids) - c0) / 1e9 / wall
                        busy1 = _cpu_busy(SERVER_CPU)
                        sample["server_cpu_busy"] = _busy_since(busy0, busy1)
                        if busy0 and busy1:
                            sample["server_split"] = _breakdown(busy0, busy1)
                    except Exception as exc:  # noqa: BLE001 - report and go on with the others
                        failures[f"{wl}/{tool}"] = f"{type(exc).__name__}: {str(exc)[:120]}"
                        continue
                    sample["cost"] = sample["cpu"] / sample["rps"] if sample["rps"] else None
                    results[wl][tool].append(sample)
                    if args.verbose:
                        print(
                            f"  {wl} round {r + 1} {tool}: {sample['rps']:,.0f}/s cpu {sample['cpu']:.0%}",
                            file=sys.stderr,
                        )
            if not args.no_paced and "fastnet" in tools and "wrk" in tools:
                paced.append(_paced(url, seconds, tmp))
    out = _tables(results, tools, failures)
    if paced:
        out += "\n\n" + "\n\n".join(paced)
    end_load = "{:.2f} {:.2f} {:.2f}".format(*os.getloadavg())
    notes = [
        f"Command: `{common.command_line()}`",
        f"Machine: {machine}; load average at the end {end_load}",
        f"Medians over {rounds} interleaved rounds of {seconds:g} s per tool; {CONNECTIONS} keep-alive "
        f"connections; each tool pinned to CPU {GENERATOR_CPU}, nginx (one worker, no access log) to CPU "
        f"{SERVER_CPU}. "
        f"Took {time.monotonic() - started:.0f} s.",
    ]
    if missing:
        notes.append("Not installed: " + ", ".join(missing))
    if failures:
        notes.append("Errors: " + "; ".join(f"{k}: {v}" for k, v in failures.items()))
    out += "\n\n" + "\n\n".join(notes)
    print(out)
    if args.record:
        common.record_results("Load generators (bench_load.py)", out)
    return 0


def _version(cmd: list[str]) -> str:
    try:
        text = subprocess.run(cmd, capture_output=True, text=True, timeout=5).stdout
    except (OSError, subprocess.SubprocessError):
        return "?"
    match = re.search(r"wrk (\S+)", text)
    return match.group(1) if match else "?"


if __name__ == "__main__":
    sys.exit(main())
