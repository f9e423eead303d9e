"""``Response`` (compiled in the compiled build).

The dispatcher of the ``response`` unit: ``_response_c`` when the compiled build is in use, else the
pure ``_response_py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastnet import _compat

__all__ = ["Response"]

if TYPE_CHECKING:
    from fastnet._response_py import STATUS_REASONS as STATUS_REASONS
    from fastnet._response_py import Response as Response
    from fastnet._response_py import ResponseBodySource as ResponseBodySource
    from fastnet._response_py import make_response as make_response
else:
    _compat.install(globals(), "fastnet.response", "fastnet._response_c", "fastnet._response_py")
