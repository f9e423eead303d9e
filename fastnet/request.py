"""``Request`` and ``RequestBody`` (compiled in the compiled build).

The dispatcher of the ``request`` unit: ``_request_c`` when the compiled build is in use, else the pure
``_request_py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastnet import _compat

__all__ = ["BodyLike", "Request", "RequestBody"]

if TYPE_CHECKING:
    from fastnet._request_py import KNOWN_METHODS as KNOWN_METHODS
    from fastnet._request_py import BodyLike as BodyLike
    from fastnet._request_py import Request as Request
    from fastnet._request_py import RequestBody as RequestBody
    from fastnet._request_py import basic_authorization as basic_authorization
    from fastnet._request_py import check_method as check_method
    from fastnet._request_py import make_request as make_request
    from fastnet._request_py import proxy_from_url as proxy_from_url
    from fastnet._request_py import with_query as with_query
else:
    _compat.install(globals(), "fastnet.request", "fastnet._request_c", "fastnet._request_py")
