"""What the command line prints of what a server or a URL said (``fastnet/cli/_text.py``): ``printable``
writes every control character but tab (and newline, for text of several lines) as ``\\xNN``, so a
terminal shows instead of obeying it; ``TerminalGuard`` tells whether each next chunk of a body is safe
to write to a terminal, UTF-8 sequences split between chunks included. Values only; ``fastnet get`` on a
terminal is in test_get.py."""

from __future__ import annotations

import pytest

from fastnet.cli._text import BINARY_OUTPUT, TerminalGuard, printable


@pytest.mark.parametrize(
    "text, shown",
    [
        ("plain text", "plain text"),
        ("tab\tkept", "tab\tkept"),
        ("title\x1b]0;pwned\x07", "title\\x1b]0;pwned\\x07"),
        ("over\rwrite\x08", "over\\x0dwrite\\x08"),
        ("line\nbreak", "line\\x0abreak"),
        ("csi\x9b2J del\x7f", "csi\\x9b2J del\\x7f"),
        ("nul\x00", "nul\\x00"),
        ("café ünïcode ☃", "café ünïcode ☃"),  # printable non-ASCII stays
    ],
)
def test_text_printable(text: str, shown: str) -> None:
    assert printable(text) == shown


def test_text_printable_lines_keeps_newlines_only() -> None:
    assert printable("a\nb\r\nc\x1b[2J", lines=True) == "a\nb\\x0d\nc\\x1b[2J"
    unchanged = "nothing to escape"
    assert printable(unchanged) is unchanged  # the common case costs one search


def test_text_terminal_guard_passes_text_and_refuses_controls() -> None:
    guard = TerminalGuard()
    assert guard.safe(b"hello\tworld\r\n")
    assert guard.safe("unicode ☃ text\n".encode())
    assert not TerminalGuard().safe(b"\x00binary")
    assert not TerminalGuard().safe(b"\x1b[31mred")
    assert not TerminalGuard().safe("c1 \u009b control".encode())  # C1 as UTF-8
    assert not TerminalGuard().safe(b"lone \x9b byte")  # C1 as a byte that is not UTF-8


def test_text_terminal_guard_follows_utf8_split_between_chunks() -> None:
    snowman = "☃".encode()  # e2 98 83
    guard = TerminalGuard()
    assert guard.safe(b"text " + snowman[:1])
    assert guard.safe(snowman[1:] + b" more")  # the rest of the sequence: still text
    c1 = "\u0085".encode()  # c2 85: NEL, a C1 control, split between chunks
    guard = TerminalGuard()
    assert guard.safe(b"ok " + c1[:1])
    assert not guard.safe(c1[1:])


def test_text_binary_output_message_says_what_to_do() -> None:
    assert '"-o -"' in BINARY_OUTPUT and '"-o FILE"' in BINARY_OUTPUT


def test_text_printable_shows_control_characters_but_tab() -> None:
    assert printable("plain text, tab\tand latin-1 é") == "plain text, tab\tand latin-1 é"
    assert printable("a\x1b]0;t\x07b\x08\r\n\x00\x7f\x9b\x85") == (
        "a\\x1b]0;t\\x07b\\x08\\x0d\\x0a\\x00\\x7f\\x9b\\x85"
    )
    assert printable("line 1\nline\x1b 2\n", lines=True) == "line 1\nline\\x1b 2\n"


def test_text_terminal_guard_refuses_control_sequences_in_any_chunk() -> None:
    text = "héllo ✓\r\n\tok\n".encode()
    guard = TerminalGuard()
    assert all(guard.safe(text[i : i + 1]) for i in range(len(text)))  # UTF-8 split anywhere
    for bad in (b"\x00", b"\x1b[2J", b"\x07", b"\x08", b"\x0c", b"\x9b", "\x9b".encode()):
        guard = TerminalGuard()
        assert guard.safe(b"fine ") and not guard.safe(b"x" + bad), bad
