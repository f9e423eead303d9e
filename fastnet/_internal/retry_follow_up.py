"""Dispatcher of the ``retry_follow_up`` unit: the compiled ``_retry_follow_up_c``, else the pure twin."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastnet import _compat

__all__ = [
    "FOLLOW_UP_CODES",
    "REDIRECT_CODES",
    "RetryAndFollowUpInterceptor",
    "follow_up_request",
    "recover",
    "retry_after_seconds",
    "strip_for_new_origin",
]

if TYPE_CHECKING:
    from fastnet._internal._retry_follow_up_py import FOLLOW_UP_CODES as FOLLOW_UP_CODES
    from fastnet._internal._retry_follow_up_py import REDIRECT_CODES as REDIRECT_CODES
    from fastnet._internal._retry_follow_up_py import (
        RetryAndFollowUpInterceptor as RetryAndFollowUpInterceptor,
    )
    from fastnet._internal._retry_follow_up_py import follow_up_request as follow_up_request
    from fastnet._internal._retry_follow_up_py import recover as recover
    from fastnet._internal._retry_follow_up_py import retry_after_seconds as retry_after_seconds
    from fastnet._internal._retry_follow_up_py import strip_for_new_origin as strip_for_new_origin
else:
    _compat.install(
        globals(),
        "fastnet._internal.retry_follow_up",
        "fastnet._internal._retry_follow_up_c",
        "fastnet._internal._retry_follow_up_py",
    )
