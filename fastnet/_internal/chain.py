"""Dispatcher of the ``chain`` unit: compiled ``_chain_c`` or pure ``_chain_py``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastnet import _compat

__all__ = ["FunctionInterceptor", "InternalInterceptor", "RealInterceptorChain", "first_chain"]

if TYPE_CHECKING:
    from fastnet._internal._chain_py import FunctionInterceptor as FunctionInterceptor
    from fastnet._internal._chain_py import InternalInterceptor as InternalInterceptor
    from fastnet._internal._chain_py import RealInterceptorChain as RealInterceptorChain
    from fastnet._internal._chain_py import first_chain as first_chain
else:
    _compat.install(
        globals(),
        "fastnet._internal.chain",
        "fastnet._internal._chain_c",
        "fastnet._internal._chain_py",
    )
