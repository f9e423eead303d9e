"""Which build is running: ``fastnet.compiled`` agrees with the units actually loaded, a compiled build
loads every ``_c`` twin, and ``_compat.env_flag``/``pick`` implement the FASTNET_* switches."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

import fastnet
from fastnet import _compat

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "fastnet"


def test_build_units_discovered() -> None:
    units = _compat.compiled_units()
    expected_units = (
        "fastnet.headers",
        "fastnet.request",
        "fastnet.response",
        "fastnet.route",
        "fastnet._internal._sync.chain",
        "fastnet._internal._sync.real_call",
        "fastnet._internal._sync.pool",
        "fastnet._internal._sync.exchange_finder",
        "fastnet._internal._sync.exchange",
        "fastnet._internal.http1.parser",
        "fastnet._internal.util.clock",
        "fastnet.dns.cache",
        "fastnet.load.loop",
    )
    for expected in expected_units:
        assert expected in units
    assert not any(name.endswith(("_c", "_py")) for name in units)


def test_build_compiled_flag_matches_loaded_units() -> None:
    expected = not _compat.NO_EXTENSIONS and all(map(_compat.is_compiled, _compat.compiled_units()))
    assert fastnet.compiled is expected
    if _compat.NO_EXTENSIONS:
        assert fastnet.compiled is False and not _compat.loaded_compiled


def test_build_every_unit_compiled_in_a_compiled_build() -> None:
    if _compat.NO_EXTENSIONS:
        pytest.skip("pure-Python build (FASTNET_NO_EXTENSIONS=1)")
    assert fastnet.compiled
    for unit in _compat.compiled_units():
        assert _compat.is_compiled(unit), unit
        module = sys.modules[unit]
        if unit != "fastnet.load.loop":  # the one unit that keeps both twins and picks one
            assert module.__file__ is not None and module.__file__.endswith((".so", ".pyd")), module.__file__
    # the public types are the compiled ones
    assert fastnet.Headers.__module__ == "fastnet.headers"
    assert fastnet.Request.__module__ == "fastnet.request"
    assert fastnet.Response.__module__ == "fastnet.response"
    assert type(fastnet.ConnectionPool()._real).__module__ == "fastnet._internal._sync.pool"


def test_build_pure_units_in_a_pure_build() -> None:
    if not _compat.NO_EXTENSIONS:
        pytest.skip("compiled build")
    for unit in _compat.compiled_units():
        assert not _compat.is_compiled(unit), unit
        module = sys.modules[unit]
        assert module.__file__ is not None and module.__file__.endswith(".py"), module.__file__
    assert fastnet.Headers.__module__ == "fastnet.headers"
    assert type(fastnet.ConnectionPool()._real).__module__ == "fastnet._internal._sync.pool"


def test_build_pure_twin_is_the_source_beside_the_compiled_module() -> None:
    twin = _compat.pure_twin("fastnet._internal.http1.parser")
    assert twin.__file__ is not None and twin.__file__.endswith("parser.py")
    assert twin is _compat.pure_twin("fastnet._internal.http1.parser")  # loaded once
    p = twin.ResponseParser()
    p.feed(b"HTTP/1.1 204 No Content\r\n\r\n")
    assert p.read_head()[0] == 204


def _unit_dir(tmp_path: Path) -> Path:
    (tmp_path / "unit.py").write_text("VALUE = 1\n")
    (tmp_path / "unit.pxd").write_text("cdef int VALUE\n")
    return tmp_path


def test_build_finder_loads_the_source_under_no_extensions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_compat, "NO_EXTENSIONS", True)
    spec = _compat._BuildFinder.find_spec("fastnet.unit", [str(_unit_dir(tmp_path))])
    assert spec is not None and spec.origin == str(tmp_path / "unit.py")
    # modules without a .pxd, and modules outside fastnet, are left to the normal finders
    assert _compat._BuildFinder.find_spec("fastnet.other", [str(tmp_path)]) is None
    assert _compat._BuildFinder.find_spec("unit", [str(tmp_path)]) is None


def test_build_finder_refuses_the_source_under_require_extensions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_compat, "NO_EXTENSIONS", False)
    monkeypatch.setattr(_compat, "REQUIRE_EXTENSIONS", True)
    with pytest.raises(ImportError, match="fastnet.unit is not compiled"):
        _compat._BuildFinder.find_spec("fastnet.unit", [str(_unit_dir(tmp_path))])


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, False),
        ("", False),
        ("0", False),
        ("false", False),
        ("FALSE", False),
        ("no", False),
        ("off", False),
        (" Off ", False),
        ("1", True),
        ("true", True),
        ("yes", True),
        ("on", True),
        ("anything", True),
    ],
)
def test_build_env_flag(monkeypatch: pytest.MonkeyPatch, value: str | None, expected: bool) -> None:
    if value is None:
        monkeypatch.delenv("FASTNET_TEST_FLAG", raising=False)
    else:
        monkeypatch.setenv("FASTNET_TEST_FLAG", value)
    assert _compat.env_flag("FASTNET_TEST_FLAG") is expected


class _Loaders:
    """Fake twins of a unit: ``c_module`` importable unless ``c_fails``; records what was imported."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, unit: str, c_fails: bool) -> None:
        self.calls: list[str] = []
        self.c_name, self.py_name = f"_fake_{unit}_c", f"_fake_{unit}_py"
        self.c_module = ModuleType(self.c_name)
        self.py_module = ModuleType(self.py_name)
        loaders = self
        real_import = importlib.import_module

        def fake_import(name: str, package: str | None = None) -> ModuleType:
            if name == loaders.c_name:
                loaders.calls.append("c")
                if c_fails:
                    raise ImportError("no compiled twin")
                return loaders.c_module
            if name == loaders.py_name:
                loaders.calls.append("py")
                return loaders.py_module
            return real_import(name, package)

        monkeypatch.setattr(importlib, "import_module", fake_import)  # the one _compat calls

    def pick(self, name: str) -> ModuleType:
        return _compat.pick(name, self.c_name, self.py_name)


