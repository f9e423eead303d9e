"""Checking timeout values, the same way for client options and for ``chain.with_*_timeout``."""

from __future__ import annotations

__all__ = ["MAX_TIMEOUT", "timeout_seconds"]

#: The largest timeout the kernel's ``struct timeval`` and ``threading`` waits take without surprises.
MAX_TIMEOUT = 2147483.647


def timeout_seconds(name: str, value: object) -> float:
    """``value`` (seconds, or None for no timeout) as a float, 0.0 meaning none; bad values raise an error
    that names the option."""
    if value is None:
        return 0.0
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number of seconds or None, not {type(value).__name__}")
    if value != value or value < 0:
        raise ValueError(f"{name} must be >= 0 seconds (or None for no timeout), not {value!r}")
    if value > MAX_TIMEOUT:
        raise ValueError(f"{name} too large: {value!r} seconds")
    return float(value)
