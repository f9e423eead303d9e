"""The call-timeout ``Watchdog`` (``fastnet._internal.util.watchdog``): one daemon thread that cancels each
watched call once its deadline has passed, in deadline order, skipping calls that finished (deadline set
to -1) or were re-armed, and surviving a call whose ``cancel`` raises. The calls here are stand-ins with
the three members the watchdog uses; the call timeout through the real client is in
tests/integration/test_timeouts.py. No test asserts how soon: each waits (boundedly) for what must happen."""

from __future__ import annotations

import threading
import time

import pytest

from fastnet._internal.util.watchdog import Watchdog

WAIT = 10.0  # seconds a test waits for the watchdog before it fails (never reached when it works)


class Call:
    """What the watchdog sees of a call: ``deadline``, ``timed_out`` and ``cancel()``."""

    def __init__(self, name: str, deadline: float, log: list[str], fail: bool = False) -> None:
        self.name = name
        self.deadline = deadline
        self.timed_out = False
        self.log = log
        self.fail = fail
        self.canceled = threading.Event()

    def cancel(self) -> None:
        self.log.append(self.name)
        self.canceled.set()
        if self.fail:
            raise RuntimeError("a listener that raises")


@pytest.fixture
def watchdog() -> Watchdog:
    return Watchdog()


def test_watchdog_cancels_a_call_past_its_deadline(watchdog: Watchdog) -> None:
    log: list[str] = []
    call = Call("a", time.monotonic() + 0.05, log)
    watchdog.watch(call)
    assert call.canceled.wait(WAIT)
    assert call.timed_out and log == ["a"]


def test_watchdog_starts_one_daemon_thread_on_first_use(watchdog: Watchdog) -> None:
    before = {t for t in threading.enumerate() if t.name == "fastnet-watchdog"}
    log: list[str] = []
    calls = [Call(str(i), time.monotonic() + 0.01, log) for i in range(3)]
    for call in calls:
        watchdog.watch(call)
    started = {t for t in threading.enumerate() if t.name == "fastnet-watchdog"} - before
    assert len(started) == 1 and all(t.daemon for t in started)
    assert all(call.canceled.wait(WAIT) for call in calls)


def test_watchdog_cancels_in_deadline_order_whatever_the_order_of_watch(watchdog: Watchdog) -> None:
    log: list[str] = []
    now = time.monotonic()
    late, early, middle = (
        Call("late", now + 0.6, log),
        Call("early", now + 0.2, log),
        Call("mid", now + 0.4, log),
    )
    for call in (late, early, middle):
        watchdog.watch(call)
    assert late.canceled.wait(WAIT)
    assert log == ["early", "mid", "late"]


def test_watchdog_skips_a_call_that_finished(watchdog: Watchdog) -> None:
    log: list[str] = []
    now = time.monotonic()
    finished, other = Call("finished", now + 0.5, log), Call("other", now + 0.7, log)
    watchdog.watch(finished)
    watchdog.watch(other)
    finished.deadline = -1  # what a call that ended does
    assert other.canceled.wait(WAIT)
    assert log == ["other"] and not finished.timed_out


def test_watchdog_a_rearmed_call_is_cancelled_once_at_its_new_deadline(watchdog: Watchdog) -> None:
    log: list[str] = []
    now = time.monotonic()
    rearmed, other = Call("rearmed", now + 0.5, log), Call("other", now + 0.7, log)
    watchdog.watch(rearmed)
    watchdog.watch(other)
    rearmed.deadline = now + 0.9
    watchdog.watch(rearmed)
    assert rearmed.canceled.wait(WAIT)
    assert log == ["other", "rearmed"]


def test_watchdog_survives_a_cancel_that_raises(watchdog: Watchdog) -> None:
    log: list[str] = []
    now = time.monotonic()
    failing, after = Call("failing", now + 0.05, log, fail=True), Call("after", now + 0.5, log)
    watchdog.watch(failing)
    watchdog.watch(after)
    assert after.canceled.wait(WAIT)
    assert log == ["failing", "after"] and failing.timed_out


def test_watchdog_an_earlier_deadline_wakes_a_sleeping_watchdog(watchdog: Watchdog) -> None:
    log: list[str] = []
    far = Call("far", time.monotonic() + 3600, log)
    watchdog.watch(far)  # the thread now sleeps until an hour from now...
    near = Call("near", time.monotonic() + 0.05, log)
    watchdog.watch(near)  # ...unless a nearer deadline wakes it
    assert near.canceled.wait(WAIT)
    assert log == ["near"]
    far.deadline = -1
