"""``timeout_seconds`` (``fastnet._internal.util.timeouts``): one check of a timeout value for every client
option, ``Timeout`` phase and ``chain.with_*_timeout``; ``None`` is 0.0 (no timeout) and a bad value
names its option. The timeouts on real sockets are tests/integration/test_timeouts.py."""

from __future__ import annotations

from typing import Any

import pytest

import fastnet
from fastnet._internal.util.timeouts import MAX_TIMEOUT, timeout_seconds


@pytest.mark.parametrize(
    "value, seconds", [(None, 0.0), (0, 0.0), (5, 5.0), (2.5, 2.5), (MAX_TIMEOUT, MAX_TIMEOUT)]
)
def test_timeouts_good_values(value: Any, seconds: float) -> None:
    result = timeout_seconds("read_timeout", value)
    assert result == seconds and type(result) is float


@pytest.mark.parametrize(
    "value, error, message",
    [
        (-1, ValueError, "read_timeout must be >= 0 seconds"),
        (float("nan"), ValueError, "read_timeout must be >= 0 seconds"),
        (MAX_TIMEOUT * 2, ValueError, "read_timeout too large"),
        (float("inf"), ValueError, "read_timeout too large"),
        ("5", TypeError, "read_timeout must be a number of seconds or None, not str"),
        (True, TypeError, "not bool"),
        ([1], TypeError, "not list"),
    ],
)
def test_timeouts_bad_values_name_the_option(value: Any, error: type, message: str) -> None:
    with pytest.raises(error, match=message.replace("(", r"\(")):
        timeout_seconds("read_timeout", value)


def test_timeouts_the_client_options_are_checked_by_it() -> None:
    with pytest.raises(ValueError, match="connect_timeout must be >= 0"):
        fastnet.Client(connect_timeout=-0.5, trust_env=False)
    with pytest.raises(TypeError, match="call_timeout must be a number"):
        fastnet.Client(call_timeout="10", trust_env=False)  # type: ignore[arg-type]
    with fastnet.Client(write_timeout=None, trust_env=False) as client:
        assert client.write_timeout is None
