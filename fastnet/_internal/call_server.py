"""Dispatcher of the ``call_server`` unit: compiled ``_call_server_c`` or pure ``_call_server_py``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastnet import _compat

__all__ = ["CallServerInterceptor"]

if TYPE_CHECKING:
    from fastnet._internal._call_server_py import CallServerInterceptor as CallServerInterceptor
else:
    _compat.install(
        globals(),
        "fastnet._internal.call_server",
        "fastnet._internal._call_server_c",
        "fastnet._internal._call_server_py",
    )
