"""What ``Response`` works out from headers and bytes (``fastnet/_content.py``): ``charset_of`` a
Content-Type, ``guess_encoding``/``decode_guessing`` (byte-order marks, HTML and XML declarations, UTF-8,
then a statistical guess or windows-1252), and ``parse_links`` for RFC 8288 ``Link`` headers. Values only;
``Response.encoding``/``.links`` through the client are in tests/integration/test_client_defaults.py."""

from __future__ import annotations

import codecs

import pytest

from fastnet import _content
from fastnet._content import charset_of, decode_guessing, guess_encoding, parse_links


@pytest.mark.parametrize(
    "content_type, charset",
    [
        ("text/html; charset=UTF-8", "UTF-8"),
        ('text/html; charset="iso-8859-1"', "iso-8859-1"),
        ("text/html;CHARSET = 'koi8-r' ", "koi8-r"),
        ("text/plain; format=flowed; charset=utf-16", "utf-16"),
        ("text/plain", None),
        ("text/plain; charset=", None),
        ("charset=utf-8", None),  # a media type, not a parameter
        ("", None),
        (None, None),
    ],
)
def test_content_charset_of(content_type: str | None, charset: str | None) -> None:
    assert charset_of(content_type) == charset


def _name(encoding: str) -> str:
    return codecs.lookup(encoding).name


@pytest.mark.parametrize(
    "content, encoding",
    [
        (codecs.BOM_UTF8 + "é".encode(), "utf-8-sig"),
        (codecs.BOM_UTF16_LE + "é".encode("utf-16-le"), "utf-16"),
        (codecs.BOM_UTF16_BE + "é".encode("utf-16-be"), "utf-16"),
        (codecs.BOM_UTF32_LE + "é".encode("utf-32-le"), "utf-32"),
    ],
)
def test_content_a_byte_order_mark_wins(content: bytes, encoding: str) -> None:
    assert _name(guess_encoding(content, "text/html; charset=latin-1")) == _name(encoding)
    assert decode_guessing(content) == "é"  # the mark is not text


def test_content_html_meta_and_xml_declarations() -> None:
    html = b'<html><head><meta http-equiv="Content-Type" content="text/html; charset=windows-1251">'
    assert _name(guess_encoding(html + "мир".encode("cp1251"), "text/html")) == "cp1251"
    assert _name(guess_encoding(b"<meta charset='koi8-r'>", None)) == _name("koi8-r")
    xml = b'<?xml version="1.0" encoding="ISO-8859-1"?><a>' + "é".encode("latin-1") + b"</a>"
    assert _name(guess_encoding(xml, "application/xml")) == _name("iso-8859-1")
    assert decode_guessing(xml, "application/xml").endswith("<a>é</a>")


def test_content_declarations_are_only_read_in_html_and_xml_and_the_first_2_kib() -> None:
    meta = b'<meta charset="koi8-r">'
    assert guess_encoding(meta, "text/plain") == "utf-8"  # plain text: the declaration is just text
    late = b" " * 4096 + meta
    assert guess_encoding(late, "text/html") == "utf-8"
    assert guess_encoding(b'<meta charset="no-such-codec">', "text/html") == "utf-8"  # unknown: ignored


def test_content_valid_utf8_is_utf8() -> None:
    assert guess_encoding("naïve ☃".encode(), "text/plain") == "utf-8"
    assert decode_guessing("naïve ☃".encode()) == "naïve ☃"
    assert guess_encoding(b"") == "utf-8"


def test_content_bytes_that_are_not_utf8_fall_back_without_failing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_content, "_GUESSER", [(None, None)])  # as if neither guesser were installed
    latin1 = "déjà vu, ça va".encode("latin-1")
    assert guess_encoding(latin1) == "windows-1252"
    assert decode_guessing(latin1) == "déjà vu, ça va"
    assert decode_guessing(b"\x81\x8d\x8f") == b"\x81\x8d\x8f".decode("windows-1252", errors="replace")


def test_content_a_statistical_guesser_is_asked_when_installed() -> None:
    pytest.importorskip("charset_normalizer")
    text = "Съешь же ещё этих мягких французских булок, да выпей чаю. " * 20
    guessed = guess_encoding(text.encode("cp1251"))
    assert guessed != "windows-1252"
    assert text.encode("cp1251").decode(guessed) == text


def test_content_parse_links() -> None:
    links = parse_links(
        [
            '<https://api.test/items?page=2>; rel="next", </items?page=9>; rel=last; title="a, b; c"',
            "<https://example.test/x>; type=text/html",
        ]
    )
    assert links["next"] == {"url": "https://api.test/items?page=2", "rel": "next"}
    assert links["last"] == {"url": "/items?page=9", "rel": "last", "title": "a, b; c"}
    assert links["https://example.test/x"] == {"url": "https://example.test/x", "type": "text/html"}


def test_content_parse_links_skips_what_is_not_a_link() -> None:
    assert parse_links([]) == {}
    assert parse_links(["no brackets; rel=next", "", " , "]) == {}
    assert parse_links(["<a,b>; rel=x; flag"]) == {"x": {"url": "a,b", "rel": "x", "flag": ""}}
