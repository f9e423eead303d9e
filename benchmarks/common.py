"""Shared helpers for the benchmark scripts: private nginx/squid, CPU pinning, interleaved rounds, tables.

Theory of operation
-------------------
Each benchmark starts its own nginx (and squid, for the proxy benchmark) from a config written into a
fresh temporary directory, on free loopback ports, in the foreground (``daemon off`` / ``squid -N``) as a
child process, so stopping it is ``terminate()`` on a pid we own. We do not reuse the test suite's
testbed by default: other engineers' test runs start and stop it, its nginx writes an access log line per
request (a ``write`` on the server's side of every request), and a benchmark must not depend on someone
else's daemon staying up. ``--use-testbed`` attaches to a hand-started ``tests/testbed.py`` instead.

The sequential workloads pin this process (every thread) and nginx's processes to one CPU: waking a
process on the other vCPU costs tens of microseconds and makes timings bimodal.

:func:`run_rounds` interleaves the clients inside every round (rotating who goes first), times a
calibrated batch per client per round, and keeps per-round figures; the reported figure is the median over
rounds. Every batch is bounded in count, every socket has a timeout, and the whole run has a deadline.

Example::

    with Nginx() as nginx:
        pin_for_sequential(nginx)
        print(nginx.url("/2b"))
"""

from __future__ import annotations

import datetime
import os
import platform
import shutil
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "BENCH_DIR",
    "ClientError",
    "Nginx",
    "ONE_MIB",
    "RESULTS_PATH",
    "Squid",
    "Timing",
    "clean_proxy_env",
    "cpu_ns",
    "free_port",
    "machine_notes",
    "markdown_table",
    "pin_for_sequential",
    "pin_self",
    "pin_pids",
    "record_results",
    "run_rounds",
    "wait_for_http",
]

BENCH_DIR = Path(__file__).resolve().parent
RESULTS_PATH = BENCH_DIR / "RESULTS.md"
REPO_ROOT = BENCH_DIR.parent
ONE_MIB = 1 << 20

#: 40 response headers for W2, the same shape as the testbed's ``/h40``.
_H40 = "\n".join(
    f'            add_header X-Header-{i:02d} "value-{i:02d}-abcdefghijk";' for i in range(1, 41)
)


class ClientError(RuntimeError):
    """A client under benchmark failed (wrong status, short body): its column is marked, the run goes on."""


# --------------------------------------------------------------------------- ports and environment


def free_port(hosts: Sequence[str] = ("127.0.0.1",)) -> int:
    """A TCP port that is free on every host in ``hosts`` (bounded number of attempts)."""
    for _ in range(50):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        ok = True
        for host in hosts:
            fam = socket.AF_INET6 if ":" in host else socket.AF_INET
            try:
                with socket.socket(fam, socket.SOCK_STREAM) as t:
                    t.bind((host, port))
            except OSError:
                ok = False
                break
        if ok:
            return port
    raise RuntimeError("no free loopback port found")


def clean_proxy_env() -> None:
    """Drop proxy variables so every client (all trust the environment by default) goes direct."""
    for name in list(os.environ):
        if name.lower() in ("http_proxy", "https_proxy", "all_proxy", "no_proxy"):
            del os.environ[name]


def wait_for_http(
    host: str,
    port: int,
    path: str = "/2b",
    timeout: float = 10.0,
    proxy: tuple[str, int] | None = None,
    tls: ssl.SSLContext | None = None,
) -> None:
    """Poll (bounded) until a GET answers 200, directly or through an HTTP proxy (over TLS with ``tls``)."""
    deadline = time.monotonic() + timeout
    target = f"http://{host}:{port}{path}" if proxy else path
    req = f"GET {target} HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n\r\n".encode()
    last: BaseException | None = None
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(proxy or (host, port), timeout=2) as plain:
                s = plain if tls is None else tls.wrap_socket(plain, server_hostname=host)
                s.sendall(req)
                head = s.recv(4096)
            if head.startswith(b"HTTP/1.1 200"):
                return
            last = RuntimeError(head[:80].decode("latin-1"))
        except OSError as exc:
            last = exc
        time.sleep(0.05)
    raise RuntimeError(f"server on {host}:{port} not ready: {last!r}")


# --------------------------------------------------------------------------- daemons


def _children(pid: int) -> list[int]:
    kids: list[int] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            text = Path(f"/proc/{pid}/task/{task}/children").read_text()
            kids += [int(x) for x in text.split()]
    except OSError:
        pass
    return kids


