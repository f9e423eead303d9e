"""HTTP/1.1 response parser: the compiled twin (``_parser_c``) when available, else the h11-based twin.

Both twins have the same API and make the same accept/reject decisions (see ``_parser_py`` for the
rules and ``tests/test_http1_parser.py`` for the differential tests). Usage::

    from fastnet._internal.http1.parser import BODY_LENGTH, ResponseParser

    p = ResponseParser()
    p.feed(b"HTTP/1.1 200 OK\\r\\nContent-Length: 2\\r\\n\\r\\nhi")
    status, reason, version, headers, mode, length, keep_alive, encoding = p.read_head()
    body = p.read_body()          # b"hi"; then None when complete
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fastnet import _compat

__all__ = [
    "BODY_CHUNKED",
    "BODY_LENGTH",
    "BODY_NONE",
    "BODY_UNTIL_CLOSE",
    "IMPLEMENTATION",
    "ResponseParser",
    "receive_exact",
]

BODY_NONE = 0
BODY_LENGTH = 1
BODY_CHUNKED = 2
BODY_UNTIL_CLOSE = 3


def _receive_exact_py(recv_into: Any, head: bytes, total: int) -> tuple[bytes, int]:
    """Pure twin of ``_parser_c.receive_exact``: receive the rest of a ``total``-byte body into one buffer."""
    out = bytearray(total)
    have = len(head)
    out[:have] = head
    view = memoryview(out)
    try:
        while have < total:
            n = recv_into(view[have:])
            if n == 0:
                break
            have += n
    finally:
        view.release()
    return bytes(out), have


if TYPE_CHECKING:
    from fastnet._internal.http1._parser_py import ResponseParser

    receive_exact = _receive_exact_py
else:
    _impl = _compat.pick(
        "fastnet._internal.http1.parser",
        lambda: __import__("fastnet._internal.http1._parser_c", fromlist=["*"]),
        lambda: __import__("fastnet._internal.http1._parser_py", fromlist=["*"]),
    )
    ResponseParser = _impl.ResponseParser
    receive_exact = getattr(_impl, "receive_exact", _receive_exact_py)

#: Name of the module that provides :class:`ResponseParser` (``..._parser_c`` or ``..._parser_py``).
IMPLEMENTATION: str = ResponseParser.__module__
