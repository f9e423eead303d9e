"""``Response`` (compiled in the compiled build).

The dispatcher of the ``response`` unit: ``_response_c`` when the compiled build is in use, else the
pure ``_response_py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastnet import _compat

__all__ = ["Response"]

if TYPE_CHECKING:
    from fastnet._response_py import STATUS_REASONS, Response, ResponseBodySource, make_response
else:
    _impl = _compat.pick("fastnet.response", "fastnet._response_c", "fastnet._response_py")
    STATUS_REASONS = _impl.STATUS_REASONS
    Response = _impl.Response
    ResponseBodySource = _impl.ResponseBodySource
    make_response = _impl.make_response