class _Daemon:
    """A foreground daemon run as our child from a temp dir; ``stop()`` ends exactly that process."""

    name = "daemon"

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix=f"fastnet-bench-{self.name}-"))
        os.chmod(self.dir, 0o755)  # the workers run as unprivileged users
        self.proc: subprocess.Popen[bytes] | None = None

    def _spawn(self, cmd: list[str]) -> None:
        self._log = open(self.dir / "launch.log", "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            cmd, stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True
        )

    def pids(self) -> list[int]:
        """The daemon's own pid and its children's (nginx's worker, squid's helpers)."""
        if self.proc is None:
            return []
        return [self.proc.pid, *_children(self.proc.pid)]

    def log_tail(self) -> str:
        try:
            return (self.dir / "launch.log").read_text(errors="replace")[-2000:]
        except OSError:
            return ""

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=8)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=5)
            self._log.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class Nginx(_Daemon):
    """A private nginx: one worker, no access log, ``/2b``, ``/h40``, ``/1m.bin`` on ``hosts``:``port``.

    >>> with Nginx() as n:                  # doctest: +SKIP
    ...     urllib.request.urlopen(n.url("/2b")).read()
    b'ok'
    """

    name = "nginx"

    def __init__(
        self,
        hosts: Sequence[str] = ("127.0.0.1",),
        port: int | None = None,
        *,
        files: dict[str, bytes] | None = None,
        locations: str = "",
        tls: tuple[str, str, ssl.SSLContext] | None = None,
    ) -> None:
        """``files`` adds static files (name -> content) beside ``1m.bin``; ``locations`` adds config
        lines to the server block (e.g. a ``stub_status`` location). ``tls`` (certificate chain file,
        key file, a client context that trusts it) makes it HTTPS only (TLS 1.2 and 1.3, nginx's
        default session tickets, no session cache)."""
        super().__init__()
        self.tls = tls
        self.hosts = list(hosts)
        self.port = port or free_port(self.hosts)
        self.host = self.hosts[0]
        d = self.dir
        www = d / "www"
        www.mkdir()
        (www / "1m.bin").write_bytes(os.urandom(ONE_MIB))
        for name, content in (files or {}).items():
            (www / name).write_bytes(content)
        for sub in ("logs", "tmp"):
            (d / sub).mkdir()
        ssl_flag = " ssl" if tls else ""
        listens = "\n".join(
            f"        listen {'[' + h + ']' if ':' in h else h}:{self.port}{ssl_flag};" for h in self.hosts
        )
        if tls:
            listens += (
                f"\n        ssl_certificate {tls[0]};\n        ssl_certificate_key {tls[1]};"
                "\n        ssl_protocols TLSv1.2 TLSv1.3;"
            )
        kinds = ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
        temp = "\n".join(f"    {k}_temp_path {d}/tmp/{k};" for k in kinds)
        (d / "nginx.conf").write_text(f"""\
daemon off;
worker_processes 1;
pid {d}/nginx.pid;
error_log {d}/logs/error.log warn;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    sendfile on;
{temp}
    default_type application/octet-stream;
    types {{ application/octet-stream bin; }}
    keepalive_requests 10000000;
    keepalive_timeout 300s;
    server {{
{listens}
        root {www};
        location = /2b {{ default_type text/plain; return 200 "ok"; }}
        location = /h40 {{
            default_type text/plain;
{_H40}
            return 200 "ok";
        }}
{locations}
    }}
}}
""")
        if os.geteuid() == 0:
            for path in (d, www, *www.iterdir()):
                os.chmod(path, 0o755 if path.is_dir() else 0o644)
        self._spawn(["nginx", "-p", str(d), "-c", str(d / "nginx.conf"), "-e", str(d / "logs/error.log")])
        try:
            for h in self.hosts:
                wait_for_http(h, self.port, tls=tls[2] if tls else None)
        except Exception:
            tail = self.log_tail()
            self.stop()
            raise RuntimeError(f"nginx did not start: {tail}") from None

    def url(self, path: str, host: str | None = None) -> str:
        h = host or self.host
        h = f"[{h}]" if ":" in h else h
        return f"{'https' if self.tls else 'http'}://{h}:{self.port}{path}"


