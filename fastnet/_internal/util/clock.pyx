# cython: language_level=3
"""The monotonic clock in C (``clock_gettime(CLOCK_MONOTONIC)``, the clock ``time.monotonic`` reads).

Compiled twin of ``_clock_py``; import through ``fastnet._internal.util.clock``. Units that time phases of a
request ``cimport`` ``monotonic`` from ``_clock_c.pxd``: a vDSO call, no Python object.
"""

from posix.time cimport CLOCK_MONOTONIC, clock_gettime, timespec

__all__ = ["monotonic"]


cpdef double monotonic():
    """Seconds on the monotonic clock (the same clock as ``time.monotonic()``)."""
    cdef timespec ts
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return ts.tv_sec + ts.tv_nsec * 1e-9
