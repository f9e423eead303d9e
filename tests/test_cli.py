"""The ``fastnet get`` command line, run as ``python -m fastnet`` in a subprocess."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

from fastnet.testing import MockResponse, MockServer

ROOT = Path(__file__).resolve().parent.parent


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        env.pop(name, None)
    return subprocess.run(
        [sys.executable, "-m", "fastnet", *args],
        capture_output=True,
        text=True,
        timeout=30,
        env=env,
        cwd=str(ROOT),
    )


def test_cli_get_without_url_uses_embedded_server() -> None:
    result = _run("get")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "HTTP/1.1 200 OK"
    assert "X-Served-By: fastnet.testing.MockServer" in lines
    assert "hello from fastnet's embedded MockServer" in result.stdout


def test_cli_get_url(server: MockServer) -> None:
    server.enqueue(MockResponse(201, headers={"X-Reply": "yes"}, body=b"created body"))
    result = _run("get", server.url("/path?q=1"))
    assert result.returncode == 0, result.stderr
    head, _, body = result.stdout.partition("\n\n")
    assert head.splitlines()[0] == "HTTP/1.1 201 Created"
    assert "X-Reply: yes" in head.splitlines()
    assert body == "created body"
    rec = server.take_request()
    assert rec.request_line == "GET /path?q=1 HTTP/1.1"


def test_cli_headers_and_data(server: MockServer) -> None:
    server.enqueue(MockResponse(200, body=b"ok"))
    result = _run("get", server.url("/post"), "-H", "X-One: 1", "-H", "Accept: text/plain", "-d", "payload")
    assert result.returncode == 0, result.stderr
    rec = server.take_request()
    assert rec.method == "POST" and rec.body == b"payload"
    assert rec.header("x-one") == "1" and rec.header("accept") == "text/plain"


def test_cli_method_override(server: MockServer) -> None:
    server.enqueue(MockResponse(200))
    result = _run("get", server.url("/"), "-X", "PUT", "-d", "x")
    assert result.returncode == 0, result.stderr
    assert server.take_request().method == "PUT"


def test_cli_verbose_shows_request_and_timings(server: MockServer) -> None:
    server.enqueue(MockResponse(200, body=b"verbose"))
    result = _run("get", "-v", server.url("/v"))
    assert result.returncode == 0, result.stderr
    assert "> GET " in result.stdout and "> Host: 127.0.0.1:" in result.stdout
    assert "HTTP/1.1 200 OK" in result.stdout
    # every event of the call, from LoggingEventListener, then the response's timings
    for event in (
        "call start",
        "connect start",
        "request headers end",
        "response headers end 200 OK",
        "call end",
    ):
        assert event in result.stderr
    assert " ms " in result.stderr and "<Timings total=" in result.stderr


def test_cli_error_exit() -> None:
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    result = _run("get", f"http://127.0.0.1:{port}/", "--timeout", "2")
    assert result.returncode == 1
    assert "ConnectError" in result.stderr and result.stdout == ""


def test_cli_bad_url_exit() -> None:
    result = _run("get", "ftp://127.0.0.1/")
    assert result.returncode == 1
    assert "scheme" in result.stderr


def test_cli_bad_header_argument() -> None:
    result = _run("get", "-H", "no colon here")
    assert result.returncode == 2
    assert "Name: value" in result.stderr


def test_cli_requires_a_command() -> None:
    result = _run()
    assert result.returncode == 2
