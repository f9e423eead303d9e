"""The text report of a load run (``fastnet/load/_report.py``): how times and sizes are written, the
histogram's bars, and what ``render`` says for the run's mode, limits, interruption, statuses, errors
and the generator. On ``LoadResult``s made from real HDR histograms (``tests.support.loadkit``)."""

from __future__ import annotations

import pytest

from fastnet.load._report import format_bytes, format_seconds, render, render_histogram
from fastnet.load._result import Generator
from tests.support.loadkit import sample_result

pytest.importorskip("hdrh")


@pytest.mark.parametrize(
    "seconds, text",
    [(0.000412, "412 µs"), (0.00325, "3.25 ms"), (0.999, "999.00 ms"), (1.5, "1.50 s"), (0.0, "0 µs")],
)
def test_report_format_seconds(seconds: float, text: str) -> None:
    assert format_seconds(seconds) == text


@pytest.mark.parametrize(
    "size, text", [(512, "512 B"), (2048, "2.00 KiB"), (3 << 20, "3.00 MiB"), (5 << 30, "5.00 GiB")]
)
def test_report_format_bytes(size: int, text: str) -> None:
    assert format_bytes(size) == text


def test_report_histogram_bars_scale_to_the_fullest_bin() -> None:
    lines = render_histogram([(0.001, 100), (0.002, 50), (0.004, 0), (0.008, 1)], indent="")
    assert len(lines) == 4
    bars = [line.split("|")[1] for line in lines]
    assert bars == ["■" * 40, "■" * 20, "", "▏"]  # a count too small for a bar still shows
    assert lines[0].startswith("   1.00 ms [100]") and lines[3].startswith("   8.00 ms [  1]")
    assert render_histogram([]) == []


def test_report_render_closed_loop() -> None:
    text = render(sample_result())
    assert text.startswith("fastnet load: http://127.0.0.1:8080/\n")
    assert "4 connections, 103 requests, closed loop, GET, keep-alive, compiled engine" in text
    assert "101 responses in 2.00 s: 50.5 requests/s (2 failed)" in text
    assert "3.00 MiB received: 1.50 MiB/s; 4 connections opened" in text
    assert "Latency (from each request's start)" in text and "Latency histogram" in text
    assert "    connect " in text and "    DNS " not in text  # phases measured only
    assert "Status codes 200: 100, 503: 1" in text
    assert "Errors       2 requests failed" in text and "e.g. connection refused: <127.0.0.1:1>" in text
    assert "busy 30% of the run" in text and text.endswith("not busy\n")
    assert "interrupted" not in text and "In flight" not in text and "Backlog" not in text


def test_report_render_open_loop_interrupted_with_a_backlog() -> None:
    lag = sample_result().latency
    result = sample_result(
        urls=["http://a.test/1", "http://a.test/2"],
        rate=200.0,
        requests_limit=None,
        duration_limit=30.0,
        stopped_by="interrupt",
        abandoned=3,
        backlog=12,
        keepalive=False,
        engine="py",
        generator=Generator(cpu=0.95, waiting=0.04, demand=0.99, saturated=True, lag=lag, note="saturated"),
    )
    text = render(result)
    assert text.startswith("fastnet load: 2 URLs, round-robin\n  http://a.test/1\n  http://a.test/2\n")
    assert "30 s, open loop at 200/s, GET, a new connection per request, pure-Python engine" in text
    assert "interrupted (Ctrl-C)" in text and "from each request's intended start" in text
    assert "3 requests were still running" in text and "12 requests were due" in text
    assert "sends late against the timetable by p99" in text


def test_report_render_without_responses() -> None:
    result = sample_result(latency=None, status_codes={}, errors=[], histogram=[], completed=0, failed=0)
    text = render(result)
    assert "Status codes none" in text and "Errors       none" in text and "Latency (" not in text
