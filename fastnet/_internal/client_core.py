"""Dispatcher of the ``client_core`` unit: compiled ``_client_core_c`` or pure ``_client_core_py``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastnet import _compat

__all__ = ["MAX_BODY_SIZE", "MAX_FOLLOW_UPS", "USER_AGENT", "ClientCore", "watchdog"]

if TYPE_CHECKING:
    from fastnet._internal._client_core_py import MAX_BODY_SIZE as MAX_BODY_SIZE
    from fastnet._internal._client_core_py import MAX_FOLLOW_UPS as MAX_FOLLOW_UPS
    from fastnet._internal._client_core_py import USER_AGENT as USER_AGENT
    from fastnet._internal._client_core_py import ClientCore as ClientCore
    from fastnet._internal._client_core_py import watchdog as watchdog
else:
    _compat.install(
        globals(),
        "fastnet._internal.client_core",
        "fastnet._internal._client_core_c",
        "fastnet._internal._client_core_py",
    )
