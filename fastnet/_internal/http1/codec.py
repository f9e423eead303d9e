"""Dispatcher of the HTTP/1.1 ``codec`` unit: compiled ``_codec_c`` or pure ``_codec_py``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastnet import _compat

__all__ = [
    "LAST_CHUNK",
    "SMALL_BODY",
    "expects_continue",
    "frame_chunk",
    "map_io_error",
    "open_response",
    "request_head",
]

if TYPE_CHECKING:
    from fastnet._internal.http1._codec_py import (
        LAST_CHUNK,
        SMALL_BODY,
        expects_continue,
        frame_chunk,
        map_io_error,
        open_response,
        request_head,
    )
else:
    _impl = _compat.pick(
        "fastnet._internal.http1.codec",
        "fastnet._internal.http1._codec_c",
        "fastnet._internal.http1._codec_py",
    )
    LAST_CHUNK = _impl.LAST_CHUNK
    SMALL_BODY = _impl.SMALL_BODY
    expects_continue = _impl.expects_continue
    frame_chunk = _impl.frame_chunk
    map_io_error = _impl.map_io_error
    open_response = _impl.open_response
    request_head = _impl.request_head
