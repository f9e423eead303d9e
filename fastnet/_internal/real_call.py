"""Dispatcher of the ``real_call`` unit: compiled ``_real_call_c`` or pure ``_real_call_py``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastnet import _compat

__all__ = ["RealCall", "get", "new_call", "request"]

if TYPE_CHECKING:
    from fastnet._internal._real_call_py import RealCall, get, new_call, request
else:
    _impl = _compat.pick(
        "fastnet._internal.real_call", "fastnet._internal._real_call_c", "fastnet._internal._real_call_py"
    )
    RealCall = _impl.RealCall
    get = _impl.get
    new_call = _impl.new_call
    request = _impl.request
