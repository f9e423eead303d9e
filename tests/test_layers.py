"""The folders are the layers: every import that runs points down the tree (docs/ARCHITECTURE.md).

Imports under ``if TYPE_CHECKING:`` only name types and may point anywhere; every other import, at the
top of a module or inside a function, must go to the same layer or one below it. The exceptions are
listed here with the reason they are allowed.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "fastnet"

#: Bottom to top (docs/ARCHITECTURE.md). A module's layer is that of the longest prefix of its name listed
#: here; the package root's other modules (values, and the roles users implement) and ``dns`` are layer 1.
LAYERS: list[tuple[int, tuple[str, ...]]] = [
    (1, ("fastnet._internal.util", "fastnet._compat", "fastnet._version")),
    (2, ("fastnet._internal.http1",)),
    (3, ("fastnet._internal.connection",)),
    (4, ("fastnet._internal.core",)),
    (5, ("fastnet._internal._async", "fastnet._internal._sync")),
    # the call layer checks options against the pool's and the dispatcher's public faces
    (6, ("fastnet._internal.call", "fastnet.connection_pool", "fastnet.dispatcher")),
    (7, ("fastnet", "fastnet.client", "fastnet.async_client", "fastnet._default")),
    (8, ("fastnet.cli", "fastnet.contrib", "fastnet.load", "fastnet.testing", "fastnet.__main__")),
]

#: (importer, imported): why a lower layer may import a higher one.
ALLOWED = {
    # DNS over HTTPS resolves names with an HTTP client of its own, made when the resolver is first used.
    ("fastnet.dns._doh", "fastnet.client"),
    ("fastnet.dns._doh", "fastnet"),
}


def layer(module: str) -> int:
    best, rank = "", 1
    for number, prefixes in LAYERS:
        for prefix in prefixes:
            matches = module == prefix or (prefix != "fastnet" and module.startswith(prefix + "."))
            if matches and len(prefix) > len(best):
                best, rank = prefix, number
    if not best and module == "fastnet":
        return 7
    return rank


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


class _Imports(ast.NodeVisitor):
    """Every fastnet module imported outside ``if TYPE_CHECKING:``, with its line."""

    def __init__(self) -> None:
        self.found: list[tuple[str, int]] = []

    def visit_If(self, node: ast.If) -> None:  # noqa: N802 - ast.NodeVisitor's naming
        if "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.orelse:
                self.visit(child)
        else:
            self.generic_visit(node)

    def visit_Import(self, node: ast.Import) -> None:  # noqa: N802
        self.found.extend((alias.name, node.lineno) for alias in node.names)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:  # noqa: N802
        if node.module == "fastnet":
            self.found.extend((f"fastnet.{alias.name}", node.lineno) for alias in node.names)
        elif node.module and node.level == 0:
            self.found.append((node.module, node.lineno))


def _runtime_imports(tree: ast.Module) -> list[tuple[str, int]]:
    imports = _Imports()
    imports.visit(tree)
    return [(name, line) for name, line in imports.found if name == "fastnet" or name.startswith("fastnet.")]


def _sources() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("path", _sources(), ids=lambda p: str(p.relative_to(PACKAGE.parent)))
def test_layers_imports_point_down(path: Path) -> None:
    module = _module_name(path)
    upward = [
        f"line {line}: {module} (layer {layer(module)}) imports {target} (layer {layer(target)})"
        for target, line in _runtime_imports(ast.parse(path.read_text(encoding="utf-8")))
        if layer(target) > layer(module) and (module, target) not in ALLOWED
    ]
    assert not upward, "\n".join(upward)


def test_layers_know_every_internal_folder() -> None:
    """A new folder under ``_internal`` gets a place in LAYERS (and in docs/ARCHITECTURE.md)."""
    listed = {prefix for _, prefixes in LAYERS for prefix in prefixes}
    for folder in (PACKAGE / "_internal").iterdir():
        if folder.is_dir() and (folder / "__init__.py").exists():
            assert f"fastnet._internal.{folder.name}" in listed, folder.name


def test_layers_see_upward_imports() -> None:
    """The check itself: a runtime import up the layers is found; one for type checkers is not."""
    source = (
        "from typing import TYPE_CHECKING\n"
        "from fastnet._internal.call.factory import RequestFactory\n"
        "if TYPE_CHECKING:\n"
        "    from fastnet.client import Client\n"
        "def f():\n"
        "    import fastnet.cli.get\n"
    )
    found = [name for name, _ in _runtime_imports(ast.parse(source))]
    assert found == ["fastnet._internal.call.factory", "fastnet.cli.get"]
    assert layer("fastnet._internal.call.factory") > layer("fastnet._internal.connection.tls")
    assert layer("fastnet.headers") == 1 and layer("fastnet._internal.util.clock") == 1
    assert layer("fastnet.dns._doh") == 1 and layer("fastnet._internal._sync.pool") == 5
