"""Declares fastnet's compiled extensions; all metadata lives in pyproject.toml.

Every accelerated unit is a triplet (see fastnet/_compat.py): ``_x_c.pyx`` is compiled as it is;
``_x_c.pxd`` beside a pure source ``_x_py.py`` is Cython's pure-Python mode, so the pure source is
copied to ``build/cython/<pkg>/_x_c.py`` (the module must be called ``_x_c``) and compiled there with
its ``.pxd``. ``FASTNET_NO_EXTENSIONS=1``, a missing Cython or a failing compiler give the pure build.

One rewrite happens while staging: a pure source imports other units through their dispatchers
(``from fastnet.headers import Headers``), but Cython accepts a Python import of a class its ``.pxd``
cimports only from the module that defines that class. So in the staged copy, and only there, an import
from a unit's dispatcher becomes an import from its compiled twin (``from fastnet._headers_c import
Headers``); that is what lets a compiled unit subclass, construct and call another unit's classes in C.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).parent.resolve()
STAGING = ROOT / "build" / "cython"
OFF = ("", "0", "false", "no", "off")


def flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() not in OFF


def compiled_twins() -> dict[str, str]:
    """Every unit's dispatcher module and its compiled twin: ``fastnet.headers`` -> ``fastnet._headers_c``."""
    twins = {}
    for path in [*ROOT.glob("fastnet/**/_*_c.pxd"), *ROOT.glob("fastnet/**/_*_c.pyx")]:
        unit = path.stem[1:-2]  # "_headers_c" -> "headers"
        dispatcher = path.with_name(unit + ".py")
        if dispatcher.exists():
            package = ".".join(path.relative_to(ROOT).parent.parts)
            twins[f"{package}.{unit}"] = f"{package}.{path.stem}"
    return twins


_FROM_IMPORT = re.compile(r"^(\s*from\s+)(fastnet(?:\.\w+)+)(\s+import\b)", re.MULTILINE)


def stage_source(source: Path, staged: Path, twins: dict[str, str]) -> None:
    """Copy a pure source for compilation, its imports from dispatchers pointed at the compiled twins."""
    text = _FROM_IMPORT.sub(
        lambda m: m.group(1) + twins.get(m.group(2), m.group(2)) + m.group(3),
        source.read_text(encoding="utf-8"),
    )
    staged.write_text(text, encoding="utf-8")


def discover() -> list:
    from setuptools import Extension

    extensions = []
    shutil.rmtree(STAGING, ignore_errors=True)  # a stale staged .pxd would shadow the real one
    twins = compiled_twins()
    for pyx in sorted(ROOT.glob("fastnet/**/_*_c.pyx")):
        rel = pyx.relative_to(ROOT)
        name = ".".join(rel.with_suffix("").parts)
        extensions.append(Extension(name, [str(rel)]))
    for pxd in sorted(ROOT.glob("fastnet/**/_*_c.pxd")):
        source = pxd.with_name(pxd.name[: -len("_c.pxd")] + "_py.py")
        if not source.exists() or pxd.with_suffix(".pyx").exists():
            continue  # a .pyx unit's own declarations, or declarations without a pure source
        rel = pxd.relative_to(ROOT)
        staged = STAGING / rel.with_suffix(".py")
        staged.parent.mkdir(parents=True, exist_ok=True)
        for parent in staged.relative_to(STAGING).parents:
            init = STAGING / parent / "__init__.py"
            if parent != Path(".") and not init.exists():
                init.write_text("")
        stage_source(source, staged, twins)
        shutil.copyfile(pxd, staged.with_suffix(".pxd"))
        name = ".".join(rel.with_suffix("").parts)
        extensions.append(Extension(name, [str(staged.relative_to(ROOT))]))
    return extensions


class OptionalBuildExt(build_ext):
    """Falls back to the pure-Python build when a compiler is missing, unless extensions are required."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as exc:  # noqa: BLE001 - any compiler failure means the pure build
            self._fallback(exc)

    def build_extension(self, ext) -> None:  # type: ignore[no-untyped-def]
        try:
            super().build_extension(ext)
        except Exception as exc:  # noqa: BLE001
            self._fallback(exc)

    def _fallback(self, exc: BaseException) -> None:
        if flag("FASTNET_REQUIRE_EXTENSIONS"):
            raise exc
        print(f"fastnet: compiled build failed ({exc}); installing the pure-Python build", file=sys.stderr)


def extensions() -> list:
    if flag("FASTNET_NO_EXTENSIONS"):
        print("fastnet: FASTNET_NO_EXTENSIONS is set; building the pure-Python build", file=sys.stderr)
        return []
    try:
        from Cython.Build import cythonize
    except ImportError:
        if flag("FASTNET_REQUIRE_EXTENSIONS"):
            raise
        print("fastnet: Cython is not installed; building the pure-Python build", file=sys.stderr)
        return []
    exts = discover()
    only = {n.strip() for n in os.environ.get("FASTNET_BUILD_ONLY", "").split(",") if n.strip()}
    if only:  # developers: rebuild just the named modules, e.g. FASTNET_BUILD_ONLY=fastnet.dns._cache_c
        exts = [e for e in exts if e.name in only]
    print(f"fastnet: building the compiled build ({len(exts)} extensions)", file=sys.stderr)
    try:
        return _cythonize(cythonize, exts)
    except Exception as exc:  # noqa: BLE001 - a Cython error means the pure build, unless required
        if flag("FASTNET_REQUIRE_EXTENSIONS"):
            raise
        print(f"fastnet: Cython failed ({exc}); building the pure-Python build", file=sys.stderr)
        return []


def _cythonize(cythonize, exts: list) -> list:
    return cythonize(
        exts,
        include_path=[str(ROOT), str(STAGING)],
        language_level=3,
        compiler_directives={
            # pure sources are ordinary Python: keep negative indexing and bounds checks, and let only the
            # .pxd declare C types (annotations stay documentation)
            "annotation_typing": False,
            "embedsignature": True,
            "binding": False,
        },
        quiet=True,
    )


setup(ext_modules=extensions(), cmdclass={"build_ext": OptionalBuildExt})
