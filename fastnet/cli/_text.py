"""What the command line writes of what a server or a URL said: control characters made visible.

Theory of operation
-------------------
A reason phrase, a header value, a redirect's ``Location``, an error message that quotes the server or a
URL can hold characters a terminal obeys instead of showing: ``ESC`` starts a sequence that sets the
window title, clears the screen or moves the cursor, ``BS`` and ``CR`` overwrite what was printed, and
the C1 controls U+0080–U+009F (``0x9b`` is an 8-bit ``CSI``) do as much; header bytes are decoded as
latin-1, so each such byte arrives as one of those characters. Every text of that kind the command line
prints goes through :func:`printable`, which writes each C0 control but tab, ``DEL`` and each C1
control as ``\\xNN``. The ``-v`` log and the error messages on stderr always are; the status line and
headers of ``-i``/``-I`` are when they go to a terminal, and are the bytes received otherwise (a file or
a pipe gets what the server sent, as with curl).

A body is what the user asked for, so it is written as received, except to a terminal: there a body that
holds ``NUL`` or a control sequence (a C0 control but tab, newline and carriage return, or a C1 control,
as UTF-8 or as a lone byte) is refused the way curl refuses binary output, unless ``-o -`` asks for it
(:class:`TerminalGuard`, which checks each chunk before it is written).
"""

from __future__ import annotations

import codecs
import re

__all__ = ["BINARY_OUTPUT", "TerminalGuard", "printable"]

#: C0 controls but tab, DEL and C1 controls.
_CONTROL = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f]")
#: The same, but newlines stay (for a text of several lines).
_CONTROL_BUT_NEWLINE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
#: What a body must not show a terminal: C0 controls but tab, LF and CR; C1 controls, encoded in UTF-8
#: or as a lone byte (``surrogateescape`` turns a byte that is not UTF-8 into U+DC80-U+DCFF).
_UNSAFE_ON_TERMINAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x80-\x9f\udc80-\udc9f]")

#: The message of a refused body (exit status 23, as curl).
BINARY_OUTPUT = (
    'binary output can mess up your terminal: use "-o -" to print it anyway, or "-o FILE" to save it'
)


def _visible(match: re.Match[str]) -> str:
    return f"\\x{ord(match.group()):02x}"


def printable(text: str, *, lines: bool = False) -> str:
    """``text`` with every control character but tab (and newline, with ``lines``) written as ``\\xNN``."""
    pattern = _CONTROL_BUT_NEWLINE if lines else _CONTROL
    if pattern.search(text) is None:
        return text
    return pattern.sub(_visible, text)


class TerminalGuard:
    """Tells whether each next chunk of a body is safe to write to a terminal (UTF-8 sequences may be
    split between chunks)."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")("surrogateescape")

    def safe(self, chunk: bytes) -> bool:
        return _UNSAFE_ON_TERMINAL.search(self._decoder.decode(chunk)) is None