@pytest.fixture
def fresh_compat(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_compat, "loaded_compiled", set())
    monkeypatch.setattr(_compat, "missing_compiled", set())


def _mode(monkeypatch: pytest.MonkeyPatch, *, no: bool, require: bool) -> None:
    monkeypatch.setattr(_compat, "NO_EXTENSIONS", no)
    monkeypatch.setattr(_compat, "REQUIRE_EXTENSIONS", require)


def test_build_pick_prefers_compiled(monkeypatch: pytest.MonkeyPatch, fresh_compat: None) -> None:
    _mode(monkeypatch, no=False, require=False)
    loaders = _Loaders(monkeypatch, "a", c_fails=False)
    assert loaders.pick("unit.a") is loaders.c_module
    assert loaders.calls == ["c"]
    assert _compat.loaded_compiled == {"unit.a"} and not _compat.missing_compiled


def test_build_pick_falls_back_to_pure(monkeypatch: pytest.MonkeyPatch, fresh_compat: None) -> None:
    _mode(monkeypatch, no=False, require=False)
    loaders = _Loaders(monkeypatch, "b", c_fails=True)
    assert loaders.pick("unit.b") is loaders.py_module
    assert loaders.calls == ["c", "py"]
    assert _compat.missing_compiled == {"unit.b"} and not _compat.loaded_compiled


def test_build_pick_require_extensions_raises(monkeypatch: pytest.MonkeyPatch, fresh_compat: None) -> None:
    _mode(monkeypatch, no=False, require=True)
    loaders = _Loaders(monkeypatch, "c", c_fails=True)
    with pytest.raises(ImportError, match="no compiled twin"):
        loaders.pick("unit.c")
    assert loaders.calls == ["c"]
    ok = _Loaders(monkeypatch, "d", c_fails=False)
    assert ok.pick("unit.d") is ok.c_module


def test_build_pick_no_extensions_never_tries_compiled(
    monkeypatch: pytest.MonkeyPatch, fresh_compat: None
) -> None:
    _mode(monkeypatch, no=True, require=False)
    loaders = _Loaders(monkeypatch, "e", c_fails=False)
    assert loaders.pick("unit.e") is loaders.py_module
    assert loaders.calls == ["py"]
    assert not _compat.loaded_compiled and not _compat.missing_compiled


def _python(code: str, **env: str) -> str:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("FASTNET_")}
    environment.update(env)
    environment["PYTHONPATH"] = str(ROOT)
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env=environment,
        cwd=str(ROOT),
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


_REPORT = (
    "import sys, fastnet, fastnet._compat as c; r = sys.modules['fastnet.request']; "
    "print(fastnet.compiled, c.NO_EXTENSIONS, c.REQUIRE_EXTENSIONS, r.__file__.rpartition('.')[2])"
)


def test_build_no_extensions_environment_variable() -> None:
    assert _python(_REPORT, FASTNET_NO_EXTENSIONS="1") == "False True False py"


def test_build_no_extensions_wins_over_require() -> None:
    out = _python(_REPORT, FASTNET_NO_EXTENSIONS="1", FASTNET_REQUIRE_EXTENSIONS="1")
    assert out == "False True False py"


def test_build_require_extensions_in_compiled_tree() -> None:
    if not list(PACKAGE.glob("request.cpython*.so")):
        pytest.skip("no compiled modules built in this tree")
    out = _python(_REPORT, FASTNET_REQUIRE_EXTENSIONS="1")
    assert out == "True False True so"


def test_build_off_values_mean_off() -> None:
    out = _python("import fastnet._compat as c; print(c.NO_EXTENSIONS)", FASTNET_NO_EXTENSIONS="off")
    assert out == "False"


def _type_checking_names(dispatcher: Path) -> set[str]:
    """The names a dispatcher imports for type checkers (``from _x_py import name as name``)."""
    import re

    block = dispatcher.read_text().split("if TYPE_CHECKING:", 1)[1].split("\nelse:", 1)[0]
    return set(re.findall(r"\b(\w+) as \1\b", block))


def test_build_load_loop_exports_what_type_checkers_see() -> None:
    """``fastnet.load.loop`` installs its twin's ``__all__`` at run time and lists the names for type
    checkers: the two lists must be the same, and both twins must define every name."""
    from fastnet.load import _loop_py, loop

    assert loop.__file__ is not None
    declared = _type_checking_names(Path(loop.__file__))
    assert declared == set(_loop_py.__all__)
    for name in declared:
        assert hasattr(loop, name), f"fastnet.load.loop does not provide {name}"
