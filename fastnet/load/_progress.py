"""What ``fastnet load`` shows while it runs: a live progress bar drawn by ``rich`` on a terminal, one
plain line every few seconds otherwise, or nothing (``--quiet``).

The loop calls :meth:`Display.update` between turns (about four times a second) with a
:class:`Snapshot`; drawing never happens inside the loop, and the rich display does not start a
refresh thread of its own.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, TextIO

from fastnet.load._hist import require

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

__all__ = ["PLAIN_EVERY", "Display", "PlainDisplay", "RichDisplay", "Snapshot", "choose_display"]

#: Seconds between two plain progress lines.
PLAIN_EVERY = 2.0


@dataclass(frozen=True)
class Snapshot:
    """The run so far: seconds since the start, requests done (completed + failed), the rate of
    responses over the last interval, and the limits (``total`` requests, ``duration`` seconds)."""

    elapsed: float
    completed: int
    failed: int
    rate: float
    total: int | None
    duration: float | None

    @property
    def done(self) -> int:
        return self.completed + self.failed

    @property
    def remaining(self) -> float | None:
        """Seconds left: by the clock for a duration, estimated from the rate for a request count."""
        if self.duration is not None:
            return max(0.0, self.duration - self.elapsed)
        if self.total is not None and self.rate > 0:
            return max(0.0, (self.total - self.done) / self.rate)
        return None

    def line(self) -> str:
        limit = f"/{self.duration:g} s" if self.duration is not None else " s"
        left = self.remaining
        text = (
            f"fastnet load: {self.elapsed:5.1f}{limit}  {self.done:,}"
            + (f"/{self.total:,}" if self.total is not None else "")
            + f" done  {self.rate:,.0f} req/s  {self.failed:,} errors"
        )
        if left is not None:
            text += f"  {left:.0f} s left"
        return text


class Display:
    """Shows nothing (``--quiet``); the base of the other displays."""

    def start(self) -> None:
        pass

    def update(self, snapshot: Snapshot) -> None:
        pass

    def stop(self, snapshot: Snapshot | None) -> None:
        pass


class PlainDisplay(Display):
    """One line every ``every`` seconds (and a last one at the end), for a file or a pipe."""

    def __init__(self, file: TextIO, every: float = PLAIN_EVERY) -> None:
        self.file = file
        self.every = every
        self._next = 0.0

    def start(self) -> None:
        self._next = time.monotonic() + self.every

    def update(self, snapshot: Snapshot) -> None:
        now = time.monotonic()
        if now >= self._next:
            self._next = now + self.every
            self.file.write(snapshot.line() + "\n")
            self.file.flush()

    def stop(self, snapshot: Snapshot | None) -> None:
        if snapshot is not None:
            self.file.write(snapshot.line() + "\n")
            self.file.flush()


class RichDisplay(Display):
    """A ``rich`` progress bar with done, rate, errors and elapsed/remaining time, on a terminal."""

    def __init__(self, file: TextIO) -> None:
        rich_console = require("rich.console", "rich")
        rich_progress = require("rich.progress", "rich")
        self.console = rich_console.Console(file=file)
        columns = (
            rich_progress.TextColumn("[bold]fastnet load"),
            rich_progress.BarColumn(),
            rich_progress.TextColumn("{task.fields[done]} done"),
            rich_progress.TextColumn("[cyan]{task.fields[rate]} req/s"),
            rich_progress.TextColumn("{task.fields[errors]}"),
            rich_progress.TextColumn("{task.fields[clock]}"),
        )
        self.progress: Progress = rich_progress.Progress(
            *columns, console=self.console, auto_refresh=False, transient=True
        )
        self.task: TaskID | None = None

    def start(self) -> None:
        self.progress.start()
        self.task = self.progress.add_task("load", total=None, done="0", rate="0", errors="", clock="")

    def update(self, snapshot: Snapshot) -> None:
        if snapshot.duration is not None:
            total: float | None = snapshot.duration
            completed: float = min(snapshot.elapsed, snapshot.duration)
        elif snapshot.total is not None:
            total, completed = snapshot.total, snapshot.done
        else:
            total, completed = None, 0
        left = snapshot.remaining
        clock = f"{snapshot.elapsed:.1f} s" + (f", {left:.0f} s left" if left is not None else "")
        errors = f"[red]{snapshot.failed:,} errors" if snapshot.failed else "0 errors"
        self.progress.update(
            self.task,  # type: ignore[arg-type]  # start() added it
            total=total,
            completed=completed,
            done=f"{snapshot.done:,}",
            rate=f"{snapshot.rate:,.0f}",
            errors=errors,
            clock=clock,
        )
        self.progress.refresh()

    def stop(self, snapshot: Snapshot | None) -> None:
        self.progress.stop()


def choose_display(file: TextIO, *, quiet: bool) -> Display:
    """Nothing with ``quiet``, the rich bar on a terminal, plain lines otherwise."""
    if quiet:
        return Display()
    isatty = getattr(file, "isatty", None)
    if isatty is not None and isatty():
        return RichDisplay(file)
    return PlainDisplay(file)
