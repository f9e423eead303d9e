"""Dispatcher for the connection pool's machinery: compiled ``_pool_c`` or pure ``_pool_py``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastnet import _compat

__all__ = ["RealConnectionPool"]

if TYPE_CHECKING:
    from fastnet._internal.connection._pool_py import RealConnectionPool as RealConnectionPool
else:
    _compat.install(
        globals(),
        "fastnet._internal.connection.pool",
        "fastnet._internal.connection._pool_c",
        "fastnet._internal.connection._pool_py",
    )
