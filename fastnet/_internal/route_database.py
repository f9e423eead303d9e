"""Dispatcher of the ``route_database`` unit: the compiled ``_route_database_c``, else the pure twin."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastnet import _compat

__all__ = ["RouteDatabase"]

if TYPE_CHECKING:
    from fastnet._internal._route_database_py import RouteDatabase as RouteDatabase
else:
    _compat.install(
        globals(),
        "fastnet._internal.route_database",
        "fastnet._internal._route_database_c",
        "fastnet._internal._route_database_py",
    )
