"""Dispatcher of the ``connection_user`` unit: the compiled ``_connection_user_c``, else the pure twin."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastnet import _compat

__all__ = ["ConnectionUser"]

if TYPE_CHECKING:
    from fastnet._internal.connection._connection_user_py import ConnectionUser
else:
    _impl = _compat.pick(
        "fastnet._internal.connection.connection_user",
        "fastnet._internal.connection._connection_user_c",
        "fastnet._internal.connection._connection_user_py",
    )
    ConnectionUser = _impl.ConnectionUser
