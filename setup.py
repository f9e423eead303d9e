"""Declares fastnet's compiled extensions; all metadata lives in pyproject.toml.

Every compiled unit is built in place under the module's own name, and the import system prefers the
extension module (``x.cpython-*.so``) to the source beside it:

* a module ``x.py`` with declarations ``x.pxd`` beside it is compiled as it is, in Cython's pure-Python
  mode;
* where the C source really differs from the Python (the response parser, the clock, kernel socket
  timeouts), ``x.pyx`` is compiled instead and ``x.py`` is the pure build's module of the same name;
* the load generator's loop, whose two engines a run may choose between, is ``_loop_c.pyx`` and
  ``_loop_py.py`` under ``loop.py``.

``FASTNET_NO_EXTENSIONS=1``, a missing Cython or a failing compiler give the pure build (the same
sources, not compiled); ``FASTNET_REQUIRE_EXTENSIONS=1`` turns each of those into a failure.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).parent.resolve()
OFF = ("", "0", "false", "no", "off")


def flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() not in OFF


def discover() -> list:
    from setuptools import Extension

    extensions = []
    sources = set(ROOT.glob("fastnet/**/*.pyx"))
    for pxd in ROOT.glob("fastnet/**/*.pxd"):
        if pxd.with_suffix(".py").exists() and not pxd.with_suffix(".pyx").exists():
            sources.add(pxd.with_suffix(".py"))
    for source in sorted(sources):
        rel = source.relative_to(ROOT)
        extensions.append(Extension(".".join(rel.with_suffix("").parts), [str(rel)]))
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
    if only:  # developers: rebuild just the named modules, e.g. FASTNET_BUILD_ONLY=fastnet.dns.cache
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
        include_path=[str(ROOT)],
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
