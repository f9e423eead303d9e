"""``Headers``: ordered, case-insensitive, immutable multi-map (compiled in the compiled build).

The dispatcher of the ``headers`` unit: ``_headers_c`` when the compiled build is in use, else the pure
``_headers_py``. Everything else imports these names from here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastnet import _compat

__all__ = ["Headers", "HeadersLike"]

if TYPE_CHECKING:
    from fastnet._headers_py import EMPTY_HEADERS as EMPTY_HEADERS
    from fastnet._headers_py import SENSITIVE as SENSITIVE
    from fastnet._headers_py import TCHAR as TCHAR
    from fastnet._headers_py import Headers as Headers
    from fastnet._headers_py import HeadersLike as HeadersLike
    from fastnet._headers_py import as_headers as as_headers
    from fastnet._headers_py import check_name as check_name
    from fastnet._headers_py import check_value as check_value
    from fastnet._headers_py import headers_from_list as headers_from_list
else:
    _compat.install(globals(), "fastnet.headers", "fastnet._headers_c", "fastnet._headers_py")
