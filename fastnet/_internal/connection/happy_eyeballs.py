"""Dispatcher of the ``happy_eyeballs`` unit: the compiled ``_happy_eyeballs_c``, else the pure twin."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastnet import _compat

__all__ = [
    "CANCEL_CHECK_INTERVAL",
    "DEFAULT_ATTEMPT_DELAY",
    "all_failed",
    "connect_error",
    "connect_one",
    "connect_tcp",
    "default_target",
    "describe_target",
    "new_socket",
    "sockaddr_of",
]

if TYPE_CHECKING:
    from fastnet._internal.connection._happy_eyeballs_py import (
        CANCEL_CHECK_INTERVAL as CANCEL_CHECK_INTERVAL,
    )
    from fastnet._internal.connection._happy_eyeballs_py import (
        DEFAULT_ATTEMPT_DELAY as DEFAULT_ATTEMPT_DELAY,
    )
    from fastnet._internal.connection._happy_eyeballs_py import all_failed as all_failed
    from fastnet._internal.connection._happy_eyeballs_py import connect_error as connect_error
    from fastnet._internal.connection._happy_eyeballs_py import connect_one as connect_one
    from fastnet._internal.connection._happy_eyeballs_py import connect_tcp as connect_tcp
    from fastnet._internal.connection._happy_eyeballs_py import default_target as default_target
    from fastnet._internal.connection._happy_eyeballs_py import describe_target as describe_target
    from fastnet._internal.connection._happy_eyeballs_py import new_socket as new_socket
    from fastnet._internal.connection._happy_eyeballs_py import sockaddr_of as sockaddr_of
else:
    _compat.install(
        globals(),
        "fastnet._internal.connection.happy_eyeballs",
        "fastnet._internal.connection._happy_eyeballs_c",
        "fastnet._internal.connection._happy_eyeballs_py",
    )
