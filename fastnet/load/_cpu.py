"""How busy the generator's own thread was: the evidence for "the load tool was the bottleneck".

On Linux ``/proc/thread-self/schedstat`` gives a thread's time on a CPU and its time spent runnable but
waiting for one. Their sum over the run's wall time is the thread's *demand*: near 100% means the loop
never waited for the network, so it (or the machine it shares) limited the run, whether it was busy or
starved by other processes. Elsewhere the thread's CPU time (``RUSAGE_THREAD`` or the process's) stands
in for both.
"""

from __future__ import annotations

import resource
import threading
import time

__all__ = ["SATURATED", "ThreadClock"]

#: Demand at or above this fraction of the wall time means the generator was saturated.
SATURATED = 0.9


def _schedstat(tid: int) -> tuple[int, int] | None:
    try:
        with open(f"/proc/self/task/{tid}/schedstat") as f:
            fields = f.read().split()
        return int(fields[0]), int(fields[1])
    except (OSError, ValueError, IndexError):
        return None


def _cpu_ns() -> int:
    who = getattr(resource, "RUSAGE_THREAD", resource.RUSAGE_SELF)
    usage = resource.getrusage(who)
    return int((usage.ru_utime + usage.ru_stime) * 1e9)


class ThreadClock:
    """Started in the thread it measures; ``sample()`` gives (wall, on-CPU, waiting) ns since start."""

    def __init__(self) -> None:
        self.tid = threading.get_native_id()
        self.wall0 = time.monotonic_ns()
        first = _schedstat(self.tid) if self.tid else None
        self.proc = first is not None
        self.cpu0, self.wait0 = first if first is not None else (_cpu_ns(), 0)

    def sample(self) -> tuple[int, int, int]:
        wall = time.monotonic_ns() - self.wall0
        now = _schedstat(self.tid) if self.proc else None
        if now is not None:
            return wall, now[0] - self.cpu0, now[1] - self.wait0
        return wall, _cpu_ns() - self.cpu0, 0
