"""Both builds' twins of a compiled unit, side by side (multidict's pattern).

``twin_module(dispatcher, kind)`` is the pure (``"py"``) or compiled (``"c"``) twin of the unit whose
dispatcher is ``dispatcher``: ``twin_module("fastnet.route", "c")`` is ``fastnet._route_c``. The compiled
one is skipped in a pure build and when the extension was not built (an error instead when
``FASTNET_REQUIRE_EXTENSIONS=1``), so a pure build never imports a compiled module. The ``twins``
fixture (``tests/conftest.py``) runs a test once per twin; a test that compares the twins within one
run takes them all from ``available_twins(dispatcher)``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from types import ModuleType

import pytest

from fastnet import _compat

__all__ = ["Twins", "available_twins", "compiled_twin", "twin_module", "twin_name"]

#: What the ``twins`` fixture gives a test: ``twins(dispatcher)`` is this run's twin of that unit.
Twins = Callable[[str], ModuleType]


def twin_name(dispatcher: str, kind: str) -> str:
    """The module name of the ``kind`` ("py" or "c") twin of the unit whose dispatcher is ``dispatcher``."""
    package, _, unit = dispatcher.rpartition(".")
    return f"{package}._{unit}_{kind}"


def compiled_twin(dispatcher: str) -> ModuleType | None:
    """The compiled twin, or None in a pure build or when it was not built (an error instead when
    ``FASTNET_REQUIRE_EXTENSIONS=1``)."""
    if _compat.NO_EXTENSIONS:
        return None
    try:
        return importlib.import_module(twin_name(dispatcher, "c"))
    except ImportError:
        if _compat.REQUIRE_EXTENSIONS:
            raise
        return None


def twin_module(dispatcher: str, kind: str) -> ModuleType:
    """The ``kind`` ("py" or "c") twin of the unit whose dispatcher is ``dispatcher``."""
    name = twin_name(dispatcher, kind)
    if kind == "c":
        if _compat.NO_EXTENSIONS:
            pytest.skip("pure-Python build: no compiled twins")
        module = compiled_twin(dispatcher)
        if module is None:
            pytest.skip(f"{name} is not built")
        return module
    return importlib.import_module(name)


def available_twins(dispatcher: str) -> dict[str, ModuleType]:
    """The twins this build can load, by kind: always "py", and "c" when ``compiled_twin`` finds it. For a
    test that holds the twins against each other in one run (``twins`` runs a test once per twin)."""
    twins = {"py": importlib.import_module(twin_name(dispatcher, "py"))}
    compiled = compiled_twin(dispatcher)
    if compiled is not None:
        twins["c"] = compiled
    return twins
