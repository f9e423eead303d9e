"""The ``fastnet`` command line: ``fastnet get URL`` (curl's options, ``fastnet/cli/get.py``), ``fastnet load
[URL ...]``, the load generator (``fastnet/cli/load.py``), and ``fastnet --version``.

Without a URL either command starts the embedded ``MockServer`` on loopback, so both work on a machine
without any network.

Whatever the command, a reader that goes away (``fastnet --version | head -1``) ends it quietly, as
Python's documentation advises for ``BrokenPipeError``: stdout and stderr are pointed at ``/dev/null`` so
that nothing more is written or flushed there, and the exit status is the command's (``fastnet get``'s
write error, 23) or else 141, a shell's status for a process ended by ``SIGPIPE``. Ctrl-C ends a command
with 130 and no traceback. A standard stream the process was started without (``fastnet get >&-``, where
Python leaves ``sys.stdout`` None) gets a stand-in: writing to it is such a reader gone away, and reading
from it fails as the closed descriptor would (``-d @-`` with no stdin: curl's read error, 26).
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import errno
import importlib.metadata
import io
import os
import platform
import sys

import fastnet
from fastnet import _compat
from fastnet._internal.http1.decoders import SUPPORTED
from fastnet._version import __version__
from fastnet.cli import get as get_command
from fastnet.cli import load as load_command
from fastnet.cli._text import printable

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


class _MissingStream(io.RawIOBase):
    """The stand-in for a standard stream the process was started without."""

    def readable(self) -> bool:
        return True

    def writable(self) -> bool:
        return True

    def readinto(self, buffer: object) -> int:
        raise OSError(errno.EBADF, os.strerror(errno.EBADF))

    def write(self, data: object) -> int:
        raise BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE))


def _stand_in_for_missing_streams() -> None:
    if sys.stdin is None:
        sys.stdin = io.TextIOWrapper(io.BufferedReader(_MissingStream()))
    for name in ("stdout", "stderr"):
        if getattr(sys, name) is None:  # unbuffered: a write fails at once, nothing is left for the exit
            setattr(sys, name, io.TextIOWrapper(_MissingStream(), write_through=True))


def main(argv: list[str] | None = None) -> int:
    """``fastnet`` with ``argv`` (the process's arguments by default); returns the exit status."""
    code = 0
    _stand_in_for_missing_streams()
    try:
        code = _command(argv)
        sys.stdout.flush()  # what is still buffered: a reader that went away shows here
    except BrokenPipeError:
        _drop_output()
        return code or 141
    except KeyboardInterrupt:
        return 130
    return code


def _drop_output() -> None:
    """Point stdout and stderr at /dev/null: the flush at exit then has nowhere to fail."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(AttributeError, OSError, ValueError, io.UnsupportedOperation):
                os.dup2(devnull, stream.fileno())
    finally:
        os.close(devnull)


def _unknown(parser: argparse.ArgumentParser, extras: list[str]) -> None:
    """A usage error (exit status 2) for what ``parser`` did not know: the unknown options alone, each with
    the closest known ones, rather than every argument left over (a valid URL after one is not to blame)."""
    options = [extra for extra in extras if extra.startswith("-") and extra != "-"]
    if not options:
        parser.error(printable(f"unrecognized arguments: {' '.join(extras)}"))
    known = [name for name in parser._option_string_actions if name.startswith("-")]
    said = []
    for option in options:
        name = option.partition("=")[0]
        close = difflib.get_close_matches(name, known, n=3, cutoff=0.7)
        hint = f" (did you mean {' or '.join(close)}?)" if close else ""
        said.append(f"unknown option: {name}{hint}")
    parser.error(printable("; ".join(said)))


def _command(argv: list[str] | None) -> int:
    parser = argparse.ArgumentParser(
        prog="fastnet", description="A fast HTTP/1.1 client.", allow_abbrev=False
    )
    parser.add_argument(
        "-V", "--version", action="store_true", help="print the version and the build, then exit"
    )
    sub = parser.add_subparsers(dest="command")
    get_parser = get_command.add_parser(sub)
    load_parser = load_command.add_parser(sub)
    args, extras = parser.parse_known_args(argv)
    if extras:
        command = {"get": get_parser, "load": load_parser}.get(args.command or "", parser)
        _unknown(command, extras)
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
