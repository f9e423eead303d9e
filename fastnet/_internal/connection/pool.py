"""Dispatcher for the connection pool's machinery: compiled ``_pool_c`` or pure ``_pool_py``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastnet import _compat

__all__ = ["SLOT_IDLE", "SLOT_ROOM", "SLOT_WAIT", "RealConnectionPool", "pool_timeout"]

if TYPE_CHECKING:
    from fastnet._internal.connection._pool_py import SLOT_IDLE as SLOT_IDLE
    from fastnet._internal.connection._pool_py import SLOT_ROOM as SLOT_ROOM
    from fastnet._internal.connection._pool_py import SLOT_WAIT as SLOT_WAIT
    from fastnet._internal.connection._pool_py import RealConnectionPool as RealConnectionPool
    from fastnet._internal.connection._pool_py import pool_timeout as pool_timeout
else:
    _compat.install(
        globals(),
        "fastnet._internal.connection.pool",
        "fastnet._internal.connection._pool_c",
        "fastnet._internal.connection._pool_py",
    )
