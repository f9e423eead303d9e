"""Dispatcher of the ``real_connection`` unit: the compiled ``_real_connection_c``, else the pure twin."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastnet import _compat

__all__ = ["RECV_BUFFER_SIZE", "RealConnection", "TlsIo", "set_socket_timeouts"]

if TYPE_CHECKING:
    from fastnet._internal.connection._real_connection_py import RECV_BUFFER_SIZE as RECV_BUFFER_SIZE
    from fastnet._internal.connection._real_connection_py import RealConnection as RealConnection
    from fastnet._internal.connection._real_connection_py import TlsIo as TlsIo
    from fastnet._internal.connection._real_connection_py import set_socket_timeouts as set_socket_timeouts
else:
    _compat.install(
        globals(),
        "fastnet._internal.connection.real_connection",
        "fastnet._internal.connection._real_connection_c",
        "fastnet._internal.connection._real_connection_py",
    )
