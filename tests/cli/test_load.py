"""``fastnet load`` on the command line: usage errors, --json against a schema, plain progress lines
when stdout is not a terminal, the rich display on one, Ctrl-C, the demo server, --urls, and the HTML
report opened in headless Chromium."""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import jsonschema
import pytest

import fastnet.load
from fastnet.cli import main
from fastnet.load._progress import PlainDisplay, RichDisplay, choose_display
from fastnet.testing import MockResponse, MockServer, SocketPolicy
from tests.support.loadkit import refused_port
from tests.support.twins import Twins

SCHEMA = json.loads((Path(__file__).resolve().parents[1] / "load" / "result.schema.json").read_text())
ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium-headless-shell") or shutil.which("chromium")


def _load(*argv: str) -> int:
    return main(["load", *argv])


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["-c", "0"], "must be positive"),
        (["-c", "many"], "not a whole number"),
        (["-c", "1000000"], "at most 100,000 connections"),
        (["-n", "-5"], "must be positive"),
        (["-z", "0s"], "must be positive"),
        (["-z", "10 parsecs"], "not a duration"),
        (["-q", "0"], "must be a positive number"),
        (["--rate", "fast"], "not a number"),
        (["--timeout", "-1"], "not a duration"),
        (["-H", "no colon"], "Name: value"),
        (["--resolve", "example.test:80"], "host:port:addr"),
        (["--resolve", "example.test:99999:127.0.0.1"], "out of range"),
        (["--resolve", "example.test:80:not-an-ip"], "not an IP address"),
        (["-d", "x", "-D", "file"], "not allowed with argument"),
        (["-k", "--cacert", "ca.pem"], "contradict"),
        (["--engine", "rust"], "invalid choice"),
        (["--urls", "/nonexistent/urls.txt"], "--urls"),
        (["--bogus"], "unknown option: --bogus"),
    ],
)
def test_load_cli_rejects_bad_options_with_usage_errors(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        _load("http://127.0.0.1:1/", *argv)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_load_cli_json_matches_the_schema(server: MockServer, capsys: pytest.CaptureFixture[str]) -> None:
    server.default_response = MockResponse(200, body=b"hello")
    assert _load(server.url("/"), "-n", "200", "-c", "4", "--json") == 0
    out = capsys.readouterr().out
    document = json.loads(out)
    jsonschema.validate(document, SCHEMA)
    assert document["completed"] == 200 and document["status_codes"] == {"200": 200}
    assert document["options"]["requests"] == 200 and document["latency"]["count"] == 200
    assert server.request_count == 200


def test_load_cli_json_of_a_failing_run_matches_the_schema(capsys: pytest.CaptureFixture[str]) -> None:
    port = refused_port()
    assert _load(f"http://127.0.0.1:{port}/", "-n", "5", "-c", "1", "--json", "--quiet") == 0
    document = json.loads(capsys.readouterr().out)
    jsonschema.validate(document, SCHEMA)
    assert document["latency"] is None and document["failed"] == 5
    assert document["errors"][0]["type"] == "ConnectError (ECONNREFUSED)"


def test_load_cli_schema_rejects_a_wrong_document() -> None:
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"schema": 1, "urls": []}, SCHEMA)


