"""Dispatcher of the ``chain`` unit: compiled ``_chain_c`` or pure ``_chain_py``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastnet import _compat

__all__ = ["FunctionInterceptor", "InternalInterceptor", "RealInterceptorChain", "first_chain"]

if TYPE_CHECKING:
    from fastnet._internal._chain_py import (
        FunctionInterceptor,
        InternalInterceptor,
        RealInterceptorChain,
        first_chain,
    )
else:
    _impl = _compat.pick(
        "fastnet._internal.chain", "fastnet._internal._chain_c", "fastnet._internal._chain_py"
    )
    FunctionInterceptor = _impl.FunctionInterceptor
    InternalInterceptor = _impl.InternalInterceptor
    RealInterceptorChain = _impl.RealInterceptorChain
    first_chain = _impl.first_chain
