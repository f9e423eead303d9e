"""The ``fastnet get`` command line as curl users expect it, run as ``python -m fastnet`` in a subprocess
against MockServer: every flag, curl's exit codes, ``-w`` and ``-o`` with and without a terminal."""

from __future__ import annotations

import base64
import json
import os
import pty
import re
import select
import signal
import socket
import ssl
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import fastnet
from fastnet.testing import MockResponse, MockServer, SocketPolicy
from tests.support.clients import ca_path
from tests.support.testbed import Testbed

ROOT = Path(__file__).resolve().parents[2]
SECRET = "s3cr3t-pw"


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        env.pop(name, None)
    env.pop("SSL_CERT_FILE", None)
    env.pop("SSL_CERT_DIR", None)
    return env


def _run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fastnet", *args],
        capture_output=True,
        text=True,
        timeout=30,
        env=_env(),
        cwd=str(ROOT),
        input=stdin,
    )


def _run_bytes(*args: str) -> subprocess.CompletedProcess[bytes]:
    """``_run`` with stdout and stderr as the bytes written."""
    return subprocess.run(
        [sys.executable, "-m", "fastnet", *args], capture_output=True, timeout=30, env=_env(), cwd=str(ROOT)
    )


def _run_on_terminal(*args: str, stderr_too: bool = False) -> tuple[int, bytes, bytes]:
    """Run ``fastnet`` with stdout (and with ``stderr_too`` stderr) on a pseudo-terminal: the exit
    status, what the terminal received (newlines as CR LF), and stderr when it went to a pipe."""
    primary, secondary = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "fastnet", *args],
        stdout=secondary,
        stderr=secondary if stderr_too else subprocess.PIPE,
        env=dict(_env(), COLUMNS="100", TERM="xterm"),
        cwd=str(ROOT),
    )
    os.close(secondary)
    seen = b""
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            ready, _, _ = select.select([primary], [], [], 20)
            if not ready:
                break
            try:
                piece = os.read(primary, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not piece:
                break
            seen += piece
        code = process.wait(20)
        err = process.stderr.read() if process.stderr is not None else b""
    finally:
        os.close(primary)
        if process.poll() is None:
            process.kill()
            process.wait()
        if process.stderr is not None:
            process.stderr.close()
    return code, seen, err


def _free_port() -> int:
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port: int = probe.getsockname()[1]
    probe.close()
    return port


# -- output ---------------------------------------------------------------------------------------------


def test_body_only_by_default_so_it_pipes(server: MockServer) -> None:
    server.enqueue(MockResponse(201, headers={"Content-Type": "application/json"}, body=b'{"a": 1}'))
    result = _run("get", server.url("/path?q=1"))
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"a": 1} and result.stderr == ""
    assert server.take_request().request_line == "GET /path?q=1 HTTP/1.1"


def test_without_url_the_embedded_server_answers() -> None:
    result = _run("get")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "hello from fastnet's embedded MockServer\n"


def test_a_url_without_scheme_is_http(server: MockServer) -> None:
    server.enqueue(MockResponse(200, body=b"plain"))
    result = _run("get", f"127.0.0.1:{server.port}/x")
    assert (result.returncode, result.stdout) == (0, "plain")


def test_include_adds_the_status_line_and_headers(server: MockServer) -> None:
    server.enqueue(MockResponse(201, headers={"X-Reply": "yes"}, body=b"created body"))
    result = _run("get", "-i", server.url("/"))
    assert result.returncode == 0, result.stderr
    head, _, body = result.stdout.replace("\r\n", "\n").partition("\n\n")
    assert head.splitlines()[0] == "HTTP/1.1 201 Created" and "X-Reply: yes" in head.splitlines()
    assert body == "created body"


