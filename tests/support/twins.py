"""Both builds of a compiled unit, side by side (multidict's pattern).

``twin_module(unit, kind)`` is the pure (``"py"``) or the compiled (``"c"``) build of ``unit``: the pure
one is the unit's ``.py`` (loaded under another name by ``_compat.pure_twin`` where the compiled module
is the one imported), the compiled one the module itself. The compiled one is skipped in a pure build and
when the extension was not built (an error instead when ``FASTNET_REQUIRE_EXTENSIONS=1``), so a pure
build never imports a compiled module. The load loop keeps both twins in the package (``_loop_py``,
``_loop_c``) and they are used as they are. The ``twins`` fixture (``tests/conftest.py``) runs a test
once per build; a test that compares the two within one run takes them from ``available_twins(unit)``.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from types import ModuleType

import pytest

from fastnet import _compat

__all__ = ["Twins", "available_twins", "compiled_twin", "pure_twin", "twin_module"]

#: What the ``twins`` fixture gives a test: ``twins(unit)`` is this run's build of that unit.
Twins = Callable[[str], ModuleType]


def _loop_twin_name(unit: str, kind: str) -> str | None:
    """The module name of the ``kind`` twin of a unit that keeps both in the package (the load loop's
    ``_loop_py``/``_loop_c``), or None for a unit compiled in place."""
    package, _, leaf = unit.rpartition(".")
    name = f"{package}._{leaf}_{kind}"
    return name if importlib.util.find_spec(f"{package}._{leaf}_py") is not None else None


def compiled_twin(unit: str) -> ModuleType | None:
    """The compiled module of ``unit``, or None in a pure build or when it was not built (an error instead
    when ``FASTNET_REQUIRE_EXTENSIONS=1``)."""
    if _compat.NO_EXTENSIONS:
        return None
    name = _loop_twin_name(unit, "c")
    try:
        module = importlib.import_module(name or unit)
    except ImportError:
        if _compat.REQUIRE_EXTENSIONS:
            raise
        return None
    if name is None and not _compat.is_compiled(unit):
        if _compat.REQUIRE_EXTENSIONS:
            raise ImportError(f"{unit} is not compiled")
        return None
    return module


def pure_twin(unit: str) -> ModuleType:
    """The pure-Python module of ``unit``: the module itself in a pure build, else its ``.py`` loaded under
    another name, so that one process holds both builds of a unit."""
    name = _loop_twin_name(unit, "py")
    if name is not None:
        return importlib.import_module(name)
    if _compat.NO_EXTENSIONS or not _compat.is_compiled(unit):
        return importlib.import_module(unit)
    return _compat.pure_twin(unit)


def twin_module(unit: str, kind: str) -> ModuleType:
    """The ``kind`` ("py" or "c") build of ``unit``."""
    if kind == "c":
        if _compat.NO_EXTENSIONS:
            pytest.skip("pure-Python build: no compiled units")
        module = compiled_twin(unit)
        if module is None:
            pytest.skip(f"{unit} is not built")
        return module
    return pure_twin(unit)


def available_twins(unit: str) -> dict[str, ModuleType]:
    """The builds of ``unit`` this process can load, by kind: always "py", and "c" when ``compiled_twin``
    finds it. For a test that holds the two against each other in one run."""
    twins = {"py": pure_twin(unit)}
    compiled = compiled_twin(unit)
    if compiled is not None:
        twins["c"] = compiled
    return twins
