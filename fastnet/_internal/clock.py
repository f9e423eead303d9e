"""Dispatcher of the ``clock`` unit: the monotonic clock read from C (``_clock_c``) or ``time.monotonic``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastnet import _compat

__all__ = ["monotonic"]

if TYPE_CHECKING:
    from fastnet._internal._clock_py import monotonic as monotonic
else:
    _compat.install(
        globals(), "fastnet._internal.clock", "fastnet._internal._clock_c", "fastnet._internal._clock_py"
    )
