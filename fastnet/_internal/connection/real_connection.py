"""Dispatcher of the ``real_connection`` unit: the compiled ``_real_connection_c``, else the pure twin."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastnet import _compat

__all__ = ["RECV_BUFFER_SIZE", "RealConnection", "set_socket_timeouts", "timeval"]

if TYPE_CHECKING:
    from fastnet._internal.connection._real_connection_py import (
        RECV_BUFFER_SIZE,
        RealConnection,
        set_socket_timeouts,
        timeval,
    )
else:
    _impl = _compat.pick(
        "fastnet._internal.connection.real_connection",
        "fastnet._internal.connection._real_connection_c",
        "fastnet._internal.connection._real_connection_py",
    )
    RECV_BUFFER_SIZE = _impl.RECV_BUFFER_SIZE
    RealConnection = _impl.RealConnection
    set_socket_timeouts = _impl.set_socket_timeouts
    timeval = _impl.timeval
