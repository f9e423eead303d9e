"""The one place that decides between the compiled and the pure-Python build.

``FASTNET_NO_EXTENSIONS=1`` forces pure Python (at build time in ``setup.py`` and at import time
here); ``FASTNET_REQUIRE_EXTENSIONS=1`` turns a missing compiled module into an ``ImportError`` so a
broken build cannot pass silently. ``"0"``, ``"false"``, ``"no"``, ``"off"`` and ``""`` mean off.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

__all__ = ["NO_EXTENSIONS", "REQUIRE_EXTENSIONS", "env_flag", "install", "pick"]


def env_flag(name: str) -> bool:
    """True when the environment variable ``name`` is set to something other than an off value."""
    value = os.environ.get(name, "").strip().lower()
    return value not in ("", "0", "false", "no", "off")


NO_EXTENSIONS: bool = env_flag("FASTNET_NO_EXTENSIONS")
REQUIRE_EXTENSIONS: bool = env_flag("FASTNET_REQUIRE_EXTENSIONS") and not NO_EXTENSIONS

#: Names of the compiled modules that were loaded, filled in by :func:`pick`.
loaded_compiled: set[str] = set()
#: Names of the compiled modules that were wanted but fell back to pure Python.
missing_compiled: set[str] = set()


def pick(name: str, compiled: str, pure: str) -> ModuleType:
    """The compiled twin (module ``compiled``) of unit ``name`` when allowed and available, else the
    pure twin (module ``pure``). ``name`` is the unit's dispatcher, the only module that calls this."""
    if not NO_EXTENSIONS:
        try:
            module = importlib.import_module(compiled)
        except ImportError:
            if REQUIRE_EXTENSIONS:
                raise
            missing_compiled.add(name)
        else:
            loaded_compiled.add(name)
            return module
    return importlib.import_module(pure)


def install(namespace: dict[str, object], name: str, compiled: str, pure: str) -> None:
    """Fill a dispatcher's ``namespace`` with every name in its chosen twin's ``__all__``.

    A dispatcher lists the names under ``if TYPE_CHECKING:`` (imported from the pure twin, which is what
    type checkers read) and calls this at run time, so the list is written once::

        if TYPE_CHECKING:
            from fastnet._headers_py import Headers as Headers
        else:
            _compat.install(globals(), "fastnet.headers", "fastnet._headers_c", "fastnet._headers_py")
    """
    module = pick(name, compiled, pure)
    for attr in module.__all__:
        namespace[attr] = getattr(module, attr)
