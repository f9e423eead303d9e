"""Dispatcher of the ``kernel_timeout`` unit: the compiled ``_kernel_timeout_c``, else the pure twin."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastnet import _compat

__all__ = ["set_kernel_timeout"]

if TYPE_CHECKING:
    from fastnet._internal.connection._kernel_timeout_py import set_kernel_timeout as set_kernel_timeout
else:
    _compat.install(
        globals(),
        "fastnet._internal.connection.kernel_timeout",
        "fastnet._internal.connection._kernel_timeout_c",
        "fastnet._internal.connection._kernel_timeout_py",
    )
