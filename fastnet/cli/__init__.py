"""The ``fastnet`` command line: ``fastnet get URL`` (curl's options, ``fastnet/cli/get.py``), ``fastnet load
[URL ...]``, the load generator (``fastnet/cli/load.py``), and ``fastnet --version``.

Without a URL either command starts the embedded ``MockServer`` on loopback, so both work on a machine
without any network.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import platform
import sys

import fastnet
from fastnet import _compat
from fastnet._internal.http1.decoders import SUPPORTED
from fastnet._version import __version__
from fastnet.cli import get as get_command
from fastnet.cli import load as load_command

__all__ = ["DISTRIBUTION", "main", "version_text"]

#: The name fastnet is installed under (``pip install fastnet-http``); the import name is ``fastnet``.
DISTRIBUTION = "fastnet-http"


def version_text() -> str:
    """``fastnet --version``: the version, which build is running, and the optional codecs."""
    if fastnet.compiled:
        build = f"compiled build ({len(_compat.loaded_compiled)} extensions)"
    elif _compat.NO_EXTENSIONS:
        build = "pure-Python build (FASTNET_NO_EXTENSIONS is set)"
    elif _compat.loaded_compiled:
        missing = ", ".join(sorted(_compat.missing_compiled))
        build = f"partly compiled build ({len(_compat.loaded_compiled)} extensions; pure: {missing})"
    else:
        build = "pure-Python build (no compiled extensions were built)"
    try:
        installed = f"{DISTRIBUTION} {importlib.metadata.version(DISTRIBUTION)}"
    except importlib.metadata.PackageNotFoundError:
        installed = f"{DISTRIBUTION} not installed: imported from {fastnet.__file__}"
    codings = ", ".join(c for c in ("gzip", "deflate", "br", "zstd") if c in SUPPORTED)
    return (
        f"fastnet {__version__} ({installed}), {build}\n"
        f"Python {platform.python_version()} ({sys.executable}); content codings: {codings}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="fastnet", description="A fast HTTP/1.1 client.")
    parser.add_argument(
        "-V", "--version", action="store_true", help="print the version and the build, then exit"
    )
    sub = parser.add_subparsers(dest="command")
    get_parser = get_command.add_parser(sub)
    load_parser = load_command.add_parser(sub)
    args = parser.parse_args(argv)
    if args.version or getattr(args, "show_version", False):
        print(version_text())
        return 0
    if args.command is None:
        parser.print_usage(sys.stderr)
        print("fastnet: error: a command is required: get or load (or --version)", file=sys.stderr)
        return 2
    if args.command == "load":
        return load_command.main(args, load_parser)
    return get_command.run(args, get_parser)
