"""``Response`` (compiled in the compiled build)."""

from __future__ import annotations

from fastnet._internal.core import Response

__all__ = ["Response"]
