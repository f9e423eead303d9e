"""``Request`` and ``RequestBody`` (compiled in the compiled build).

The dispatcher of the ``request`` unit: ``_request_c`` when the compiled build is in use, else the pure
``_request_py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastnet import _compat

__all__ = ["BodyLike", "Request", "RequestBody"]

if TYPE_CHECKING:
    from fastnet._request_py import KNOWN_METHODS, BodyLike, Request, RequestBody, check_method, make_request
else:
    _impl = _compat.pick("fastnet.request", "fastnet._request_c", "fastnet._request_py")
    KNOWN_METHODS = _impl.KNOWN_METHODS
    BodyLike = _impl.BodyLike
    Request = _impl.Request
    RequestBody = _impl.RequestBody
    check_method = _impl.check_method
    make_request = _impl.make_request
