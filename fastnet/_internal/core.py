"""Dispatcher for the per-request path: compiled ``_core_c`` or pure ``_core_py``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastnet import _compat

__all__ = [
    "ClientCore",
    "FunctionInterceptor",
    "Headers",
    "RealCall",
    "RealConnection",
    "RealInterceptorChain",
    "Request",
    "RequestBody",
    "Response",
    "implementation",
]

if TYPE_CHECKING:
    from fastnet._internal import _core_py as implementation
    from fastnet._internal._core_py import (
        ClientCore,
        FunctionInterceptor,
        Headers,
        RealCall,
        RealConnection,
        RealInterceptorChain,
        Request,
        RequestBody,
        Response,
    )
else:
    implementation = _compat.pick(
        "fastnet._internal.core",
        lambda: __import__("fastnet._internal._core_c", fromlist=["*"]),
        lambda: __import__("fastnet._internal._core_py", fromlist=["*"]),
    )
    ClientCore = implementation.ClientCore
    FunctionInterceptor = implementation.FunctionInterceptor
    Headers = implementation.Headers
    RealCall = implementation.RealCall
    RealConnection = implementation.RealConnection
    RealInterceptorChain = implementation.RealInterceptorChain
    Request = implementation.Request
    RequestBody = implementation.RequestBody
    Response = implementation.Response
