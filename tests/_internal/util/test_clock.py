"""The monotonic clock (``fastnet._internal.util.clock``), both twins: the C twin reads
``clock_gettime(CLOCK_MONOTONIC)``, the clock ``time.monotonic`` reads, so the two interleave in order;
and the module is the build that was loaded."""

from __future__ import annotations

import time
import types

import pytest

from fastnet import _compat
from fastnet._internal.util import clock
from tests.support.twins import Twins


@pytest.fixture
def twin(twins: Twins) -> types.ModuleType:
    return twins("fastnet._internal.util.clock")


def test_clock_is_the_clock_time_monotonic_reads(twin: types.ModuleType) -> None:
    for _ in range(1000):
        before = time.monotonic()
        now = twin.monotonic()
        after = time.monotonic()
        assert before <= now + 1e-6 and now <= after + 1e-6  # a double of seconds: rounding only


def test_clock_never_goes_back(twin: types.ModuleType) -> None:
    readings = [twin.monotonic() for _ in range(10_000)]
    assert readings == sorted(readings)
    assert all(isinstance(r, float) for r in readings[:10])


def test_clock_module_is_the_loaded_build() -> None:
    assert clock.__all__ == ["monotonic"]
    if _compat.is_compiled("fastnet._internal.util.clock"):
        assert not _compat.NO_EXTENSIONS
        assert (clock.__file__ or "").endswith((".so", ".pyd"))  # clock.pyx, read from C
    else:
        assert clock.monotonic is time.monotonic  # the pure clock.py is time.monotonic itself
