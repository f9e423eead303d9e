"""``fastnet.contrib.scrapy.FastnetDownloadHandler`` against Scrapy's default handler: the shared table of
behaviours (plus Scrapy's size limits and data-loss rules), a real spider crawling a 200-page site served
by nginx on loopback, and two Scrapy processes sharing one crawl through scrapy-redis and a redis-server
this test starts, which together fetch every page exactly once.

Scrapy runs in child processes (``scrapy_child.py``): a crawl owns its reactor and its process.
"""

from __future__ import annotations

import collections
import importlib.util
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from fastnet.testing import MockResponse, MockServer, SocketPolicy
from tests.support.contrib_cases import (
    BAD_CONNECT_REPLIES,
    CASES,
    Case,
    ConnectProxy,
    Expect,
    Observed,
    Servers,
    check,
)
from tests.support.testbed import Testbed

if importlib.util.find_spec("scrapy") is None:
    pytest.skip("scrapy is not installed", allow_module_level=True)

pytestmark = pytest.mark.testbed

HERE = Path(__file__).resolve().parent
CHILD = str(HERE.parent / "support" / "scrapy_child.py")
ENGINES = ("fastnet", "stock")

#: Scrapy's own rules, the same for both handlers, where the table's neutral expectation does not hold.
SCRAPY_RULES: dict[str, tuple[str, dict[str, Any]]] = {
    "tls-untrusted": ("Scrapy does not verify certificates (DOWNLOAD_VERIFY_CERTIFICATES = False)", {}),
    "proxy-auth-missing-http": ("HTTPERROR_ALLOW_ALL: the 407 is a response", {}),
}
#: Cases the table does not run with Scrapy, and why.
NOT_RUN = {
    "post-stream": "Scrapy's request bodies are bytes",
    "stream-first-piece": "Scrapy reads whole bodies (StopDownload is the way to stop early)",
    "reason-phrase": "Scrapy's responses have no reason phrase",
}
#: Where FastnetDownloadHandler differs from the default handler on purpose: (case, engine) -> (why, expect).
DIFFERENCES: dict[tuple[str, str], tuple[str, dict[str, Any]]] = {
    ("proxy-socks5", "stock"): ("Scrapy's handler has no SOCKS proxies", {"error": "unsupported"}),
    ("proxy-socks5h", "stock"): ("Scrapy's handler has no SOCKS proxies", {"error": "unsupported"}),
}
#: The table's error kinds as Scrapy's exceptions.
KINDS = {
    "connect_timeout": "DownloadTimeoutError",
    "read_timeout": "DownloadTimeoutError",
    "refused": "DownloadConnectionRefusedError",
    "closed": "DownloadFailedError",
    "protocol": "DownloadFailedError",
    "body": "ResponseDataLossError",
    "proxy": "TunnelError",
    "cancelled": "DownloadCancelledError",
    "unsupported": "UnsupportedURLSchemeError",
}

#: Scrapy's size and data-loss rules, as more cases (with the request meta each one sets).
BIG = b"x" * 300_000
EXTRA = (
    Case(
        "maxsize-declared",
        "nginx",
        "/1m.bin",
        expect=Expect(error="cancelled"),
    ),
    Case(
        "maxsize-streamed",
        "mock",
        "/big-chunked",
        MockResponse(200, body=BIG, chunked=True, chunk_size=16_384),
        expect=Expect(error="cancelled"),
    ),
    Case("warnsize", "nginx", "/1m.bin", expect=Expect(200, body_length=1 << 20)),
    Case(
        "dataloss-allowed",
        "mock",
        "/short-allowed",
        MockResponse(
            raw=b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly this",
            policy=SocketPolicy.CLOSE_AFTER_RESPONSE,
        ),
        expect=Expect(200, body=b"only this"),
    ),
)
META: dict[str, dict[str, Any]] = {
    "maxsize-declared": {"download_maxsize": 100_000},
    "maxsize-streamed": {"download_maxsize": 100_000},
    "warnsize": {"download_warnsize": 1000},
    "dataloss-allowed": {"download_fail_on_dataloss": False},
}


def _clean_env() -> dict[str, str]:
    env = dict(os.environ)
    for name in list(env):
        if name.lower() in ("http_proxy", "https_proxy", "all_proxy", "no_proxy"):
            del env[name]
    return env


