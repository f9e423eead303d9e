"""Dispatcher of the HTTP/1.1 ``codec`` unit: compiled ``_codec_c`` or pure ``_codec_py``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastnet import _compat

__all__ = [
    "CHUNKED",
    "LAST_CHUNK",
    "MAX_INTERIM_RESPONSES",
    "NO_BODY",
    "SMALL_BODY",
    "expects_continue",
    "frame_chunk",
    "map_io_error",
    "open_response",
    "request_framing",
    "request_head",
]

if TYPE_CHECKING:
    from fastnet._internal.http1._codec_py import CHUNKED as CHUNKED
    from fastnet._internal.http1._codec_py import LAST_CHUNK as LAST_CHUNK
    from fastnet._internal.http1._codec_py import MAX_INTERIM_RESPONSES as MAX_INTERIM_RESPONSES
    from fastnet._internal.http1._codec_py import NO_BODY as NO_BODY
    from fastnet._internal.http1._codec_py import SMALL_BODY as SMALL_BODY
    from fastnet._internal.http1._codec_py import expects_continue as expects_continue
    from fastnet._internal.http1._codec_py import frame_chunk as frame_chunk
    from fastnet._internal.http1._codec_py import map_io_error as map_io_error
    from fastnet._internal.http1._codec_py import open_response as open_response
    from fastnet._internal.http1._codec_py import request_framing as request_framing
    from fastnet._internal.http1._codec_py import request_head as request_head
else:
    _compat.install(
        globals(),
        "fastnet._internal.http1.codec",
        "fastnet._internal.http1._codec_c",
        "fastnet._internal.http1._codec_py",
    )
