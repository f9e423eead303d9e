"""``Request`` and ``RequestBody`` (compiled in the compiled build)."""

from __future__ import annotations

from fastnet._internal.core import Request, RequestBody

__all__ = ["Request", "RequestBody"]
