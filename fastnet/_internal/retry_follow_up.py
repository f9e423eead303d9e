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
    from fastnet._internal._retry_follow_up_py import (
        FOLLOW_UP_CODES,
        REDIRECT_CODES,
        RetryAndFollowUpInterceptor,
        follow_up_request,
        recover,
        retry_after_seconds,
        strip_for_new_origin,
    )
else:
    _impl = _compat.pick(
        "fastnet._internal.retry_follow_up",
        "fastnet._internal._retry_follow_up_c",
        "fastnet._internal._retry_follow_up_py",
    )
    FOLLOW_UP_CODES = _impl.FOLLOW_UP_CODES
    REDIRECT_CODES = _impl.REDIRECT_CODES
    RetryAndFollowUpInterceptor = _impl.RetryAndFollowUpInterceptor
    follow_up_request = _impl.follow_up_request
    recover = _impl.recover
    retry_after_seconds = _impl.retry_after_seconds
    strip_for_new_origin = _impl.strip_for_new_origin
