"""The ``--html`` report (``fastnet/load/_html.py``): one self-contained page (no script, nothing
fetched) with the figures, both plots as inline SVG, every text from the run HTML-escaped, and the file
``write_html`` writes. On ``LoadResult``s made from real HDR histograms (``tests.support.loadkit``); the
page in headless Chromium is in tests/cli/test_load.py."""

from __future__ import annotations

import html.parser
from pathlib import Path

import pytest

from fastnet.load._html import render_html, write_html
from fastnet.load._result import ErrorGroup
from tests.support.loadkit import sample_result

pytest.importorskip("hdrh")


class Page(html.parser.HTMLParser):
    """The tags of a page, and whether anything would run or be fetched."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.fetched: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        for name, value in attrs:
            if name in ("src", "href") or (name or "").startswith("on"):
                self.fetched.append(f"{tag} {name}={value}")

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse(page: str) -> Page:
    parser = Page()
    parser.feed(page)
    parser.close()
    return parser


def test_html_a_self_contained_page_with_both_plots() -> None:
    page = render_html(sample_result())
    parsed = parse(page)
    assert page.startswith("<!DOCTYPE html>") and "script" not in parsed.tags and parsed.fetched == []
    assert parsed.tags.count("svg") == 2
    assert "Latency by percentile" in page and "Latency histogram" in page
    text = " ".join(parsed.text)
    assert "<b>50</b><span>requests/s</span>" in page  # 50.5/s, rounded on its card
    assert "p99 latency" in text and "ConnectError (ECONNREFUSED)" in text
    assert "connect" in text and "503" in text


def test_html_every_text_from_the_run_is_escaped() -> None:
    hostile = '<script>alert("x")</script>'
    result = sample_result(urls=[f"http://a.test/?q={hostile}"], method="GET")
    result.errors[0] = ErrorGroup("Error<b>", 1, f"server said {hostile}")
    page = render_html(result)
    assert hostile not in page and "&lt;script&gt;" in page
    assert "script" not in parse(page).tags


def test_html_a_run_without_latencies_says_so() -> None:
    page = render_html(sample_result(latency=None, percentiles=[], histogram=[], status_codes={}, errors=[]))
    assert "No latencies were recorded." in page and "No responses." in page and "None." in page
    assert parse(page).tags.count("svg") == 0


def test_html_write_html_writes_the_page(tmp_path: Path) -> None:
    result = sample_result()
    path = tmp_path / "report.html"
    write_html(result, path)
    assert path.read_text(encoding="utf-8") == render_html(result)
    write_html(result, str(tmp_path / "again.html"))
    assert (tmp_path / "again.html").exists()
