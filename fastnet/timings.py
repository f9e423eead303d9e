"""``Timings``: the phases of a response (compiled in the compiled build); see ``response.timings``.

The dispatcher of the ``timings`` unit: ``_timings_c`` in the compiled build, else ``_timings_py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastnet import _compat

__all__ = ["Timings"]

if TYPE_CHECKING:
    from fastnet._timings_py import Timings as Timings
    from fastnet._timings_py import new_timings as new_timings
else:
    _compat.install(globals(), "fastnet.timings", "fastnet._timings_c", "fastnet._timings_py")
