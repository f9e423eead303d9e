"""What ``Response`` works out from its headers and bytes: the text encoding, ``Link`` relations.

* :func:`charset_of` reads ``charset=`` from a Content-Type (quoted or not).
* :func:`guess_encoding` is ``response.apparent_encoding``: a byte-order mark; for HTML and XML the
  ``<meta charset>`` / ``<?xml encoding?>`` declaration in the first 2 KiB; bytes that are valid UTF-8;
  then ``charset_normalizer`` (or ``chardet``) when installed, as requests does; else ``windows-1252``,
  which decodes every byte (what browsers use for content labelled ISO-8859-1).
* :func:`parse_links` is RFC 8288's ``Link`` header as requests' and httpx's ``response.links``:
  ``{rel or url: {"url": ..., "rel": ..., other parameters}}``.
"""

from __future__ import annotations

import codecs
import importlib
import re
from types import ModuleType

__all__ = ["charset_of", "decode_guessing", "guess_encoding", "parse_links"]

_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
_META = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.IGNORECASE)
_XML = re.compile(rb"""^\s*<\?xml[^>]+encoding\s*=\s*["']([A-Za-z0-9_.:-]+)""", re.IGNORECASE)
_SNIFF = 2048
_GUESS = 65536  # how much a statistical guesser reads


def charset_of(content_type: str | None) -> str | None:
    """``charset`` of a Content-Type value, or None."""
    if not content_type:
        return None
    for param in content_type.split(";")[1:]:
        key, _, value = param.strip().partition("=")
        if key.strip().lower() == "charset":
            value = value.strip().strip("\"'").strip()
            if value:
                return value
    return None


def _known(name: str) -> str | None:
    try:
        return codecs.lookup(name).name
    except LookupError:
        return None


def _declared(content: bytes, content_type: str | None) -> str | None:
    """What the bytes say about themselves: a byte-order mark, an HTML or XML declaration."""
    for bom, name in _BOMS:
        if content.startswith(bom):
            return name
    ctype = (content_type or "").split(";")[0].strip().lower()
    if "html" in ctype or "xml" in ctype or not ctype:
        head = content[:_SNIFF]
        found = _XML.search(head) or _META.search(head)
        if found is not None:
            return _known(found.group(1).decode("ascii"))
    return None


def guess_encoding(content: bytes, content_type: str | None = None) -> str:
    """The encoding ``content`` is most likely in (see the module doc)."""
    declared = _declared(content, content_type)
    if declared is not None:
        return declared
    try:
        content.decode("utf-8")
    except UnicodeDecodeError:
        pass
    else:
        return "utf-8"
    return _statistical(content[:_GUESS]) or "windows-1252"


def decode_guessing(content: bytes, content_type: str | None = None) -> str:
    """``content`` decoded with ``guess_encoding``'s answer, decoding it once when that is UTF-8."""
    declared = _declared(content, content_type)
    if declared is not None:
        return content.decode(declared, errors="replace")
    try:
        return content.decode("utf-8")
    except UnicodeDecodeError:
        pass
    return content.decode(_statistical(content[:_GUESS]) or "windows-1252", errors="replace")


_GUESSER: list[
    tuple[str | None, ModuleType | None]
] = []  # [(name, module)] once looked for; [(None, None)] when neither is installed


def _statistical(sample: bytes) -> str | None:
    """charset_normalizer's (requests' guesser) or chardet's guess, when one is installed."""
    if not _GUESSER:
        found: tuple[str | None, ModuleType | None] = (None, None)
        for name in ("charset_normalizer", "chardet"):
            try:
                found = (name, importlib.import_module(name))
                break
            except ImportError:
                continue
        _GUESSER.append(found)
    which, guesser = _GUESSER[0]
    if guesser is None:
        return None
    if which == "charset_normalizer":
        best = guesser.from_bytes(sample).best()
        encoding = best.encoding if best is not None else None
    else:
        encoding = guesser.detect(sample).get("encoding")
    return _known(encoding) if isinstance(encoding, str) else None


def _split_outside_quotes(text: str, sep: str) -> list[str]:
    parts: list[str] = []
    current: list[str] = []
    quoted = bracket = False
    for ch in text:
        if ch == '"' and not bracket:
            quoted = not quoted
        elif ch == "<" and not quoted:
            bracket = True
        elif ch == ">" and not quoted:
            bracket = False
        if ch == sep and not quoted and not bracket:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    parts.append("".join(current))
    return parts


def parse_links(values: list[str]) -> dict[str, dict[str, str]]:
    """``Link`` header values as ``{rel or url: {"url": ..., "rel": ..., ...}}``."""
    links: dict[str, dict[str, str]] = {}
    for value in values:
        for item in _split_outside_quotes(value, ","):
            item = item.strip()
            if not item.startswith("<") or ">" not in item:
                continue
            url, _, rest = item[1:].partition(">")
            link = {"url": url.strip()}
            for param in _split_outside_quotes(rest, ";"):
                key, sep, val = param.strip().partition("=")
                key = key.strip().lower()
                if key:
                    link[key] = val.strip().strip('"') if sep else ""
            links[link.get("rel") or link["url"]] = link
    return links
