"""Dispatcher of the ``connection_user`` unit: the compiled ``_connection_user_c``, else the pure twin."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastnet import _compat

__all__ = ["ConnectionUser"]

if TYPE_CHECKING:
    from fastnet._internal.connection._connection_user_py import ConnectionUser as ConnectionUser
else:
    _compat.install(
        globals(),
        "fastnet._internal.connection.connection_user",
        "fastnet._internal.connection._connection_user_c",
        "fastnet._internal.connection._connection_user_py",
    )
