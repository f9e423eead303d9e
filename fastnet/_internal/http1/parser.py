"""HTTP/1.1 response parser: the compiled twin (``_parser_c``) when available, else the h11-based twin.

Both twins have the same API and make the same accept/reject decisions (see ``_parser_py`` for the
rules and ``tests/_internal/http1/test_parser.py`` for the differential tests). Usage::

    from fastnet._internal.http1.parser import BODY_LENGTH, ResponseParser

    p = ResponseParser()
    p.feed(b"HTTP/1.1 200 OK\\r\\nContent-Length: 2\\r\\n\\r\\nhi")
    status, reason, version, headers, mode, length, keep_alive, encoding = p.read_head()
    body = p.read_body()          # b"hi"; then None when complete
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastnet import _compat

__all__ = [
    "BODY_CHUNKED",
    "BODY_LENGTH",
    "BODY_NONE",
    "BODY_UNTIL_CLOSE",
    "IMPLEMENTATION",
    "PREALLOCATE",
    "ResponseParser",
    "receive_exact",
]

if TYPE_CHECKING:
    from fastnet._internal.http1._parser_py import BODY_CHUNKED as BODY_CHUNKED
    from fastnet._internal.http1._parser_py import BODY_LENGTH as BODY_LENGTH
    from fastnet._internal.http1._parser_py import BODY_NONE as BODY_NONE
    from fastnet._internal.http1._parser_py import BODY_UNTIL_CLOSE as BODY_UNTIL_CLOSE
    from fastnet._internal.http1._parser_py import PREALLOCATE as PREALLOCATE
    from fastnet._internal.http1._parser_py import ResponseParser as ResponseParser
    from fastnet._internal.http1._parser_py import receive_exact as receive_exact
else:
    _compat.install(
        globals(),
        "fastnet._internal.http1.parser",
        "fastnet._internal.http1._parser_c",
        "fastnet._internal.http1._parser_py",
    )

#: Name of the module that provides :class:`ResponseParser` (``..._parser_c`` or ``..._parser_py``).
IMPLEMENTATION: str = ResponseParser.__module__
