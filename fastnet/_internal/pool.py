"""Dispatcher for the connection pool's machinery: compiled ``_pool_c`` or pure ``_pool_py``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastnet import _compat

__all__ = ["RealConnectionPool", "implementation"]

if TYPE_CHECKING:
    from fastnet._internal import _pool_py as implementation
    from fastnet._internal._pool_py import RealConnectionPool
else:
    implementation = _compat.pick(
        "fastnet._internal.pool",
        lambda: __import__("fastnet._internal._pool_c", fromlist=["*"]),
        lambda: __import__("fastnet._internal._pool_py", fromlist=["*"]),
    )
    RealConnectionPool = implementation.RealConnectionPool
