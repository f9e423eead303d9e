"""Dispatcher of the ``connect`` unit: compiled ``_connect_c`` or pure ``_connect_py``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastnet import _compat

__all__ = ["ConnectInterceptor"]

if TYPE_CHECKING:
    from fastnet._internal._connect_py import ConnectInterceptor as ConnectInterceptor
else:
    _compat.install(
        globals(),
        "fastnet._internal.connect",
        "fastnet._internal._connect_c",
        "fastnet._internal._connect_py",
    )
