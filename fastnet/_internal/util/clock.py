"""The monotonic clock (pure twin of the compiled ``_clock_c``): ``time.monotonic``."""

from __future__ import annotations

import time

__all__ = ["monotonic"]

monotonic = time.monotonic