def test_head_sends_head_and_prints_the_headers(server: MockServer) -> None:
    server.enqueue(MockResponse(200, headers={"X-Head": "1"}, body=b"never printed"))
    result = _run("get", "-I", server.url("/"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("HTTP/1.1 200 OK\n") and "X-Head: 1" in result.stdout
    assert "never printed" not in result.stdout
    assert server.take_request().method == "HEAD"


def test_verbose_shows_request_events_and_timings_on_stderr(server: MockServer) -> None:
    server.enqueue(MockResponse(200, body=b"verbose"))
    result = _run("get", "-v", "-u", f"alice:{SECRET}", server.url("/v"))
    assert result.returncode == 0, result.stderr
    assert result.stdout == "verbose"
    assert "> GET /v HTTP/1.1" in result.stderr and "> Host: 127.0.0.1:" in result.stderr
    assert "> Authorization: Basic ***" in result.stderr and SECRET not in result.stderr
    assert "< HTTP/1.1 200 OK" in result.stderr
    for event in ("call start", "connect start", "response headers end 200 OK", "call end"):
        assert event in result.stderr
    assert "<Timings total=" in result.stderr


# -- what a server says, on a terminal ----------------------------------------------------------------

#: Heads whose reason phrase sets the terminal's title, and whose headers clear the screen or back up over
#: what was printed: with C1 controls, which HTTP allows as obs-text (header bytes are decoded as
#: latin-1, so 0x9d is OSC, 0x9c ST, 0x9b CSI, 0x85 NEL), and with C0 ones (ESC, BEL, BS), which a
#: parser may refuse; then: (the raw head, its reason as shown, a header as shown, Content-Type as shown).
HOSTILE = {
    "c1": (
        b"HTTP/1.1 404 No\x9d0;pwned\x9cpe\r\nX-Evil: a\x9b2Jb\x85c\r\nContent-Type: text/\x9b2J\r\n",
        b"No\\x9d0;pwned\\x9cpe",
        b"X-Evil: a\\x9b2Jb\\x85c",
        b"text/\\x9b2J",
    ),
    "c0": (
        b"HTTP/1.1 404 No\x1b]0;pwned\x07pe\r\nX-Evil: a\x1b[2Jb\x08\x08c\r\nContent-Type: text/\x1b[2J\r\n",
        b"No\\x1b]0;pwned\\x07pe",
        b"X-Evil: a\\x1b[2Jb\\x08\\x08c",
        b"text/\\x1b[2J",
    ),
}


def _hostile(kind: str, body: bytes = b"hi") -> MockResponse:
    return MockResponse(raw=HOSTILE[kind][0] + b"Content-Length: %d\r\n\r\n" % len(body) + body)


def _refused(kind: str, code: int) -> bool:
    """Whether the parser refused the C0 controls of a head (exit 8): then none reached any output."""
    return kind == "c0" and code == 8


def _obeyed(data: bytes) -> bool:
    """Whether ``data`` holds a control character a terminal would act on (UTF-8 C1 included)."""
    text = data.decode("utf-8", "surrogateescape")
    return re.search("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\udc80-\udc9f]", text) is not None


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_verbose_log_shows_control_characters_from_the_server(server: MockServer, kind: str) -> None:
    _, reason, header, _ = HOSTILE[kind]
    server.enqueue(_hostile(kind))
    result = _run_bytes("get", "-v", server.url("/"))  # stderr is a pipe: escaped all the same
    assert not _obeyed(result.stderr.replace(b"\n", b"")) and not _obeyed(result.stdout)
    if _refused(kind, result.returncode):
        return
    assert result.returncode == 0 and result.stdout == b"hi"
    assert b"< HTTP/1.1 404 " + reason in result.stderr and b"< " + header in result.stderr
    assert b"response headers end 404 " + reason in result.stderr  # the event log too


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_include_escapes_the_head_on_a_terminal_and_keeps_it_in_a_pipe(server: MockServer, kind: str) -> None:
    head, reason, header, _ = HOSTILE[kind]
    for flag in ("-i", "-I"):
        server.enqueue(_hostile(kind))
        code, seen, err = _run_on_terminal("get", flag, server.url("/"))
        lines = seen.replace(b"\r", b"").split(b"\n")  # the terminal adds a CR to each LF
        assert not _obeyed(b"".join(lines)) and not _obeyed(err.replace(b"\n", b"")), seen
        if _refused(kind, code):
            return
        assert code == 0, err
        assert lines[0] == b"HTTP/1.1 404 " + reason and header in lines
    server.enqueue(_hostile(kind))
    result = _run_bytes("get", "-i", server.url("/"))  # a file or a pipe gets the bytes received, as curl
    assert result.returncode == 0 and result.stdout.startswith(head)


def test_a_body_with_control_sequences_is_refused_on_a_terminal(server: MockServer) -> None:
    for body in (b"ok \x1b]0;pwned\x07", b"\x00\x01binary", "csi \x9b2J".encode(), b"lone \x9b2J"):
        server.enqueue(MockResponse(200, body=body))
        code, seen, err = _run_on_terminal("get", server.url("/"))
        assert code == 23 and seen == b"", (body, seen)
        assert err.decode().startswith("fastnet: (23) binary output can mess up your terminal: ")
        assert '"-o -"' in err.decode() and len(err.splitlines()) == 1
    text = "héllo ✓\ttab\n".encode()
    server.enqueue(MockResponse(200, body=text))
    assert _run_on_terminal("get", server.url("/")) == (0, text.replace(b"\n", b"\r\n"), b"")
    server.enqueue(MockResponse(200, body=b"forced \x1b[1mbold\x1b[0m"))
    code, seen, err = _run_on_terminal("get", "-o", "-", server.url("/"))  # -o - prints it anyway
    assert (code, seen, err) == (0, b"forced \x1b[1mbold\x1b[0m", b"")
    server.enqueue(MockResponse(200, body=b"\x00\x1b piped"))
    result = _run_bytes("get", server.url("/"))  # not a terminal: written as received
    assert (result.returncode, result.stdout) == (0, b"\x00\x1b piped")


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_write_out_and_errors_show_control_characters(server: MockServer, kind: str) -> None:
    head, reason, _, content_type = HOSTILE[kind]
    server.enqueue(_hostile(kind))
    result = _run_bytes("get", "-f", "-w", "%{content_type}|%{errormsg}\\n", server.url("/"))
    assert not _obeyed(result.stderr.replace(b"\n", b"")) and not _obeyed(result.stdout.rstrip(b"\n"))
    if not _refused(kind, result.returncode):
        assert result.returncode == 22
        assert result.stderr == b"fastnet: (22) The requested URL returned error: 404 " + reason + b"\n"
        assert result.stdout.startswith(content_type + b"|")
    server.enqueue(MockResponse(raw=head.split(b"\r\n")[0] + b"\r\nContent-Length: 0\r\n\r\n"))
    result = _run_bytes("get", "-x", server.url("/"), "https://127.0.0.1:9/")  # CONNECT refused
    assert not _obeyed(result.stderr.replace(b"\n", b""))
    if not _refused(kind, result.returncode):
        assert result.returncode == 97 and b"404 " + reason in result.stderr


def test_progress_bar_shows_the_file_name_as_text(server: MockServer, tmp_path: Path) -> None:
    server.enqueue(MockResponse(200, body=b"x" * 1000))
    target = tmp_path / "a[red]b\x1b[2J.bin"  # rich markup and an escape sequence in a file name
    code, seen, _ = _run_on_terminal("get", "-o", str(target), server.url("/"), stderr_too=True)
    assert code == 0 and target.read_bytes() == b"x" * 1000
    assert b"a[red]b\\x1b[2J.bin" in seen and b"\x1b[2J" not in seen


# -- request options ---------------------------------------------------------------------------------


def test_headers_and_method(server: MockServer) -> None:
    server.enqueue(MockResponse(200), MockResponse(200))
    result = _run("get", server.url("/"), "-H", "X-One: 1", "-H", "Accept: text/plain", "-A", "agent/1")
    assert result.returncode == 0, result.stderr
    rec = server.take_request()
    assert (rec.header("x-one"), rec.header("accept"), rec.header("user-agent")) == (
        "1",
        "text/plain",
        "agent/1",
    )
    assert _run("get", server.url("/"), "-X", "PUT", "-d", "x").returncode == 0
    assert server.take_request().method == "PUT"


def test_data_is_a_form_as_curl_sends_it(server: MockServer, tmp_path: Path) -> None:
    (tmp_path / "more.txt").write_bytes(b"c=3")
    server.enqueue(MockResponse(200), MockResponse(200))
    result = _run(
        "get", server.url("/post"), "-d", "a=1", "-d", f"@{tmp_path / 'more.txt'}", "-d", "@-", stdin="b=2"
    )
    assert result.returncode == 0, result.stderr
    rec = server.take_request()
    assert (rec.method, rec.body) == ("POST", b"a=1&c=3&b=2")
    assert rec.header("content-type") == "application/x-www-form-urlencoded"
    assert _run("get", server.url("/"), "-d", "raw", "-H", "Content-Type: text/plain").returncode == 0
    assert server.take_request().header("content-type") == "text/plain"


def test_json_sets_both_headers(server: MockServer) -> None:
    server.enqueue(MockResponse(200, body=b"{}"))
    result = _run("get", server.url("/j"), "--json", '{"k": [1, 2]}')
    assert result.returncode == 0, result.stderr
    rec = server.take_request()
    assert rec.method == "POST" and json.loads(rec.body) == {"k": [1, 2]}
    assert (rec.header("content-type"), rec.header("accept")) == ("application/json", "application/json")


def test_user_is_basic_auth(server: MockServer) -> None:
    server.enqueue(MockResponse(200))
    assert _run("get", "-u", f"alice:{SECRET}", server.url("/")).returncode == 0
    expected = "Basic " + base64.b64encode(f"alice:{SECRET}".encode()).decode()
    assert server.take_request().header("authorization") == expected


def test_user_without_password_asks_and_takes_ctrl_d_as_none(server: MockServer) -> None:
    server.enqueue(MockResponse(200, body=b"asked"))
    primary, secondary = pty.openpty()
    process = subprocess.Popen(  # stdin is a terminal: the password is asked for
        [sys.executable, "-m", "fastnet", "get", "-u", "bob", server.url("/")],
        stdin=secondary,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_env(),
        cwd=str(ROOT),
        start_new_session=True,
    )
    os.close(secondary)
    assert process.stderr is not None
    prompt = b""
    try:
        deadline = time.monotonic() + 20
        while b"password for bob: " not in prompt and time.monotonic() < deadline:
            if select.select([process.stderr], [], [], 1)[0]:
                piece = os.read(process.stderr.fileno(), 4096)
                if not piece:
                    break
                prompt += piece
        os.write(primary, b"\x04")  # Ctrl-D at the prompt
        out, err = process.communicate(timeout=30)
        err = prompt + err
    finally:
        os.close(primary)
        if process.poll() is None:
            process.kill()
            process.wait()
    assert (process.returncode, out) == (0, b"asked"), err
    assert b"Traceback" not in err and b"password for bob: " in err
    assert server.take_request().header("authorization") == "Basic " + base64.b64encode(b"bob:").decode()


def test_cookie(server: MockServer) -> None:
    server.enqueue(MockResponse(200))
    assert _run("get", "-b", "a=1; b=2", server.url("/")).returncode == 0
    assert server.take_request().header("cookie") == "a=1; b=2"


def test_proxy(server: MockServer) -> None:
    server.enqueue(MockResponse(200, body=b"via proxy"))
    result = _run("get", "-x", server.url(""), "http://origin.test/page")
    assert (result.returncode, result.stdout) == (0, "via proxy"), result.stderr
    assert server.take_request().target == "http://origin.test/page"


def test_redirects_followed_by_default_no_location_shows_the_3xx(server: MockServer) -> None:
    server.enqueue(MockResponse(302, headers={"Location": "/to"}), MockResponse(200, body=b"arrived"))
    result = _run("get", "-L", server.url("/from"))
    assert (result.returncode, result.stdout) == (0, "arrived")
    server.take_request(), server.take_request()
    server.enqueue(MockResponse(302, headers={"Location": "/to"}, body=b"moved"))
    result = _run("get", "--no-location", "-w", "%{http_code} %{redirect_url}", server.url("/from"))
    assert result.returncode == 0 and result.stdout == f"moved302 {server.url('/to')}"


def test_max_redirs_exit_47(server: MockServer) -> None:
    server.default_response = MockResponse(302, headers={"Location": "/again"})
    result = _run("get", "--max-redirs", "2", server.url("/"))
    assert result.returncode == 47, result.stderr


# -- TLS --------------------------------------------------------------------------------------------------


def test_cacert_and_insecure(tls_server: MockServer) -> None:
    tls_server.default_response = MockResponse(200, body=b"secure")
    result = _run("get", "--cacert", ca_path(tls_server), tls_server.url("/"))
    assert (result.returncode, result.stdout) == (0, "secure"), result.stderr
    result = _run("get", tls_server.url("/"))
    assert result.returncode == 60, result.stderr
    assert "--cacert FILE" in result.stderr and "-k/--insecure" in result.stderr
    assert "verify=" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    result = _run("get", "-k", tls_server.url("/"))
    assert (result.returncode, result.stdout) == (0, "secure"), result.stderr


def test_tls_to_a_plain_server_exits_35() -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def answer_in_plain_text() -> None:  # what a plain HTTP server says to a ClientHello
        conn, _ = listener.accept()
        with conn:
            conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            conn.recv(65536)

    thread = threading.Thread(target=answer_in_plain_text, daemon=True)
    thread.start()
    try:
        result = _run("get", f"https://127.0.0.1:{port}/", "--timeout", "5")
    finally:
        thread.join(10)
        listener.close()
    assert result.returncode == 35, result.stderr
    assert "TlsError" in result.stderr


# -- -o and -w ---------------------------------------------------------------------------------------------


def test_output_to_a_file(server: MockServer, tmp_path: Path) -> None:
    body = os.urandom(300_000)
    server.enqueue(MockResponse(200, body=body))
    target = tmp_path / "out.bin"
    result = _run("get", "-o", str(target), server.url("/file"))
    assert result.returncode == 0, result.stderr
    assert target.read_bytes() == body and result.stdout == "" and result.stderr == ""


def test_output_with_a_terminal_shows_a_progress_bar(server: MockServer, tmp_path: Path) -> None:
    body = os.urandom(500_000)
    server.enqueue(MockResponse(200, body=body))
    target = tmp_path / "out.bin"
    code, seen, _ = _run_on_terminal("get", "-o", str(target), server.url("/file"), stderr_too=True)
    assert code == 0
    assert target.read_bytes() == body
    text = re.sub(rb"\x1b\[[0-9;?]*[a-zA-Z]", b"", seen).decode("utf-8", "replace")
    assert "out.bin" in text and ("kB" in text or "MB" in text)


def test_output_that_cannot_be_written_exits_23(server: MockServer, tmp_path: Path) -> None:
    server.enqueue(MockResponse(200, body=b"x"))
    result = _run("get", "-o", str(tmp_path / "no" / "such" / "dir"), server.url("/"))
    assert result.returncode == 23 and "cannot write" in result.stderr
    server.enqueue(MockResponse(200, body=b"x"))
    result = _run("get", "-o", str(tmp_path), server.url("/"))  # a directory
    assert (
        result.returncode == 23
        and result.stderr == f"fastnet: (23) cannot write {tmp_path}: Is a directory\n"
    )


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
def test_output_to_a_full_disk_exits_23(server: MockServer) -> None:
    for size in (10, 300_000):  # the error at the last flush, or at a write
        server.enqueue(MockResponse(200, body=b"x" * size))
        result = _run("get", "-o", "/dev/full", server.url("/"))
        assert result.returncode == 23 and "Traceback" not in result.stderr, result.stderr
        assert result.stderr == "fastnet: (23) write error: No space left on device\n"


def test_a_reader_that_goes_away_ends_every_command_quietly(server: MockServer) -> None:
    # stdout is a pipe nobody reads any more: each write fails with EPIPE at once
    server.default_response = MockResponse(200, body=b"x" * 100_000)
    for args, code in (
        (("--version",), 141),
        (("get", server.url("/")), 23),  # curl's write error
        (("get", "-I", "-w", "%{http_code}", server.url("/")), 23),
        (("load", "-n", "20", "-c", "1", server.url("/")), 141),
    ):
        reader, writer = os.pipe()
        os.close(reader)
        try:
            result = subprocess.run(
                [sys.executable, "-m", "fastnet", *args],
                stdout=writer,
                stderr=subprocess.PIPE,
                text=True,
                timeout=30,
                env=_env(),
                cwd=str(ROOT),
            )
        finally:
            os.close(writer)
        assert result.returncode == code, (args, result.stderr)
        assert "Traceback" not in result.stderr and "Exception ignored" not in result.stderr, result.stderr
        assert result.stderr in ("", "fastnet: (23) write error: Broken pipe\n"), result.stderr


def test_a_process_started_without_a_standard_stream_ends_without_a_traceback(server: MockServer) -> None:
    # ``fastnet get >&-``: Python leaves sys.stdout None; a missing stdout is a reader gone away, a
    # missing stdin reads as the closed descriptor it is (curl's read error for -d @-)
    server.default_response = MockResponse(200, body=b"x" * 1000)
    READ_ERROR = "fastnet: (26) cannot read -: Bad file descriptor\n"  # noqa: N806
    for args, closing, code, stderr in (
        (("--version",), ">&-", 141, ""),
        (("get", server.url("/")), ">&-", 23, "fastnet: (23) write error: Broken pipe\n"),
        (("get", "-d", "@-", server.url("/")), "<&-", 26, READ_ERROR),
    ):
        result = subprocess.run(
            ["sh", "-c", f'exec "$0" -m fastnet "$@" {closing}', sys.executable, *args],
            stdout=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            timeout=30,
            env=_env(),
            cwd=str(ROOT),
        )
        assert result.returncode == code, (args, result.stderr)
        assert result.stderr == stderr, (args, result.stderr)


def test_ctrl_c_exits_130_without_a_traceback(server: MockServer) -> None:
    server.default_response = MockResponse(policy=SocketPolicy.NO_RESPONSE)
    process = subprocess.Popen(
        [sys.executable, "-m", "fastnet", "get", server.url("/wait")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_env(),
        cwd=str(ROOT),
    )
    try:
        assert server.take_request(timeout=20).path == "/wait"  # it is waiting for the response now
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=20)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 130 and out == b"" and b"Traceback" not in err, err


def test_write_out_timing_variables(server: MockServer) -> None:
    server.enqueue(MockResponse(200, headers={"Content-Type": "text/plain"}, body=b"12345"))
    fmt = (
        "\\ncode=%{http_code} size=%{size_download} type=%{content_type} method=%{method} "
        "connect=%{time_connect} start=%{time_starttransfer} total=%{time_total} ip=%{remote_ip} "
        "port=%{remote_port} n=%{num_connects} exit=%{exitcode} %% %{unknown}"
    )
    result = _run("get", "-w", fmt, server.url("/"))
    assert result.returncode == 0, result.stderr
    body, _, line = result.stdout.partition("\n")
    assert body == "12345"
    values = dict(part.split("=", 1) for part in line.split() if "=" in part)
    assert values["code"] == "200" and values["size"] == "5" and values["type"] == "text/plain"
    assert values["method"] == "GET" and values["ip"] == "127.0.0.1" and values["port"] == str(server.port)
    assert values["n"] == "1" and values["exit"] == "0"
    connect, start, total = (float(values[k]) for k in ("connect", "start", "total"))
    assert 0 < connect <= start <= total < 5
    assert re.fullmatch(r"\d+\.\d{6}", values["total"])
    assert line.endswith("% %{unknown}")


def test_write_out_json_and_after_an_error() -> None:
    port = _free_port()
    result = _run("get", "-s", "-w", "%{json}", f"http://127.0.0.1:{port}/")
    assert result.returncode == 7 and result.stderr == ""
    values = json.loads(result.stdout)
    assert values["http_code"] == "000" and values["exitcode"] == 7 and "ConnectError" in values["errormsg"]


# -- failures and exit codes ----------------------------------------------------------------------------


def test_fail_exits_22_without_the_body(server: MockServer) -> None:
    server.enqueue(MockResponse(404, body=b"not found page"), MockResponse(500, body=b"oops"))
    result = _run("get", "-f", server.url("/missing"))
    assert result.returncode == 22 and result.stdout == ""
    assert result.stderr.strip() == "fastnet: (22) The requested URL returned error: 404 Not Found"
    result = _run("get", server.url("/error"))  # without -f a 5xx is a response like any other
    assert (result.returncode, result.stdout) == (0, "oops")


def test_connect_refused_exits_7_with_one_line() -> None:
    result = _run("get", f"http://127.0.0.1:{_free_port()}/", "--timeout", "2")
    assert result.returncode == 7 and result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1 and "ConnectError" in result.stderr


def test_unknown_host_exits_6() -> None:
    result = _run("get", "http://no-such-host.invalid/")
    assert result.returncode == 6 and "UnknownHostError" in result.stderr


def test_max_time_exits_28(server: MockServer) -> None:
    server.enqueue(MockResponse(200, body=b"late", head_delay=3))
    result = _run("get", "--max-time", "0.3", server.url("/slow"))
    assert result.returncode == 28, result.stderr


def test_empty_reply_exits_52(server: MockServer) -> None:
    server.default_response = MockResponse(policy=SocketPolicy.DISCONNECT_AT_START)
    result = _run("get", server.url("/"))
    assert result.returncode == 52, result.stderr


def test_a_body_that_does_not_decode_exits_61(server: MockServer) -> None:
    for coding in ("gzip", "deflate"):
        head = f"HTTP/1.1 200 OK\r\nContent-Encoding: {coding}\r\nContent-Length: 10\r\n\r\n"
        server.enqueue(MockResponse(raw=head.encode() + b"0123456789"))
        result = _run("get", server.url("/"))
        assert result.returncode == 61 and f"invalid {coding} body" in result.stderr, result.stderr


def _cut_body_server(reset: bool) -> int:
    """A one-shot server that sends a head and part of the body it announced, then resets the connection
    (``reset``) or closes it; returns its port."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(20)

    def serve() -> None:
        with listener:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(20)
                conn.recv(65536)
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" + b"x" * 5000)
                time.sleep(0.2)  # the client has the head and reads the body
                if reset:
                    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))

    threading.Thread(target=serve, daemon=True).start()
    return int(listener.getsockname()[1])


def test_a_body_cut_short_exits_56_on_a_reset_and_18_on_a_close() -> None:
    result = _run("get", f"http://127.0.0.1:{_cut_body_server(reset=True)}/")
    assert result.returncode == 56 and "reset" in result.stderr, result.stderr  # 52 is for nothing at all
    assert len(result.stdout) == 5000
    result = _run("get", f"http://127.0.0.1:{_cut_body_server(reset=False)}/")
    assert result.returncode == 18 and "95000 body bytes missing" in result.stderr, result.stderr


def test_silent_hides_errors_show_error_keeps_them() -> None:
    url = f"http://127.0.0.1:{_free_port()}/"
    quiet = _run("get", "-s", url)
    assert quiet.returncode == 7 and quiet.stderr == ""
    shown = _run("get", "-sS", url)
    assert shown.returncode == 7 and "ConnectError" in shown.stderr


@pytest.mark.parametrize(
    "args, code, says",
    [
        (("ftp://127.0.0.1/",), 1, "scheme"),
        (("http://exa mple.test/",), 3, ""),
        (("-H", "no colon here"), 2, "Name: value"),
        (("--max-time", "-1"), 2, "positive"),
        (("--max-redirs", "x"), 2, "whole number"),
        (("-d", "a", "--json", "{}"), 2, "not both"),
        (("--key", "k.pem"), 2, "--cert"),
        (("-b", "novalue"), 2, "name=value"),
        (("-d", "@/no/such/file"), 26, "cannot read"),
        (("-w", "@/no/such/file"), 26, "cannot read /no/such/file"),
        (("-w", "@/"), 26, "cannot read /: Is a directory"),
        (("--connect-timeout", "soon"), 2, "not a number of seconds"),
        (("-X", "BAD METHOD"), 2, "Invalid HTTP method"),
        (("-H", "Bad Name: v"), 2, "header name"),
        (("-A", "a\rb"), 2, "User-Agent value"),
        (("-b", "a=b\x01"), 2, "cookie 'a'"),
        (("http://127.0.0.1:99999/",), 3, "port"),
        (("http://127.0.0.1:http/",), 3, "port"),
        (("-x", "http://u:pw@127.0.0.1:99999"), 5, "proxy port 99999"),
        (("-x", "::::"), 5, "proxy port"),
        (("-x", "ftp://127.0.0.1:21"), 7, "unsupported proxy scheme"),
        (("--cacert", "/no/such/file", "https://127.0.0.1:9/"), 77, "no CA file"),
        (("--cert", "/no/such/file", "https://127.0.0.1:9/"), 58, "no file"),
    ],
)
def test_usage_and_bad_values(args: tuple[str, ...], code: int, says: str) -> None:
    result = _run("get", *args)
    assert result.returncode == code, result.stderr
    assert says in result.stderr and "Traceback" not in result.stderr and ":pw@" not in result.stderr
    if code != 2:  # a usage error shows the usage too
        assert len(result.stderr.splitlines()) == 1, result.stderr


def test_exit_codes_of_errors() -> None:
    from fastnet._internal.http1.decoders import DecodeError
    from fastnet.cli.get import exit_code

    assert exit_code(fastnet.TlsVerificationError("x")) == 60
    assert exit_code(fastnet.TlsError("x")) == 35
    assert exit_code(fastnet.UnknownHostError("x")) == 6
    assert exit_code(fastnet.ConnectTimeout("x")) == 28
    assert exit_code(fastnet.ReadTimeout("x")) == 28
    assert exit_code(fastnet.ConnectError("x")) == 7
    assert exit_code(fastnet.BodyTooLargeError("x")) == 63
    try:
        raise fastnet.ProtocolError("invalid br body: corrupt") from DecodeError("corrupt")
    except fastnet.ProtocolError as exc:
        assert exit_code(exc, received=True) == 61
    assert exit_code(fastnet.ConnectionClosedError("x")) == 52  # nothing received
    assert exit_code(fastnet.ConnectionClosedError("x"), received=True) == 56  # in the body
    assert (
        exit_code(fastnet.ProtocolError("unexpected end of stream: 5 body bytes missing"), received=True)
        == 18
    )


# -- the command --------------------------------------------------------------------------------------------


def test_version_says_which_build() -> None:
    result = _run("--version")
    assert result.returncode == 0
    first = result.stdout.splitlines()[0]
    assert first.startswith(f"fastnet {fastnet.__version__} ")
    assert ("compiled build" in first) == (fastnet.compiled and "partly" not in first)
    assert "pure-Python build" in first or "compiled build" in first
    assert "content codings: gzip, deflate" in result.stdout
    assert _run("get", "--version").stdout == result.stdout


def test_requires_a_command() -> None:
    result = _run()
    assert result.returncode == 2 and "a command is required" in result.stderr


def test_client_certificate_with_cert_and_key(tls_server: MockServer, tmp_path: Path) -> None:
    context = tls_server._ssl_context
    assert context is not None
    context.verify_mode = ssl.CERT_REQUIRED
    context.load_verify_locations(tls_server.ca_path)
    assert tls_server.ca is not None
    leaf = tls_server.ca.issue_cert("client@example.test")
    certfile, keyfile = tmp_path / "client.pem", tmp_path / "client.key"
    certfile.write_bytes(b"".join(blob.bytes() for blob in leaf.cert_chain_pems))
    keyfile.write_bytes(leaf.private_key_pem.bytes())
    tls_server.default_response = MockResponse(200, body=b"client known")
    result = _run(
        "get",
        "--cacert",
        ca_path(tls_server),
        "-E",
        str(certfile),
        "--key",
        str(keyfile),
        tls_server.url("/"),
    )
    assert (result.returncode, result.stdout) == (0, "client known"), result.stderr
    (tmp_path / "both.pem").write_bytes(certfile.read_bytes() + keyfile.read_bytes())
    result = _run(
        "get", "--cacert", ca_path(tls_server), "--cert", str(tmp_path / "both.pem"), tls_server.url("/")
    )
    assert (result.returncode, result.stdout) == (0, "client known"), result.stderr
    result = _run("get", "--cacert", ca_path(tls_server), tls_server.url("/"))
    # refused in the handshake (TLS 1.2) or by an alert on the first read (TLS 1.3: fastnet reports it as
    # a connection closed while reading, 52)
    assert result.returncode in (35, 52, 56), result.stderr


def test_connect_timeout_exits_28(testbed: Testbed) -> None:
    started = time.monotonic()
    result = _run(
        "get", "--connect-timeout", "0.5", "--timeout", "10", f"http://{testbed.blackhole_host}:80/"
    )
    assert result.returncode == 28 and "ConnectTimeout" in result.stderr, result.stderr
    assert time.monotonic() - started < 8


def test_timeout_bounds_each_read(server: MockServer) -> None:
    server.enqueue(MockResponse(200, body=b"late", head_delay=2))
    result = _run("get", "--timeout", "0.3", server.url("/slow"))
    assert result.returncode == 28 and "ReadTimeout" in result.stderr, result.stderr


# -- a forgiving command line (issue 21) ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("get", "--jsn", "{}", "http://127.0.0.1:9/"), "unknown option: --jsn (did you mean --json?)"),
        (("get", "--jsn={}", "http://127.0.0.1:9/"), "unknown option: --jsn (did you mean --json?)"),
        (("load", "--conections", "3"), "unknown option: --conections (did you mean --connections?)"),
        (("get", "--zzzzzz", "http://127.0.0.1:9/"), "unknown option: --zzzzzz\n"),
    ],
)
def test_an_unknown_option_is_named_alone_with_suggestions(args: tuple[str, ...], says: str) -> None:
    result = _run(*args)
    assert result.returncode == 2, result.stderr
    assert says in result.stderr and "Traceback" not in result.stderr
    assert "127.0.0.1:9" not in result.stderr and "unrecognized arguments" not in result.stderr


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("get", "--includ", "http://127.0.0.1:9/"), "unknown option: --includ (did you mean --include?)"),
        (("load", "--connection", "3"), "unknown option: --connection (did you mean --connections?)"),
    ],
)
def test_no_silent_prefix_matching(args: tuple[str, ...], says: str) -> None:
    result = _run(*args)
    assert result.returncode == 2 and says in result.stderr, result.stderr


def test_write_out_warns_once_about_each_unknown_variable(server: MockServer) -> None:
    server.enqueue(MockResponse(body=b"x"))
    result = _run("get", "-s", "-S", "-w", "%{nope} %{http_code} %{nope} %{a\x1bb}\\n", server.url("/"))
    assert result.returncode == 0, result.stderr
    assert result.stdout == "x%{nope} 200 %{nope} %{a\x1bb}\n"
    assert result.stderr.splitlines() == [
        "fastnet: unknown --write-out variable: 'nope'",
        "fastnet: unknown --write-out variable: 'a\\x1bb'",
    ]
    assert _run("get", "-s", "-w", "%{nope}", server.url("/")).stderr == ""  # -s: no warnings


def test_user_without_password_and_without_a_terminal_is_a_usage_error(server: MockServer) -> None:
    result = _run("get", "-u", "bob", server.url("/"), stdin="")
    assert result.returncode == 2, result.stderr
    assert "-u bob: no password given and stdin is not a terminal" in result.stderr
    assert "-u 'bob:PASSWORD'" in result.stderr and "Traceback" not in result.stderr
    assert server.request_count == 0  # nothing was sent


@pytest.mark.parametrize(
    "message",
    [
        "certificate verify failed: unable to get local issuer certificate",
        "certificate verify failed (CAs from SSL_CERT_FILE=/x.pem)",
    ],
)
def test_a_certificate_error_names_the_command_line_options(message: str) -> None:
    from fastnet.cli.get import _one_line

    error = fastnet.TlsVerificationError(message)
    assert "verify=" in str(error)  # the Python API's words stay
    line = _one_line(error)
    assert "verify=" not in line and "--cacert FILE" in line, line
    assert line.startswith(f"TlsVerificationError: {message}")
