"""``Headers``: ordered, case-insensitive, immutable multi-map (compiled in the compiled build)."""

from __future__ import annotations

from fastnet._internal.core import Headers

__all__ = ["Headers"]
