"""Dispatcher of the ``bridge`` unit: compiled ``_bridge_c`` or pure ``_bridge_py``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastnet import _compat

__all__ = ["BridgeInterceptor"]

if TYPE_CHECKING:
    from fastnet._internal._bridge_py import BridgeInterceptor as BridgeInterceptor
else:
    _compat.install(
        globals(),
        "fastnet._internal.bridge",
        "fastnet._internal._bridge_c",
        "fastnet._internal._bridge_py",
    )
