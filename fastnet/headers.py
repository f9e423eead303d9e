"""``Headers``: ordered, case-insensitive, immutable multi-map (compiled in the compiled build).

The dispatcher of the ``headers`` unit: ``_headers_c`` when the compiled build is in use, else the pure
``_headers_py``. Everything else imports these names from here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastnet import _compat

__all__ = ["Headers", "HeadersLike"]

if TYPE_CHECKING:
    from fastnet._headers_py import (
        EMPTY_HEADERS,
        SENSITIVE,
        TCHAR,
        Headers,
        HeadersLike,
        as_headers,
        check_name,
        check_value,
        headers_from_list,
    )
else:
    _impl = _compat.pick("fastnet.headers", "fastnet._headers_c", "fastnet._headers_py")
    EMPTY_HEADERS = _impl.EMPTY_HEADERS
    SENSITIVE = _impl.SENSITIVE
    TCHAR = _impl.TCHAR
    Headers = _impl.Headers
    HeadersLike = _impl.HeadersLike
    as_headers = _impl.as_headers
    check_name = _impl.check_name
    check_value = _impl.check_value
    headers_from_list = _impl.headers_from_list
