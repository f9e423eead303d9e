"""Dispatcher of the ``connector`` unit: compiled ``_connector_c`` or pure ``_connector_py``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastnet import _compat

__all__ = ["Connector"]

if TYPE_CHECKING:
    from fastnet._internal.connection._connector_py import Connector as Connector
else:
    _compat.install(
        globals(),
        "fastnet._internal.connection.connector",
        "fastnet._internal.connection._connector_c",
        "fastnet._internal.connection._connector_py",
    )