def test_load_cli_prints_plain_lines_when_stdout_is_not_a_terminal(server: MockServer) -> None:
    server.default_response = MockResponse(200, body=b"x")
    proc = subprocess.run(
        [sys.executable, "-m", "fastnet", "load", server.url("/"), "-z", "2.3", "-c", "2"],
        capture_output=True,
        text=True,
        timeout=30,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    progress = [
        line for line in proc.stdout.splitlines() if line.startswith("fastnet load:") and " done " in line
    ]
    assert len(progress) >= 2  # one every 2 s, and the last
    assert progress[0].startswith("fastnet load:   2.") and "/2.3 s" in progress[0]
    assert "\x1b" not in proc.stdout
    assert "Status codes 200:" in proc.stdout and "Latency histogram" in proc.stdout


def test_load_cli_draws_a_live_display_on_a_terminal(server: MockServer) -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    server.default_response = MockResponse(200, body=b"x")
    screen = Terminal()
    display = choose_display(screen, quiet=False)
    assert isinstance(display, RichDisplay)
    assert isinstance(choose_display(io.StringIO(), quiet=False), PlainDisplay)
    result = fastnet.load.run(server.url("/"), duration=0.8, connections=2, display=display)
    drawn = screen.getvalue()
    assert result.completed > 0
    assert "fastnet load" in drawn and "req/s" in drawn and "done" in drawn
    assert "\x1b[" in drawn  # rich moved the cursor to redraw the bar


def test_load_cli_prints_the_report_after_ctrl_c(server: MockServer) -> None:
    server.default_response = MockResponse(200, body=b"x")
    proc = subprocess.Popen(
        [sys.executable, "-m", "fastnet", "load", server.url("/"), "-z", "60", "-c", "2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:  # the first progress line: the run is under way
            line = proc.stdout.readline()
            if " done " in line or not line:
                break
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert "interrupted (Ctrl-C)" in out and "Status codes 200:" in out


def test_load_cli_loads_the_embedded_server_without_a_url(capsys: pytest.CaptureFixture[str]) -> None:
    assert _load("-n", "300", "-c", "4") == 0
    out = capsys.readouterr().out
    assert "no URL given, loading the embedded MockServer at http://127.0.0.1:" in out
    assert "300 responses" in out and "Status codes 200: 300" in out


def test_load_cli_reads_urls_from_a_file(server: MockServer, tmp_path: Path) -> None:
    server.default_response = MockResponse(200, body=b"x")
    listing = tmp_path / "urls.txt"
    listing.write_text(f"# two paths\n{server.url('/one')}\n\n{server.url('/two')}\n")
    assert _load("--urls", str(listing), "-n", "40", "-c", "2", "--quiet") == 0
    assert Counter(server.take_request().target for _ in range(40)) == {"/one": 20, "/two": 20}


def test_load_cli_says_what_to_install_when_a_dependency_is_missing(
    server: MockServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "hdrh.histogram", None)
    assert _load(server.url("/"), "-n", "1") == 1
    assert "pip install 'fastnet-http[load]'" in capsys.readouterr().err


def test_load_cli_exits_1_when_the_run_cannot_start(capsys: pytest.CaptureFixture[str]) -> None:
    assert _load("http://127.0.0.1:1/", "--proxy", "gopher://127.0.0.1:70", "-n", "1") == 1
    assert "bad proxy" in capsys.readouterr().err


def _load_with_few_descriptors(*argv: str) -> dict[str, Any]:
    """``fastnet load ARGV --json`` in a child whose open-file limit is 64; its result."""
    child = (  # the limit is set in the child itself (a preexec_fn is unsafe in a threaded parent)
        "import resource, sys; resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64)); "
        f"from fastnet.cli import main; sys.exit(main({['load', *argv, '--json']!r}))"
    )
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=30, cwd=ROOT)
    assert time.monotonic() - t0 < 30  # the duration (1 s) plus the timeout (10 s), with room to spare
    assert proc.returncode == 0, proc.stderr
    result: dict[str, Any] = json.loads(proc.stdout)
    assert result["completed"] > 0  # the connections that could be opened worked meanwhile
    return result


def test_load_cli_ends_and_counts_the_errors_when_no_socket_can_be_opened(
    twins: Twins, server: MockServer
) -> None:
    # the open-file limit is below -c: socket() fails at once with EMFILE for most connections; the run
    # still ends at its duration (the loop once retried without looking at its clock, forever), the
    # failures are counted, and the loop backs off instead of spinning (far fewer failures than a spin)
    engine = twins("fastnet.load.loop").IMPLEMENTATION
    server.default_response = MockResponse(200, body=b"x")
    result = _load_with_few_descriptors(server.url("/"), "-c", "300", "-z", "1s", "--engine", engine)
    errors = {e["type"]: e for e in result["errors"]}
    emfile = errors["ConnectError (EMFILE)"]
    assert 0 < emfile["count"] < 2000
    where = f"127.0.0.1:{server.port}"
    assert emfile["example"] == f"open a socket for {where} failed: [Errno 24] Too many open files"


def test_load_cli_backs_off_when_tls_connections_run_out_of_descriptors(
    twins: Twins, tls_server: MockServer
) -> None:
    # TLS connections are made in helper threads, which fail with EMFILE as fast as they are asked; the
    # loop then opens one connection per back-off until one is made again (about 4,500 failures a
    # second without it), and the errors say EMFILE
    engine = twins("fastnet.load.loop").IMPLEMENTATION
    tls_server.default_response = MockResponse(200, body=b"x")
    argv = (tls_server.url("/"), "-k", "-c", "300", "-z", "1s", "--engine", engine)
    result = _load_with_few_descriptors(*argv)
    emfile = [e for e in result["errors"] if e["type"].endswith(" (EMFILE)")]
    assert emfile and "Too many open files" in emfile[0]["example"]
    assert 0 < sum(e["count"] for e in emfile) < 1500


def test_load_cli_report_shows_control_characters_and_the_html_escapes_markup(
    server: MockServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # a proxy that refuses CONNECT with a reason phrase that would retitle the terminal (OSC ... ST), clear
    # it (CSI 2 J) and inject markup into the HTML report: the error's example quotes it
    server.default_response = MockResponse(
        raw=b"HTTP/1.1 403 No\x9d0;pwned\x9c\x9b2J<script>x()</script>\r\nContent-Length: 0\r\n\r\n"
    )
    page = tmp_path / "report.html"
    argv = ["https://127.0.0.1:9/", "--proxy", server.url("/"), "-n", "2", "-c", "1", "--quiet"]
    assert _load(*argv, "--html", str(page)) == 0
    out = capsys.readouterr().out
    assert "No\\x9d0;pwned\\x9c\\x9b2J<script>" in out
    assert not any(ch in out for ch in "\x9b\x9c\x9d")
    html = page.read_text(encoding="utf-8")
    assert "<script>" not in html and "&lt;script&gt;x()&lt;/script&gt;" in html


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def _screenshot(page: Path, shot: Path) -> bytes:
    assert CHROMIUM is not None
    subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--window-size=900,1500",
            f"--screenshot={shot}",
            page.as_uri(),
        ],
        capture_output=True,
        timeout=60,
        check=True,
    )
    return shot.read_bytes()


def test_load_cli_html_report_renders_in_a_headless_browser(server: MockServer, tmp_path: Path) -> None:
    if CHROMIUM is None:
        if os.environ.get("CI"):
            pytest.fail("chromium-headless-shell is missing (.ci/install installs it)")
        pytest.skip("no headless Chromium on this machine")
    server.default_response = MockResponse(200, body=b"x")
    hostile = b"HTTP/1.1 <script>alert(1)</script>\r\n\r\n"
    server.enqueue(MockResponse(raw=hostile, policy=SocketPolicy.CLOSE_AFTER_RESPONSE))
    page = tmp_path / "report.html"
    assert _load(server.url("/"), "-n", "400", "-c", "4", "--html", str(page), "--quiet") == 0
    text = page.read_text()
    assert text.count("<svg") == 2 and '<path d="M' in text and "<rect" in text
    assert "<script>" not in text and "&lt;script&gt;" in text  # the error example is escaped, never run
    assert "src=" not in text and "href=" not in text and "@import" not in text  # nothing fetched
    shot = _screenshot(page, tmp_path / "report.png")
    blank = tmp_path / "blank.html"
    blank.write_text("<!DOCTYPE html><html><body></body></html>")
    empty = _screenshot(blank, tmp_path / "blank.png")
    assert _png_size(shot) == (900, 1500)
    assert len(shot) > 30_000 and len(shot) > 4 * len(empty)


def test_every_install_advice_names_the_distribution_and_the_checkout() -> None:
    import re
    from pathlib import Path

    from fastnet.load._hist import MissingDependency, require

    with pytest.raises(MissingDependency) as caught:
        require("fastnet_no_such_module", "no-such-package")
    assert "pip install 'fastnet-http[load]' (from a checkout: pip install -e '.[load]'" in str(caught.value)
    package = Path(__file__).resolve().parents[2] / "fastnet"
    advice = 0
    for path in package.rglob("*.py"):
        text = " ".join(path.read_text(encoding="utf-8").split())
        assert "pip install fastnet-http[" not in text, path  # unquoted: a shell expands the brackets
        for extra in re.findall(r"pip install '?fastnet-http\[(\w+)\]", text):
            advice += 1
            assert f"pip install -e '.[{extra}]'" in text, (path, extra)
    assert advice >= 6
