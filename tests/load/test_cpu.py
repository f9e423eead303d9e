"""How busy the generator's own thread was (``fastnet/load/_cpu.py``): ``ThreadClock`` reads the thread's
time on a CPU and its time waiting for one (``/proc`` schedstat on Linux), so a spinning thread is near
100% busy, a sleeping one near 0%, and one that waits for another thread is not charged for its work."""

from __future__ import annotations

import sys
import threading
import time

import pytest

from fastnet.load._cpu import ThreadClock


def test_thread_clock_tells_busy_from_idle() -> None:
    clock = ThreadClock()
    end = time.monotonic() + 0.3
    while time.monotonic() < end:
        pass
    wall, on_cpu, waiting = clock.sample()
    assert (on_cpu + waiting) / wall >= 0.9  # spinning: on a CPU, or waiting for one
    clock = ThreadClock()
    time.sleep(0.3)
    wall, on_cpu, waiting = clock.sample()
    assert wall >= 0.29e9 and (on_cpu + waiting) / wall < 0.1


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc schedstat is Linux's")
def test_thread_clock_reads_the_threads_own_schedstat() -> None:
    clock = ThreadClock()
    assert clock.proc and clock.tid == threading.get_native_id()
    first = clock.sample()
    second = clock.sample()
    assert all(value >= 0 for value in first) and second[0] >= first[0] and second[1] >= first[1]


def test_thread_clock_counts_only_its_own_thread() -> None:
    clock = ThreadClock()

    def spin() -> None:
        end = time.monotonic() + 0.3
        while time.monotonic() < end:
            pass

    other = threading.Thread(target=spin)
    other.start()
    other.join()  # another thread was busy; this one only waited for it
    wall, on_cpu, waiting = clock.sample()
    if clock.proc:
        assert (on_cpu + waiting) / wall < 0.5
