"""HTTPS client benchmark: fastnet against a raw ``ssl`` socket floor and the peers, on a private nginx.

Workloads (HTTP/1.1 over TLS to nginx on loopback, with a ``trustme`` test certificate for
``127.0.0.1``; nginx offers TLS 1.2 and 1.3 and its default session tickets, no session cache):

* ``keep-alive`` - sequential GETs of a 2-byte body on one kept-alive TLS connection (µs per request);
* ``new-conn`` - a new TLS connection per request (``Connection: close``; µs per request), where a
  client that keeps its TLS sessions resumes them (nginx reports ``$ssl_session_reused`` in a response
  header, so the table shows the share of resumed handshakes for every client).

Clients: ``raw`` (the floor: an ``ssl`` socket, prebuilt request bytes, ``recv_into`` a reusable buffer;
on ``new-conn`` it offers the session of its first connection, read after the first response, as
fastnet does), ``raw-full`` (``new-conn`` only: the same without resumption, every handshake a full one),
``fastnet``, ``pycurl``, ``pyreqwest`` (its blocking client) and ``urllib3``, each used the way its
documentation shows with the test CA trusted. ``--compare-with TREE`` adds ``fastnet@TREE``, the fastnet
client run from another checkout (its extensions built in place), to measure a change before and after.

Each sample is a fresh child process (one client, one workload: warm-up, then ``count`` requests in 5
sub-batches timed apart, the sample's figure their median) pinned to nginx's CPU, as ``bench_http.py``
pins client and server together. Rounds interleave the clients; the figures are medians over rounds and
the ratio is to the raw floor in the same run.

Usage::

    PYTHONPATH=. python benchmarks/bench_tls.py [--quick] [--clients raw,fastnet] [--workloads new-conn]
    FASTNET_NO_EXTENSIONS=1 PYTHONPATH=. python benchmarks/bench_tls.py --quick     # the pure build
    PYTHONPATH=. python benchmarks/bench_tls.py --quick --compare-with ../main       # before vs after

It never fails: a client that errors is reported as such in its cell. ``--record`` adds the table to
``benchmarks/RESULTS.md``.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import socket
import ssl
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

__all__ = ["CLIENTS", "WORKLOADS", "main"]

#: workload -> (new connection per request, title)
WORKLOADS: dict[str, tuple[bool, str]] = {
    "keep-alive": (False, "HTTPS keep-alive GET, 2-byte body (µs/request)"),
    "new-conn": (True, "HTTPS new connection per request (µs/request)"),
}
_TIMEOUT = 10.0
_SPLITS = 5  # sub-batches per sample, timed apart: a sample's figure is their median
_RESUMED = "X-Resumed"  # nginx's $ssl_session_reused: "r" for a resumed handshake, "." for a full one

#: A child's client: (url, cafile, close) -> one request, returning whether its handshake was resumed
#: (None on a kept-alive connection, where no handshake happened).
Maker = Callable[[str, str, bool], Callable[[], "bool | None"]]


# --------------------------------------------------------------------------- clients (in the child)


def _raw_factory(resume: bool) -> Maker:
    def make(url: str, cafile: str, close: bool) -> Callable[[], bool | None]:
        host, port = url.split("//", 1)[1].split("/", 1)[0].rsplit(":", 1)
        address = (host, int(port))
        context = ssl.create_default_context(cafile=cafile)
        req = (
            f"GET /2b HTTP/1.1\r\nHost: {host}:{port}\r\n"
            + ("Connection: close\r\n" if close else "")
            + "\r\n"
        ).encode()
        buf = bytearray(16384)
        view = memoryview(buf)
        state: dict[str, Any] = {"sock": None, "session": None}

        def connect() -> ssl.SSLSocket:
            plain = socket.create_connection(address, timeout=_TIMEOUT)
            plain.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            plain.settimeout(None)  # blocking: one system call per send or receive (a timeout polls first)
            return context.wrap_socket(plain, server_hostname=host, session=state["session"])

        def exchange(s: ssl.SSLSocket) -> bool:
            s.sendall(req)
            got = s.recv_into(buf)
            end = buf.find(b"\r\n\r\n", 0, got)
            while end < 0 or got - end - 4 < 2:  # the head and the 2-byte body
                n = s.recv_into(view[got:])
                if not n:
                    raise common.ClientError("connection closed early")
                got += n
                end = buf.find(b"\r\n\r\n", 0, got)
            if not buf.startswith(b"HTTP/1.1 200"):
                raise common.ClientError(bytes(buf[:40]).decode("latin-1"))
            return buf.find(b"X-Resumed: r", 0, end) >= 0

        def one() -> bool | None:
            if not close:
                if state["sock"] is None:
                    state["sock"] = connect()
                exchange(state["sock"])
                return None
            s = connect()
            try:
                resumed = exchange(s)
                if resume and not s.session_reused:
                    state["session"] = s.session  # after the first response: the TLS 1.3 ticket is in
            finally:
                s.close()
            return resumed

        return one

    return make


def _fastnet(url: str, cafile: str, close: bool) -> Callable[[], bool | None]:
    import fastnet

    client = fastnet.Client(verify=cafile, trust_env=False)
    headers = {"Connection": "close"} if close else None
    get = client.get

    def one() -> bool | None:
        r = get(url, headers=headers)
        if r.status_code != 200 or r.content != b"ok":
            raise common.ClientError(f"status {r.status_code}")
        return r.headers.get(_RESUMED) == "r" if close else None

    return one


def _pycurl(url: str, cafile: str, close: bool) -> Callable[[], bool | None]:
    import pycurl  # type: ignore[import-untyped]

    c = pycurl.Curl()
    c.setopt(pycurl.URL, url)
    c.setopt(pycurl.CAINFO, cafile)
    c.setopt(pycurl.TIMEOUT, int(_TIMEOUT))
    c.setopt(pycurl.PROXY, "")
    if close:
        c.setopt(pycurl.HTTPHEADER, ["Connection: close"])
    seen: list[bytes] = []
    c.setopt(pycurl.HEADERFUNCTION, seen.append)

    def one() -> bool | None:
        seen.clear()
        out = io.BytesIO()
        c.setopt(pycurl.WRITEDATA, out)
        c.perform()
        if c.getinfo(pycurl.RESPONSE_CODE) != 200 or out.getvalue() != b"ok":
            raise common.ClientError(f"status {c.getinfo(pycurl.RESPONSE_CODE)}")
        return b"X-Resumed: r\r\n" in seen if close else None

    return one


def _pyreqwest(url: str, cafile: str, close: bool) -> Callable[[], bool | None]:
    from pyreqwest.client import SyncClientBuilder

    client = SyncClientBuilder().add_root_certificate_pem(Path(cafile).read_bytes()).build()

    def one() -> bool | None:
        request = client.get(url)
        if close:
            request = request.header("Connection", "close")
        r = request.build().send()
        if r.status != 200 or bytes(r.bytes()) != b"ok":
            raise common.ClientError(f"status {r.status}")
        return r.headers.get(_RESUMED) == "r" if close else None

    return one


def _urllib3(url: str, cafile: str, close: bool) -> Callable[[], bool | None]:
    import urllib3

    host, port = url.split("//", 1)[1].split("/", 1)[0].rsplit(":", 1)
    pool = urllib3.HTTPSConnectionPool(host, int(port), maxsize=1, timeout=_TIMEOUT, ca_certs=cafile)
    headers = {"Connection": "close"} if close else None

    def one() -> bool | None:
        r = pool.request("GET", "/2b", headers=headers)
        if r.status != 200 or r.data != b"ok":
            raise common.ClientError(f"status {r.status}")
        return r.headers.get(_RESUMED) == "r" if close else None

    return one


#: name -> (maker, module it needs, workloads it runs)
CLIENTS: dict[str, tuple[Maker, str, tuple[str, ...]]] = {
    "raw": (_raw_factory(True), "ssl", tuple(WORKLOADS)),
    "raw-full": (_raw_factory(False), "ssl", ("new-conn",)),
    "fastnet": (_fastnet, "fastnet", tuple(WORKLOADS)),
    "pycurl": (_pycurl, "pycurl", tuple(WORKLOADS)),
    "pyreqwest": (_pyreqwest, "pyreqwest", tuple(WORKLOADS)),
    "urllib3": (_urllib3, "urllib3", tuple(WORKLOADS)),
}


def child(args: argparse.Namespace) -> int:
    """One client, one workload: warm up, then ``count`` requests; one JSON line back."""
    common.pin_self(args.cpu)
    name = args.client.split("@", 1)[0]
    try:
        one = CLIENTS[name][0](args.url, args.cafile, WORKLOADS[args.workload][0])
        for _ in range(min(50, args.count)):
            one()
        resumed = 0
        walls: list[float] = []
        cpus: list[float] = []
        per_split = max(1, args.count // _SPLITS)
        for _ in range(_SPLITS):
            cpu = time.process_time()
            t0 = time.perf_counter()
            for _ in range(per_split):
                if one():
                    resumed += 1
            walls.append(time.perf_counter() - t0)
            cpus.append(time.process_time() - cpu)
    except Exception as exc:  # noqa: BLE001 - reported to the parent
        print(json.dumps({"error": f"{type(exc).__name__}: {exc}"[:120]}), flush=True)
        return 1
    # the median sub-batch: on a shared machine it rejects the moments another process held the CPU
    result = {
        "us_per_request": statistics.median(walls) / per_split * 1e6,
        "cpu_us": statistics.median(cpus) / per_split * 1e6,
        "resumed": resumed / (per_split * _SPLITS),
    }
    print(json.dumps(result), flush=True)
    return 0


# --------------------------------------------------------------------------- the parent


def _have(module: str) -> bool:
    try:
        __import__(module)
        return True
    except Exception:  # noqa: BLE001
        return False


def run_child(
    client: str, tree: str | None, url: str, cafile: str, workload: str, count: int, cpu: int
) -> Any:
    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = os.path.abspath(tree)
    command = [sys.executable, os.path.abspath(__file__), "--child", "--client", client, "--url", url]
    command += ["--cafile", cafile, "--workload", workload, "--count", str(count), "--cpu", str(cpu)]
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=300, check=False, env=env, cwd=tree
        )
    except subprocess.TimeoutExpired:
        return {"error": "timed out"}
    lines = done.stdout.strip().splitlines()
    if not lines or not lines[-1].startswith("{"):
        tail = (done.stderr.strip().splitlines() or ["?"])[-1]
        return {"error": tail[:120]}
    # a JSON line counts even from a child that then died (pyreqwest may abort at interpreter exit)
    return json.loads(lines[-1])


def median_of(runs: list[dict[str, Any]], key: str) -> float | None:
    values = [r[key] for r in runs if r.get(key) is not None and "error" not in r]
    return statistics.median(values) if values else None


def _test_certificate(directory: str) -> tuple[str, str, ssl.SSLContext]:
    """A trustme CA and a leaf for 127.0.0.1/localhost: (chain+key PEM for nginx, CA PEM, context)."""
    import trustme

    ca = trustme.CA()
    leaf = ca.issue_cert("127.0.0.1", "localhost")
    pem = os.path.join(directory, "server.pem")
    leaf.private_key_and_cert_chain_pem.write_to_path(pem)
    cafile = os.path.join(directory, "ca.pem")
    ca.cert_pem.write_to_path(cafile)
    return pem, cafile, ssl.create_default_context(cafile=cafile)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="3 rounds of short runs")
    p.add_argument("--rounds", type=int, default=None, help="rounds (default 7; --quick 3)")
    p.add_argument("--clients", default="", help="comma-separated subset of: " + ",".join(CLIENTS))
    p.add_argument("--workloads", default="", help="comma-separated subset of: " + ",".join(WORKLOADS))
    p.add_argument(
        "--compare-with",
        action="append",
        default=[],
        metavar="TREE",
        help="also run fastnet from this checkout (extensions built in place), as client fastnet@TREE",
    )
    p.add_argument("--record", action="store_true", help="add the table to benchmarks/RESULTS.md")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--client", help=argparse.SUPPRESS)
    p.add_argument("--url", help=argparse.SUPPRESS)
    p.add_argument("--cafile", help=argparse.SUPPRESS)
    p.add_argument("--workload", help=argparse.SUPPRESS)
    p.add_argument("--count", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--cpu", type=int, default=0, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        return child(args)

    rounds = args.rounds or (3 if args.quick else 7)
    wanted = [c for c in (args.clients.split(",") if args.clients else CLIENTS) if c]
    unknown = [c for c in wanted if c not in CLIENTS]
    if unknown:
        p.error(f"unknown clients {unknown}")
    if "raw" not in wanted:
        wanted.insert(0, "raw")  # the floor the ratios are taken against
    workloads = [w for w in (args.workloads.split(",") if args.workloads else WORKLOADS) if w]
    if any(w not in WORKLOADS for w in workloads):
        p.error(f"unknown workloads {workloads}")
    skipped = [c for c in wanted if not _have(CLIENTS[c][1])]
    clients: list[tuple[str, str | None]] = [(c, None) for c in wanted if c not in skipped]
    for tree in args.compare_with:
        clients.append((f"fastnet@{os.path.basename(os.path.abspath(tree))}", tree))

    common.clean_proxy_env()
    started = time.monotonic()
    out: list[str] = []
    with tempfile.TemporaryDirectory(prefix="fastnet-bench-tls-") as directory:
        pem, cafile, context = _test_certificate(directory)
        locations = f"        add_header {_RESUMED} $ssl_session_reused always;"
        with common.Nginx(tls=(pem, pem, context), locations=locations) as nginx:
            cpu = common.pin_for_sequential(nginx.pids())
            print(f"nginx on {nginx.url('/')}, client and nginx pinned to CPU {cpu}", file=sys.stderr)
            for workload in workloads:
                close, title = WORKLOADS[workload]
                count = (500 if args.quick else 1500) if close else (10000 if args.quick else 30000)
                names = [(c, t) for c, t in clients if workload in CLIENTS[c.split("@", 1)[0]][2]]
                runs: dict[str, list[dict[str, Any]]] = {c: [] for c, _ in names}
                for r in range(rounds):
                    for name, tree in names[r % len(names) :] + names[: r % len(names)]:
                        result = run_child(name, tree, nginx.url("/2b"), cafile, workload, count, cpu)
                        runs[name].append(result)
                        print(f"  {workload} round {r + 1}: {name} {result}", file=sys.stderr, flush=True)
                out.append(_table(title, close, runs))
    took = time.monotonic() - started
    notes = [
        f"Command: `{common.command_line()}`",
        f"Machine: {common.machine_notes({'OpenSSL (Python)': ssl.OPENSSL_VERSION})}",
        f"Medians over {rounds} interleaved rounds; each sample a fresh process (warm-up, then the "
        f"requests in {_SPLITS} sub-batches timed apart, their median), pinned with nginx's one worker "
        "to one CPU; ratio to the raw floor in the same run. The machine's 2 cores are shared with other "
        f"jobs (see the load average): quote medians, and ratios within one run. Took {took:.0f} s.",
    ]
    if skipped:
        notes.append("Not installed: " + ", ".join(skipped))
    body = "\n\n".join(out) + "\n\n" + "\n\n".join(notes) + "\n"
    print(body)
    if args.record:
        import fastnet

        label = "compiled build" if fastnet.compiled else "pure-Python build"
        common.record_results(f"HTTPS clients (bench_tls.py), fastnet {label}", body)
    return 0


def _table(title: str, close: bool, runs: dict[str, list[dict[str, Any]]]) -> str:
    floor = median_of(runs.get("raw", []), "us_per_request")
    rows = []
    for name, results in runs.items():
        us = median_of(results, "us_per_request")
        if us is None:
            errors = [r["error"] for r in results if "error" in r]
            rows.append([name, f"error: {errors[0]}" if errors else "-", "", "", *([""] if close else [])])
            continue
        cpu = median_of(results, "cpu_us")
        row = [name, f"{us:.1f}", f"{us / floor:.2f}×" if floor else "", f"{cpu:.1f}" if cpu else ""]
        if close:
            resumed = median_of(results, "resumed")
            row.append(f"{resumed:.0%}" if resumed is not None else "")
        rows.append(row)
    header = ["client", "µs/request", "÷ raw", "client CPU µs/request"]
    if close:
        header.append("handshakes resumed")
    return f"**{title}**\n\n" + common.markdown_table(header, rows)


if __name__ == "__main__":
    sys.exit(main())
