"""The one place that decides between the compiled and the pure-Python build.

A compiled unit is built in place, under its own name: ``headers.py`` with its declarations
``headers.pxd`` becomes ``headers.cpython-*.so`` beside them, and the import system prefers the
extension module to the source. Where the C source really differs from the Python (the response parser,
the clock, kernel socket timeouts) ``x.pyx`` is compiled instead of ``x.py``, under the same name. The
load generator's loop, whose engine a run may choose, keeps both twins, ``_loop_c`` and ``_loop_py``,
and ``fastnet.load.loop`` picks one with :func:`pick`.

``FASTNET_NO_EXTENSIONS=1`` forces pure Python (at build time in ``setup.py``, and at import time here:
a finder loads each in-place unit from its ``.py`` even where its extension module was built);
``FASTNET_REQUIRE_EXTENSIONS=1`` turns a unit that would load as Python into an ``ImportError``, so a
broken build cannot pass silently. ``"0"``, ``"false"``, ``"no"``, ``"off"`` and ``""`` mean off.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import os
import sys
from collections.abc import Sequence
from types import ModuleType

__all__ = [
    "NO_EXTENSIONS",
    "REQUIRE_EXTENSIONS",
    "compiled_units",
    "env_flag",
    "install",
    "is_compiled",
    "pick",
]


def env_flag(name: str) -> bool:
    """True when the environment variable ``name`` is set to something other than an off value."""
    value = os.environ.get(name, "").strip().lower()
    return value not in ("", "0", "false", "no", "off")


NO_EXTENSIONS: bool = env_flag("FASTNET_NO_EXTENSIONS")
REQUIRE_EXTENSIONS: bool = env_flag("FASTNET_REQUIRE_EXTENSIONS") and not NO_EXTENSIONS

PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))

#: Names of the ``.pyx`` units' modules that loaded their compiled twin, filled in by :func:`pick`.
loaded_compiled: set[str] = set()
#: Names of the ``.pyx`` units' modules that wanted their compiled twin but fell back to pure Python.
missing_compiled: set[str] = set()


def pick(name: str, compiled: str, pure: str) -> ModuleType:
    """The compiled twin (module ``compiled``) of ``.pyx`` unit ``name`` when allowed and available, else
    the pure twin (module ``pure``). ``name`` is the unit's own module, the only one that calls this."""
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
    """Fill ``fastnet.load.loop``'s ``namespace`` with every name in its chosen twin's ``__all__``.

    It lists the names under ``if TYPE_CHECKING:`` (imported from the pure twin, which is what
    type checkers read) and calls this at run time, so the list is written once::

        if TYPE_CHECKING:
            from fastnet.load._loop_py import Engine as Engine
        else:
            _compat.install(globals(), "fastnet.load.loop", "fastnet.load._loop_c", "fastnet.load._loop_py")
    """
    module = pick(name, compiled, pure)
    for attr in module.__all__:
        namespace[attr] = getattr(module, attr)


def compiled_units() -> list[str]:
    """Dotted names of every unit the compiled build compiles: each ``x.py`` with an ``x.pxd`` or an
    ``x.pyx`` beside it, and ``fastnet.load.loop`` (for ``_loop_c.pyx``)."""
    root = os.path.dirname(PACKAGE_DIR)
    names = []
    for folder, _, files in os.walk(PACKAGE_DIR):
        package = os.path.relpath(folder, root).replace(os.sep, ".")
        for file in files:
            stem, ext = os.path.splitext(file)
            if ext == ".pxd" and stem + ".py" in files:
                names.append(f"{package}.{stem}")
            elif ext == ".pyx" and stem.startswith("_") and stem.endswith("_c"):
                names.append(f"{package}.{stem[1:-2]}")
    return sorted(names)


def pure_twin(name: str) -> ModuleType:
    """Unit ``name``'s pure-Python module, loaded from its ``.py`` as ``<name>__pure`` even where the
    compiled build is running: for tests that compare the two builds in one process."""
    alias = name + "__pure"
    if alias not in sys.modules:
        module = importlib.import_module(name)
        source = os.path.splitext(module.__file__ or "")[0].partition(".cpython")[0] + ".py"
        spec = importlib.util.spec_from_file_location(alias, source)
        assert spec is not None and spec.loader is not None
        twin = importlib.util.module_from_spec(spec)
        sys.modules[alias] = twin
        spec.loader.exec_module(twin)
    return sys.modules[alias]


def is_compiled(name: str) -> bool:
    """Whether unit ``name`` (a name from :func:`compiled_units`) runs compiled; imports it if needed."""
    module = importlib.import_module(name)
    if name in loaded_compiled or name in missing_compiled:
        return name in loaded_compiled
    return isinstance(getattr(module, "__loader__", None), importlib.machinery.ExtensionFileLoader)


class _BuildFinder:
    """Loads fastnet's in-place units as the FASTNET_* switches say: from their ``.py`` under
    ``FASTNET_NO_EXTENSIONS``, and never from their ``.py`` under ``FASTNET_REQUIRE_EXTENSIONS``.
    On ``sys.meta_path`` only when one of the two is set, so a default import costs nothing."""

    @classmethod
    def find_spec(
        cls, name: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if path is None or not name.startswith("fastnet."):
            return None
        leaf = name.rpartition(".")[2]
        for folder in path:
            source = os.path.join(folder, leaf + ".py")
            if not os.path.exists(os.path.join(folder, leaf + ".pxd")) or not os.path.exists(source):
                continue  # every in-place unit has a .pxd: the .py's C types, or the .pyx's declarations
            if NO_EXTENSIONS:
                return importlib.util.spec_from_file_location(name, source)
            spec = importlib.machinery.PathFinder.find_spec(name, path)
            if spec is not None and not isinstance(spec.loader, importlib.machinery.ExtensionFileLoader):
                raise ImportError(f"FASTNET_REQUIRE_EXTENSIONS is set but {name} is not compiled", name=name)
            return spec
        return None


if (NO_EXTENSIONS or REQUIRE_EXTENSIONS) and _BuildFinder not in sys.meta_path:
    sys.meta_path.insert(0, _BuildFinder)
