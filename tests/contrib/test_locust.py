"""``fastnet.contrib.locust.FastnetUser`` against Locust's ``FastHttpUser``: the shared table of behaviours,
cooperation under gevent (100 users in one process whose requests, and connect attempts, overlap), and a
real distributed run (a master and two workers on loopback) whose aggregated request count must equal
what nginx served.

Locust monkey-patches the process that imports it, so everything Locust runs in child processes
(``locust_child.py``, the ``locust`` command); this process only starts servers and reads the results.
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fastnet.testing import MockResponse, MockServer
from tests.support.contrib_cases import CASES, Case, Expect, Observed, Servers, check
from tests.support.testbed import Testbed

if importlib.util.find_spec("locust") is None:  # never import it here: it monkey-patches the process
    pytest.skip("locust is not installed", allow_module_level=True)

pytestmark = pytest.mark.testbed

HERE = Path(__file__).resolve().parent
CHILD = str(HERE.parent / "support" / "locust_child.py")
ENGINES = ("fastnet", "stock")

#: Cases the table does not run with Locust, and why.
NOT_RUN = {
    "post-stream": "Locust's clients send str/bytes bodies only",
    "reason-phrase": "FastHttpUser's response has no reason phrase",
}
#: Where FastnetUser differs from FastHttpUser on purpose: (case, engine) -> (why, expectation there).
DIFFERENCES: dict[tuple[str, str], tuple[str, dict[str, Any]]] = {
    ("proxy-socks5", "stock"): (
        "FastHttpUser has no SOCKS proxies",
        {"status": None, "error": "unsupported"},
    ),
    ("proxy-socks5h", "stock"): (
        "FastHttpUser has no SOCKS proxies",
        {"status": None, "error": "unsupported"},
    ),
    ("proxy-auth-missing-connect", "stock"): (
        "FastHttpUser raises a RuntimeError out of the task for a refused CONNECT, and reports nothing",
        {"raised": "RuntimeError"},
    ),
    ("repeated-headers", "stock"): (
        "FastHttpUser gives a repeated field as a list; FastnetUser joins it with ', ' as HttpUser does",
        {"headers": {"x-dup": ["a", "b"], "x-case": "MiXeD"}},
    ),
    ("read-timeout", "stock"): (
        "FastHttpUser reports a timeout as geventhttpclient's RetriesExceeded; FastnetUser as ReadTimeout",
        {"error": "failed"},
    ),
    ("connect-timeout", "stock"): (
        "FastHttpUser reports a timeout as geventhttpclient's RetriesExceeded; FastnetUser as ConnectTimeout",
        {"error": "failed"},
    ),
    ("truncated-body", "stock"): (
        "FastHttpUser reports the failure but its response looks whole (status 200, the partial body, "
        "no error); FastnetUser's response has status 0 and the ProtocolError",
        {"error": None, "status": 200, "body": b"only this", "unchecked_length": True, "event_failure": True},
    ),
    ("proxy-auth-creds", "stock"): (
        "FastHttpUser's proxy_host/proxy_port take no credentials",
        {"status": None, "body": None, "error": "unsupported"},
    ),
}
#: Locust reports failures, it does not raise: kinds the two clients cannot tell apart collapse.
_COLLAPSED = {
    "connect_timeout": "timeout",
    "read_timeout": "timeout",
    "closed": "failed",
    "protocol": "failed",
    "body": "failed",
    "proxy": "failed",
}


def child(*args: str, timeout: float = 90) -> Any:
    env = dict(os.environ)
    for name in list(env):
        if name.lower() in ("http_proxy", "https_proxy", "all_proxy", "no_proxy"):
            del env[name]
    done = subprocess.run(
        [sys.executable, CHILD, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd=str(HERE),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def servers(testbed: Testbed) -> Iterator[Servers]:
    s = Servers(testbed)
    yield s
    s.close()


def _runnable(case: Case) -> bool:
    return case.id not in NOT_RUN


def _spec(servers: Servers, engine: str) -> dict[str, Any]:
    cases = []
    for case in CASES:
        if (
            not _runnable(case)
            or servers.skip_reason(case)
            or DIFFERENCES.get((case.id, engine), ("", {}))[1].get("error") == "unsupported"
        ):
            continue
        cases.append(
            {
                "id": case.id,
                "url": servers.url(case),
                "method": case.method,
                "body": case.body.decode("latin-1") if case.body is not None else None,
                "headers": list(case.headers),
                "timeout": list(case.timeout),
                "proxy": servers.proxy_url(case),
                "verify": case.verify,
                "stream": case.stream,
                "header_names": sorted(set(case.expect.headers) | set(case.expect.header_contains)),
            }
        )
    return {"cases": cases, "ca": servers.ca_path}


@pytest.fixture(scope="module", params=ENGINES)
def table(
    request: pytest.FixtureRequest, servers: Servers, tmp_path_factory: Any
) -> tuple[str, dict[str, Any]]:
    path = tmp_path_factory.mktemp("locust") / f"spec-{request.param}.json"
    path.write_text(json.dumps(_spec(servers, request.param)))
    results = child("table", request.param, str(path))
    return request.param, {r["id"]: r for r in results}


@pytest.mark.parametrize("case", CASES, ids=str)
def test_table(table: tuple[str, dict[str, Any]], case: Case, servers: Servers) -> None:
    engine, results = table
    if case.id in NOT_RUN:
        pytest.skip(NOT_RUN[case.id])
    reason = servers.skip_reason(case)
    if reason:
        pytest.skip(reason)
    difference = DIFFERENCES.get((case.id, engine))
    if difference is not None and difference[1].get("error") == "unsupported":
        pytest.skip(difference[0])
    got = results[case.id]
    if "raised" in got:  # the client raised out of the task: no failure reported, the user's task ends
        seen_raise = got["raised"].partition(":")[0]
        expected = (difference or ("", {}))[1].get("raised")
        assert seen_raise == expected, f"{engine}: the client raised {got['raised']}"
        return
    expect = case.expect
    if expect.error is not None:
        expect = Expect(error=_COLLAPSED.get(expect.error, expect.error))
    else:
        expect = Expect(**{**expect.__dict__, "reason": None, "history": None})
    unchecked_length = event_failure = False
    if difference is not None:
        changes = dict(difference[1])
        unchecked_length = changes.pop("unchecked_length", False)
        event_failure = changes.pop("event_failure", False)
        expect = Expect(**{**expect.__dict__, **changes})
    error = got["error"]
    if error in ("connect_timeout", "read_timeout"):
        error = "timeout"
    elif error == "proxy":
        error = "failed"
    is_failure = error is not None and error != "status"
    seen = Observed(
        None if is_failure else got["status"],
        body=None if got.get("body") is None else got["body"].encode("latin-1"),
        headers=got["headers"],
        first_chunk=got.get("first_chunk", "").encode("latin-1") if got.get("first_chunk") else None,
        error=error if is_failure else None,
        error_type=got["error_type"],
    )
    problems = check(case, expect, seen, servers)
    # every request fires Locust's request event once, a failure exactly when it failed or said >= 400
    if got["events"] != 1:
        problems.append(f"{got['events']} request events")
    else:
        failed = got["event_exception"] is not None
        should_fail = event_failure or expect.error is not None or (expect.status or 0) >= 400
        if failed != should_fail:
            problems.append(f"the request event's exception is {got['event_exception']!r}")
        if got["event_name"] != got.get("url", got["event_name"]) and got["event_name"] != servers.url(case):
            problems.append(f"event name {got['event_name']!r}")
        if (
            seen.body is not None
            and not case.stream
            and not unchecked_length
            and got["event_length"] != len(seen.body)
        ):
            problems.append(f"event response_length {got['event_length']} != {len(seen.body)}")
    assert not problems, f"{engine}: {problems}"


def test_fastnet_user_api() -> None:
    with MockServer() as server, MockServer() as other:
        seen: list[Any] = []

        def answer(request: Any) -> MockResponse:
            seen.append(request)
            if request.path.endswith("/ok"):  # "/@host:port/ok" too
                return MockResponse(200, body=b"ok")
            if request.path == "/json":
                return MockResponse(200, headers={"Content-Type": "application/json"}, body=b'{"a": 1}')
            if request.path == "/echo":
                return MockResponse(200, body=request.body)
            if request.path == "/set-cookie":
                return MockResponse(200, headers={"Set-Cookie": "sid=7; Path=/"})
            if request.path == "/needs-cookie":
                return MockResponse(200, body=(request.header("Cookie") or "none").encode())
            if request.path == "/redirect":
                return MockResponse(302, headers={"Location": "/ok"})
            return MockResponse(404)

        server.dispatcher = answer
        other.enqueue(MockResponse(200))
        there = other.url("").rstrip("/")
        result = child("api", server.url(""), there)
    names = [e["name"] for e in result["events"]]
    assert names == [
        "/missing",
        "grouped",
        "renamed",
        "/json",
        "/echo",
        "/set-cookie",
        "/needs-cookie",
        "/needs-cookie",
        "/redirect",
        "/redirect",
        there + "/elsewhere",
        "@" + there.split("://", 1)[1] + "/ok",
    ]
    exceptions = [e["exception"] for e in result["events"]]
    assert exceptions[0] is None and result["missing_status"] == 404  # success() overrides the 404
    assert exceptions[1] == "CatchResponseError('not what I wanted')"
    assert all(e is None for e in exceptions[2:]), exceptions
    assert result["js"] == {"a": 1}
    assert "not JSON compliant" in result.get("nan_refused", "")
    by_path = {r.path: r for r in seen}
    assert (
        by_path["/echo"].header("Content-Type") == "application/json" and by_path["/echo"].body == b'{"a": 1}'
    )
    cookies = [r.header("Cookie") for r in seen if r.path == "/needs-cookie"]
    assert cookies == ["sid=7", None]  # one jar per user
    assert all(r.header("Authorization") == "Basic YWxpY2U6czNjcmV0" for r in seen)  # from the host URL
    assert result["redirect_status"] == 302 and result["followed_status"] == 200
    # the host URL's credentials stay on its origin; a path that looks like user-info stays a path
    elsewhere = other.take_request()
    assert elsewhere.path == "/elsewhere" and elsewhere.header("Authorization") is None
    assert other.request_count == 1 and seen[-1].path == "/@" + there.split("://", 1)[1] + "/ok"


# ------------------------------------------------------------------------------------ gevent


def test_100_users_overlap_in_one_process() -> None:
    """Every response takes 1 s: 100 users finish in a few seconds only if their waits overlap."""
    with MockServer() as server:
        server.default_response = MockResponse(200, body=b"slow", head_delay=1.0)
        result = child("overlap", "fastnet", server.url("/slow"), "100")
        assert server.request_count == 100
    assert result["errors"] == [] and result["requests"] == 100 and result["done"] == 100
    assert result["peak"] >= 50, result  # at least half of them were waiting at the same moment
    assert result["wall"] < 15, result  # one after another, it would take 100 s


def test_100_users_connect_attempts_overlap(testbed: Testbed) -> None:
    """Connects to an address that drops SYNs: each times out after 1 s, all at about the same time."""
    if not testbed.blackhole_available:
        pytest.skip("the testbed's blackhole (nft) is not available")
    url = f"http://{testbed.blackhole_host}:{testbed.blackhole_port}/x"
    result = child("overlap", "fastnet", url, "100", "1.0")
    assert result["requests"] == 100 and len(result["errors"]) == 5  # (the first five are kept)
    assert "ConnectTimeout" in result["errors"][0]
    assert result["peak"] >= 50 and result["wall"] < 15, result


def test_gevent_keep_alive_reuse_after_idle(server: MockServer) -> None:
    server.default_response = MockResponse(200, body=b"ok")
    result = child("gevent-idle", server.url("/"))
    assert result["status"] == 200 and result["connections"] == 1
    assert result["reuse_s"] < 1.0, result  # the health check of an idle connection does not wait


def test_gevent_timeouts_hold_when_fastnet_was_imported_first(server: MockServer) -> None:
    server.default_response = MockResponse(200, body=b"late", head_delay=3.0)
    result = child("gevent-late", server.url("/"))
    assert result["error"] == "ReadTimeout" and result["elapsed"] < 2.5 and result["others_done"], result


# ------------------------------------------------------------------------------- distributed


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _access_count(log: Path, token: str) -> int:
    try:
        return sum(1 for line in log.read_text(errors="replace").splitlines() if f"run={token}" in line)
    except OSError:
        return -1


def test_distributed_master_and_two_workers(testbed: Testbed, tmp_path: Path) -> None:
    log = Path(testbed.root) / "nginx" / "logs" / "access.log"
    if _access_count(log, "x") < 0:
        pytest.skip("nginx's access log is not readable")
    token = uuid.uuid4().hex
    port = _free_port()
    env = dict(os.environ, FASTNET_LOCUST_TOKEN=token)
    for name in list(env):
        if name.lower() in ("http_proxy", "https_proxy", "all_proxy", "no_proxy"):
            del env[name]
    locust = [sys.executable, "-m", "locust", "-f", str(HERE.parent / "support" / "locustfile_fastnet.py")]
    host = testbed.url("/").rstrip("/")
    common = ["--loglevel", "WARNING"]
    master = subprocess.Popen(
        [
            *locust,
            "--master",
            "--headless",
            "--master-bind-host",
            "127.0.0.1",
            "--master-bind-port",
            str(port),
            "--expect-workers",
            "2",
            "--expect-workers-max-wait",
            "30",
            "-u",
            "20",
            "-r",
            "20",
            "-t",
            "3s",
            "-s",
            "10",
            "--host",
            host,
            "--json",
            "--only-summary",
            *common,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=str(tmp_path),
    )
    workers = [
        subprocess.Popen(
            [*locust, "--worker", "--master-host", "127.0.0.1", "--master-port", str(port), *common],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=str(tmp_path),
        )
        for _ in range(2)
    ]
    try:
        out, err = master.communicate(timeout=90)
        for worker in workers:
            worker.wait(timeout=30)
    finally:
        for proc in (master, *workers):
            if proc.poll() is None:
                proc.kill()
                proc.wait(5)
    assert master.returncode == 0, err[-3000:]
    stats = json.loads(out[out.index("[") :])
    entries = [s for s in stats if s["name"] == "/2b"]
    assert len(entries) == 1, stats
    total, failures = entries[0]["num_requests"], entries[0]["num_failures"]
    assert total > 100 and failures == 0, entries[0]
    deadline = time.monotonic() + 10
    served = _access_count(log, token)
    while served != total and time.monotonic() < deadline:  # nginx writes its line after answering
        time.sleep(0.1)
        served = _access_count(log, token)
    assert served == total, f"nginx served {served}, the master counted {total}"
