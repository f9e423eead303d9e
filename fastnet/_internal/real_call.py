"""Dispatcher of the ``real_call`` unit: compiled ``_real_call_c`` or pure ``_real_call_py``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastnet import _compat

__all__ = ["RealCall", "get", "new_call", "request"]

if TYPE_CHECKING:
    from fastnet._internal._real_call_py import RealCall as RealCall
    from fastnet._internal._real_call_py import get as get
    from fastnet._internal._real_call_py import new_call as new_call
    from fastnet._internal._real_call_py import request as request
else:
    _compat.install(
        globals(),
        "fastnet._internal.real_call",
        "fastnet._internal._real_call_c",
        "fastnet._internal._real_call_py",
    )