class Squid(_Daemon):
    """A private squid (no auth, no cache) on 127.0.0.1:``port`` in the foreground (``-N``)."""

    name = "squid"

    def __init__(self) -> None:
        super().__init__()
        self.host = "127.0.0.1"
        self.port = free_port()
        d = self.dir
        (d / "hosts").write_text("127.0.0.1 localhost\n")
        (d / "squid.conf").write_text(f"""\
http_port 127.0.0.1:{self.port}
visible_hostname fastnet-bench-squid
pid_filename {d}/squid.pid
cache_log {d}/cache.log
access_log none
cache deny all
cache_mem 8 MB
coredump_dir {d}
shutdown_lifetime 0 seconds
pinger_enable off
icp_port 0
htcp_port 0
hosts_file {d}/hosts
dns_nameservers 127.0.0.1
client_persistent_connections on
server_persistent_connections on
http_access allow localhost
http_access deny all
""")
        if os.geteuid() == 0:
            for path in [d, *d.iterdir()]:
                shutil.chown(path, "proxy", "proxy")
        self._spawn(["squid", "-N", "-f", str(d / "squid.conf")])

    def ready(self, origin_host: str, origin_port: int) -> None:
        try:
            wait_for_http(origin_host, origin_port, proxy=(self.host, self.port), timeout=15)
        except Exception:
            tail = self.log_tail()
            self.stop()
            raise RuntimeError(f"squid did not start: {tail}") from None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"


# --------------------------------------------------------------------------- CPU pinning


def pin_self(cpu: int) -> None:
    """Pin every thread of this process to ``cpu`` (threads started later inherit it)."""
    for task in os.listdir("/proc/self/task"):
        try:
            os.sched_setaffinity(int(task), {cpu})
        except OSError:
            pass


def pin_pids(pids: Iterable[int], cpu: int) -> None:
    """Pin other processes (what ``taskset -p -c CPU PID`` does), every thread of each."""
    for pid in pids:
        try:
            tasks = [int(t) for t in os.listdir(f"/proc/{pid}/task")]
        except OSError:
            continue
        for tid in tasks:
            try:
                os.sched_setaffinity(tid, {cpu})
            except OSError:
                subprocess.run(["taskset", "-p", "-c", str(cpu), str(tid)], capture_output=True, timeout=5)


def pin_for_sequential(server_pids: Iterable[int], cpu: int | None = None) -> int:
    """Put this process and the server on one CPU (the last one we may use); returns it."""
    if cpu is None:
        cpu = max(os.sched_getaffinity(0))
    pin_pids(server_pids, cpu)
    pin_self(cpu)
    return cpu


# --------------------------------------------------------------------------- rounds and medians


@dataclass
class Timing:
    """Per-round figures of one client on one workload (seconds per unit of work)."""

    name: str
    per_round: list[float] = field(default_factory=list)
    #: CPU seconds per unit burnt by this process and the server (schedstat), immune to other load.
    cpu_per_round: list[float] = field(default_factory=list)
    batch: int = 0
    error: str | None = None

    @property
    def median(self) -> float | None:
        return statistics.median(self.per_round) if self.per_round else None

    @property
    def cpu_median(self) -> float | None:
        return statistics.median(self.cpu_per_round) if self.cpu_per_round else None


def cpu_ns(pids: Iterable[int]) -> int:
    """Nanoseconds on CPU so far, summed over every thread of ``pids`` (0 = this process).

    From /proc/PID/task/TID/schedstat (the scheduler's exact run time). On a machine shared with other
    work, the change of this sum over a batch is what the client and the server themselves spent, while
    wall time also counts whoever else held the CPU.
    """
    total = 0
    for pid in pids:
        base = "/proc/self/task" if pid == 0 else f"/proc/{pid}/task"
        try:
            tasks = os.listdir(base)
        except OSError:
            continue
        for tid in tasks:
            try:
                with open(f"{base}/{tid}/schedstat") as f:
                    total += int(f.read().split()[0])
            except (OSError, ValueError, IndexError):
                pass
    return total


#: A runner does ``n`` units of work and returns the elapsed seconds (it times itself).
Runner = Callable[[int], float]