def child(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, CHILD, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=_clean_env(),
        cwd=str(HERE),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done


@pytest.fixture(scope="module")
def servers(testbed: Testbed) -> Iterator[Servers]:
    s = Servers(testbed, EXTRA)
    yield s
    s.close()


def _spec(servers: Servers) -> dict[str, Any]:
    cases = []
    for case in (*CASES, *EXTRA):
        if case.id in NOT_RUN or servers.skip_reason(case):
            continue
        entry = {
            "id": case.id,
            "url": servers.url(case),
            "method": case.method,
            "body": case.body.decode("latin-1") if case.body is not None else None,
            "headers": list(case.headers),
            "timeout": case.timeout[1] if case.expect.error != "connect_timeout" else case.timeout[0],
            "proxy": servers.proxy_url(case),
            "header_names": sorted(set(case.expect.headers) | set(case.expect.header_contains)),
        }
        entry.update(META.get(case.id, {}))
        cases.append(entry)
    return {"cases": cases}


@pytest.fixture(scope="module", params=ENGINES)
def table(
    request: pytest.FixtureRequest, servers: Servers, tmp_path_factory: Any
) -> tuple[str, dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("scrapy")
    spec, out = tmp / "spec.json", tmp / f"out-{request.param}.json"
    spec.write_text(json.dumps(_spec(servers)))
    child("table", request.param, str(spec), str(out))
    return request.param, json.loads(out.read_text())


@pytest.mark.parametrize("case", (*CASES, *EXTRA), ids=str)
def test_table(table: tuple[str, dict[str, Any]], case: Case, servers: Servers) -> None:
    engine, results = table
    if case.id in NOT_RUN:
        pytest.skip(NOT_RUN[case.id])
    reason = servers.skip_reason(case)
    if reason:
        pytest.skip(reason)
    got = results.get(case.id)
    assert got is not None, f"{engine}: no result for {case.id}"
    expect = case.expect
    if case.id in SCRAPY_RULES:
        expect = Expect(
            **{**expect.__dict__, "error": None, "status": expect.status or 200, **SCRAPY_RULES[case.id][1]}
        )
    expect = Expect(**{**expect.__dict__, "reason": None, "first_chunk": False})
    difference = DIFFERENCES.get((case.id, engine))
    if difference is not None:
        expect = Expect(**{**expect.__dict__, **difference[1]})
    if "error" in got:
        wanted = KINDS.get(expect.error or "", expect.error)
        problems = [] if got["error"] == wanted else [f"{got['error']} ({got['message']}), expected {wanted}"]
        if expect.error is None:
            problems = [f"expected a response, got {got['error']}: {got['message']}"]
        assert not problems, f"{engine}: {problems}"
        return
    seen = Observed(
        got["status"],
        body=got["body"].encode("latin-1"),
        headers=got["headers"],
        history=tuple(got["redirects"]),
    )
    if expect.error is not None:
        pytest.fail(f"{engine}: expected {KINDS.get(expect.error)}, got status {got['status']}")
    problems = check(case, expect, seen, servers)
    if case.id == "warnsize" and not got["warnings"]:
        problems.append("no warning about the warn size")
    if case.id == "dataloss-allowed" and got["flags"] != ["dataloss"]:
        problems.append(f"flags {got['flags']}")
    if case.target.startswith("nginx") and case.proxy is None and got["ip_address"] != "127.0.0.1":
        problems.append(f"ip_address {got['ip_address']}")
    assert not problems, f"{engine}: {problems}"


# ------------------------------------------------------------------------------------ a crawl


def _site(www: Path, pages: int = 200) -> tuple[Path, str]:
    """``pages`` HTML pages in a fresh directory: page i links to 2i+1, 2i+2 and i+1 (never back to 0)."""
    name = f"crawl-{uuid.uuid4().hex[:12]}"
    root = www / name
    root.mkdir()
    for i in range(pages):
        links = " ".join(
            f'<a href="{j}.html">page {j}</a>' for j in (2 * i + 1, 2 * i + 2, i + 1) if 0 < j < pages
        )
        (root / f"{i}.html").write_text(f"<html><head><title>{i}</title></head><body>{links}</body></html>")
    for path in (root, *root.iterdir()):
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    return root, name


@pytest.fixture
def site(testbed: Testbed) -> Iterator[str]:
    www = Path(testbed.root) / "nginx" / "www"
    if not os.access(www, os.W_OK):
        pytest.skip("cannot write pages into the testbed's nginx root")
    root, name = _site(www)
    yield name
    shutil.rmtree(root, ignore_errors=True)


@pytest.mark.parametrize("engine", ENGINES)
def test_bind_addresses(engine: str, tmp_path: Path) -> None:
    """DOWNLOAD_BIND_ADDRESS for every request, the bindaddress meta for one: the server sees each as
    the client's address, with both handlers."""
    with MockServer() as server:
        server.dispatcher = lambda r: MockResponse(200, body=r.path[1:].encode())  # the two run at once
        cases: list[dict[str, Any]] = [
            {"id": "setting", "url": server.url("/a"), "method": "GET", "body": None, "headers": [],
             "timeout": 10, "proxy": None, "header_names": []},
            {"id": "meta", "url": server.url("/b"), "method": "GET", "body": None, "headers": [],
             "timeout": 10, "proxy": None, "header_names": [], "bindaddress": "127.0.0.2"},
        ]  # fmt: skip
        spec, out = tmp_path / "spec.json", tmp_path / "out.json"
        spec.write_text(json.dumps({"cases": cases, "settings": {"DOWNLOAD_BIND_ADDRESS": "127.0.0.3"}}))
        child("table", engine, str(spec), str(out))
        results = json.loads(out.read_text())
        assert results["setting"].get("body") == "a" and results["meta"].get("body") == "b", results
        seen = {r.path: r.client_address for r in (server.take_request(), server.take_request())}
    assert seen["/a"] is not None and seen["/a"][0] == "127.0.0.3"
    assert seen["/b"] is not None and seen["/b"][0] == "127.0.0.2"


@pytest.mark.parametrize("engine", ENGINES)
def test_crawl_of_a_200_page_site(engine: str, site: str, testbed: Testbed, tmp_path: Path) -> None:
    out = tmp_path / "crawl.json"
    child("crawl", engine, testbed.url(f"/{site}/0.html"), str(out))
    result = json.loads(out.read_text())
    urls = [item["url"] for item in result["items"]]
    assert sorted(urls) == sorted(testbed.url(f"/{site}/{i}.html") for i in range(200))
    assert all(item["status"] == 200 for item in result["items"])
    assert result["stats"].get("finish_reason") == "finished"
    assert "downloader/exception_count" not in result["stats"], result["stats"]


# -------------------------------------------------------------------------------- distributed


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("redis-server is not installed (Debian package redis-server)")
    if importlib.util.find_spec("scrapy_redis") is None:
        pytest.skip("scrapy-redis is not installed")
    port = _free_port()
    server = subprocess.Popen(
        [
            binary,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(tmp_path),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                    s.sendall(b"PING\r\n")
                    if s.recv(16).startswith(b"+PONG"):
                        break
            except OSError:
                pass
            assert time.monotonic() < deadline, "redis-server did not start"
            time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}"
    finally:
        server.terminate()
        try:
            server.wait(5)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(5)


def _redis_command(url: str, *words: str) -> bytes:
    host, _, port = url.removeprefix("redis://").partition(":")
    parts = [f"*{len(words)}\r\n".encode()]
    for word in words:
        data = word.encode()
        parts.append(b"$%d\r\n%s\r\n" % (len(data), data))
    with socket.create_connection((host, int(port)), timeout=5) as s:
        s.sendall(b"".join(parts))
        return s.recv(4096)


def test_two_processes_share_one_crawl_through_redis(redis_url: str, tmp_path: Path) -> None:
    """Every page exactly once, between the two of them, each taking part (the pages are slow enough).

    Each process stays open while idle until the test sets NAME:stop, which it does once the server has
    answered every page; every wait is bounded and says what it waited for."""
    with MockServer() as server:
        pages = 200

        def page(request: Any) -> MockResponse:
            i = int(request.path.strip("/").removesuffix(".html") or 0)
            links = " ".join(
                f'<a href="/{j}.html">{j}</a>' for j in (2 * i + 1, 2 * i + 2, i + 1) if 0 < j < pages
            )
            body = f"<html><body>{links}</body></html>".encode()
            return MockResponse(200, headers={"Content-Type": "text/html"}, body=body, head_delay=0.2)

        server.dispatcher = page
        name = f"site{uuid.uuid4().hex[:8]}"
        outs = [tmp_path / f"worker{n}.json" for n in (1, 2)]
        logs = [tmp_path / f"worker{n}.log" for n in (1, 2)]  # files, not pipes: nothing blocks on a pipe
        workers = []
        for out, log in zip(outs, logs, strict=True):
            with open(log, "w") as err:
                workers.append(
                    subprocess.Popen(
                        [sys.executable, CHILD, "redis", "fastnet", redis_url, name, str(out)],
                        stdout=subprocess.DEVNULL,
                        stderr=err,
                        env=_clean_env(),
                        cwd=str(HERE),
                    )
                )

        def tails() -> str:
            return "\n".join(f"{log.name}: {log.read_text(errors='replace')[-1500:]}" for log in logs)

        def wait_for(what: str, seconds: float, done: Callable[[], bool]) -> None:
            deadline = time.monotonic() + seconds
            while not done():
                assert all(w.poll() is None for w in workers), f"a Scrapy process ended {what}\n{tails()}"
                assert time.monotonic() < deadline, f"{what}: not within {seconds:g} s\n{tails()}"
                time.sleep(0.05)

        try:
            wait_for(
                "before opening its spider",
                60,
                lambda: all(Path(str(out) + ".ready").exists() for out in outs),
            )
            seed = json.dumps({"url": server.url("/0.html")})
            assert _redis_command(redis_url, "LPUSH", f"{name}:start_urls", seed).startswith(b":1")
            wait_for(
                f"before the server answered {pages} requests", 60, lambda: server.request_count >= pages
            )
            assert _redis_command(redis_url, "SET", f"{name}:stop", "1").startswith(b"+OK")
            for worker in workers:
                try:
                    worker.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    pytest.fail(f"a Scrapy process did not close within 30 s of {name}:stop\n{tails()}")
                assert worker.returncode == 0, tails()
        finally:
            for worker in workers:
                if worker.poll() is None:
                    worker.kill()
                    worker.wait(5)
        served = collections.Counter(request.path for request in _drain(server))
    results = [json.loads(out.read_text()) for out in outs]
    fetched = [collections.Counter(item["url"] for item in r["items"]) for r in results]
    together = fetched[0] + fetched[1]
    assert sorted(together) == sorted(server.url(f"/{i}.html") for i in range(pages))
    assert max(together.values()) == 1, together.most_common(3)  # no page twice, even across processes
    assert all(len(f) > 0 for f in fetched), [len(f) for f in fetched]  # both took part
    assert served == collections.Counter({f"/{i}.html": 1 for i in range(pages)})  # what the server saw


def _drain(server: MockServer) -> list[Any]:
    out = []
    while True:
        try:
            out.append(server.take_request(timeout=0.2))
        except TimeoutError:
            return out


# ------------------------------------------------------------------------- proxies that misbehave

#: The error for each of ``BAD_CONNECT_REPLIES``: (fastnet's, the default handler's).
_CONNECT_ERRORS: dict[int, tuple[str, str]] = {
    10001: ("TunnelError", "TunnelError"),
    10002: ("TunnelError", "TunnelError"),
    # cut short: the default handler waits for the end of the head until download_timeout
    10003: ("TunnelError", "DownloadTimeoutError"),
    10004: ("TunnelError", "DownloadTimeoutError"),
}


@pytest.fixture(scope="module")
def bad_connect_proxy() -> Iterator[str]:
    proxy = ConnectProxy(BAD_CONNECT_REPLIES)
    yield proxy.url
    proxy.close()


@pytest.mark.parametrize("engine", ENGINES)
def test_malformed_connect_replies_and_a_407_from_a_site(
    engine: str, bad_connect_proxy: str, server: MockServer, tmp_path: Path
) -> None:
    """A CONNECT answered with garbage, another status than 200 or a head cut short is Scrapy's
    ``TunnelError``; a 407 from a site reached without a proxy is a response, as the default handler
    returns it."""
    server.enqueue(MockResponse(407, headers=[("Proxy-Authenticate", 'Basic realm="site"')], body=b"who?"))
    cases: list[dict[str, Any]] = [
        {
            "id": str(port),
            "url": f"https://127.0.0.1:{port}/",
            "method": "GET",
            "body": None,
            "headers": [],
            "timeout": 1.5,
            "proxy": bad_connect_proxy.replace("http://", "http://user:s3cret@"),
            "header_names": [],
        }
        for port in _CONNECT_ERRORS
    ]
    cases.append({**cases[0], "id": "site-407", "url": server.url("/"), "proxy": None, "timeout": 5})
    spec, out = tmp_path / "spec.json", tmp_path / "out.json"
    spec.write_text(json.dumps({"cases": cases}))
    child("table", engine, str(spec), str(out))
    results = json.loads(out.read_text())
    for port, (fastnet_error, stock_error) in _CONNECT_ERRORS.items():
        got = results[str(port)]
        assert got.get("error") == (fastnet_error if engine == "fastnet" else stock_error), (port, got)
        assert "s3cret" not in got["message"]
    assert results["site-407"].get("status") == 407 and results["site-407"]["body"] == "who?"
