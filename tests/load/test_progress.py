"""The progress display of a load run (``fastnet/load/_progress.py``): a ``Snapshot``'s figures and line,
``PlainDisplay``'s lines for a file or a pipe, the rich bar on a terminal, nothing with ``--quiet``, and
which one ``choose_display`` picks."""

from __future__ import annotations

import io

import pytest

from fastnet.load._progress import Display, PlainDisplay, RichDisplay, Snapshot, choose_display


def snapshot(**changes: object) -> Snapshot:
    fields: dict[str, object] = dict(
        elapsed=2.04, completed=1200, failed=34, rate=600.0, total=None, duration=None
    )
    fields.update(changes)
    return Snapshot(**fields)  # type: ignore[arg-type]


def test_progress_snapshot_remaining_time() -> None:
    assert snapshot().done == 1234 and snapshot().remaining is None
    assert snapshot(duration=5.0).remaining == pytest.approx(2.96)
    assert snapshot(duration=1.0).remaining == 0.0  # never negative
    assert snapshot(total=2434).remaining == pytest.approx(2.0)  # (2434 - 1234) / 600 per second
    assert snapshot(total=2434, rate=0.0).remaining is None


def test_progress_snapshot_line() -> None:
    assert snapshot().line() == "fastnet load:   2.0 s  1,234 done  600 req/s  34 errors"
    assert (
        snapshot(duration=5.0).line() == "fastnet load:   2.0/5 s  1,234 done  600 req/s  34 errors  3 s left"
    )
    assert snapshot(total=10_000).line().startswith("fastnet load:   2.0 s  1,234/10,000 done")


def test_progress_plain_display_writes_lines_at_most_every_interval() -> None:
    out = io.StringIO()
    display = PlainDisplay(out, every=3600.0)
    display.start()
    display.update(snapshot())  # within the first interval: nothing yet
    assert out.getvalue() == ""
    display.stop(snapshot(completed=1300))
    assert out.getvalue() == snapshot(completed=1300).line() + "\n"
    eager = io.StringIO()
    display = PlainDisplay(eager, every=0.0)
    display.start()
    display.update(snapshot())
    display.update(snapshot(completed=1201))
    display.stop(None)  # nothing to add when the run had no snapshot
    assert eager.getvalue().splitlines() == [snapshot().line(), snapshot(completed=1201).line()]


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_choose_display() -> None:
    assert type(choose_display(Terminal(), quiet=True)) is Display
    assert isinstance(choose_display(io.StringIO(), quiet=False), PlainDisplay)
    assert isinstance(choose_display(object(), quiet=False), PlainDisplay)  # type: ignore[arg-type]
    pytest.importorskip("rich")
    assert isinstance(choose_display(Terminal(), quiet=False), RichDisplay)


def test_progress_rich_display_draws_the_figures() -> None:
    pytest.importorskip("rich")
    screen = Terminal()
    display = RichDisplay(screen)
    display.start()
    for snap in (snapshot(duration=5.0), snapshot(total=5000, failed=0), snapshot()):
        display.update(snap)
    display.stop(snapshot())
    drawn = screen.getvalue()
    assert "fastnet load" in drawn and "1,234 done" in drawn and "600 req/s" in drawn
    assert "34 errors" in drawn and "3 s left" in drawn and "0 errors" in drawn