def run_rounds(
    runners: dict[str, Runner],
    rounds: int,
    target_s: float,
    *,
    min_n: int = 5,
    max_n: int = 50_000,
    deadline_s: float = 600.0,
    fixed_n: int | None = None,
    splits: int = 1,
    log: Callable[[str], None] | None = None,
    cpu_pids: Sequence[int] | None = None,
) -> dict[str, Timing]:
    """Interleave ``runners`` over ``rounds`` rounds; each client's turn sized to take about ``target_s``.

    The first calls of each runner (a few units) warm it up and size its batch; clients go in a rotated
    order each round. With ``splits`` > 1 each client's turn in a round is that many back-to-back
    sub-batches, each kept as a sample: on a shared machine the median of short samples rejects the
    moments another process held the CPU. ``fixed_n`` skips the sizing (that many units per sample).
    A runner that raises is dropped and keeps its error. Past ``deadline_s`` no new round starts.
    With ``cpu_pids`` (0 = this process) each sample also records the CPU time those processes used.
    """
    results = {name: Timing(name) for name in runners}
    started = time.monotonic()
    for name, run in runners.items():
        try:
            if fixed_n is not None:
                run(min(3, fixed_n))
                results[name].batch = fixed_n
                continue
            probe = 3
            t = run(probe)
            while t < 0.02 and probe < max_n:
                probe = min(probe * 4, max_n)
                t = run(probe)
            per = t / probe
            results[name].batch = max(min_n, min(max_n, int(target_s / splits / per) if per > 0 else max_n))
        except Exception as exc:  # noqa: BLE001 - report and go on with the others
            results[name].error = f"{type(exc).__name__}: {exc}"
    names = [n for n in runners if results[n].error is None]
    for r in range(rounds):
        if time.monotonic() - started > deadline_s:
            if log:
                log(f"deadline reached after {r} rounds")
            break
        order = names[r % len(names) :] + names[: r % len(names)] if names else []
        for name in order:
            timing = results[name]
            if timing.error is not None:
                continue
            for _ in range(splits):
                try:
                    c0 = cpu_ns(cpu_pids) if cpu_pids else 0
                    elapsed = runners[name](timing.batch)
                    if cpu_pids:
                        timing.cpu_per_round.append((cpu_ns(cpu_pids) - c0) / 1e9 / timing.batch)
                except Exception as exc:  # noqa: BLE001
                    timing.error = f"{type(exc).__name__}: {exc}"
                    break
                timing.per_round.append(elapsed / timing.batch)
        if log:
            log(
                f"round {r + 1}/{rounds}: "
                + ", ".join(
                    f"{n}={results[n].per_round[-1] * 1e6:.1f}" for n in order if results[n].per_round
                )
            )
    return results


# --------------------------------------------------------------------------- reporting


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    for row in rows:
        lines.append("| " + " | ".join(str(c) for c in row) + " |")
    return "\n".join(lines)


def _pkg_version(name: str) -> str:
    try:
        from importlib.metadata import version

        return version(name)
    except Exception:  # noqa: BLE001
        return "-"


def machine_notes(extra: dict[str, str] | None = None) -> str:
    """One paragraph on the machine, interpreter, server and client versions."""
    cpu = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        nginx = subprocess.run(["nginx", "-v"], capture_output=True, text=True, timeout=5).stderr.strip()
        nginx = nginx.split("/", 1)[-1]
    except (OSError, subprocess.SubprocessError):
        nginx = "?"
    fastnet_state = "?"
    try:
        import fastnet

        fastnet_state = "compiled" if fastnet.compiled else "pure Python"
    except Exception:  # noqa: BLE001
        pass
    parts = [
        f"{platform.node()}: {os.cpu_count()} vCPU {cpu}, Linux {platform.release()}",
        f"CPython {platform.python_version()}",
        "load average at start {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()),
        f"nginx {nginx}",
        f"fastnet {fastnet_state}",
        "urllib3 " + _pkg_version("urllib3"),
        "requests " + _pkg_version("requests"),
        "httpx " + _pkg_version("httpx"),
        "aiohttp " + _pkg_version("aiohttp"),
        "uvloop " + _pkg_version("uvloop"),
        "pycurl " + _pkg_version("pycurl"),
    ]
    for k, v in (extra or {}).items():
        parts.append(f"{k} {v}")
    return "; ".join(parts)


def command_line() -> str:
    env = []
    for name in ("FASTNET_NO_EXTENSIONS", "FASTNET_REQUIRE_EXTENSIONS"):
        if os.environ.get(name):
            env.append(f"{name}={os.environ[name]}")
    script = os.path.relpath(sys.argv[0], REPO_ROOT) if sys.argv else "?"
    return " ".join([*env, "PYTHONPATH=.", "python", script, *sys.argv[1:]])


def record_results(section: str, body: str, path: Path = RESULTS_PATH) -> None:
    """Insert a dated block under ``## <section>`` in RESULTS.md, newest first, keeping older blocks."""
    stamp = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    block = f"### {stamp}\n\n{body.strip()}\n"
    text = path.read_text() if path.exists() else "# Benchmark results\n"
    heading = f"## {section}"
    if heading in text:
        start = text.index(heading) + len(heading)
        nl = text.find("\n", start)
        nl = len(text) if nl < 0 else nl
        # Skip the section's own prose (up to the first dated block or the next section).
        rest = text[nl + 1 :]
        cut_candidates = [i for i in (rest.find("\n### "), rest.find("\n## ")) if i >= 0]
        if rest.startswith("### "):
            cut = 0
        else:
            cut = min(cut_candidates) + 1 if cut_candidates else len(rest)
        text = text[: nl + 1] + rest[:cut] + block + "\n" + rest[cut:]
    else:
        text = text.rstrip("\n") + f"\n\n{heading}\n\n{block}"
    path.write_text(text)
