"""``Headers``: an ordered, case-insensitive, immutable multi-map of header fields.

Compiled in place, typed by its ``.pxd``, in the compiled build. Names are checked against RFC 9110's token
grammar and values for control characters on the way in, so nothing that would split or truncate a header line
reaches the wire. ``headers_from_list`` wraps pairs that are already trusted (received, or built from checked
parts) without copying them: the per-request path builds every header block it sends or receives with it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Union

if TYPE_CHECKING:
    from typing import TypeAlias

    #: What a header value may be given as: text, latin-1 bytes, or a number (see :func:`check_value`).
    HeaderValue: TypeAlias = "str | bytes | int | float"

__all__ = [
    "EMPTY_HEADERS",
    "SENSITIVE",
    "TCHAR",
    "Headers",
    "HeadersLike",
    "as_headers",
    "check_name",
    "check_value",
    "headers_from_list",
]

#: What every API that takes headers accepts: ``Headers``, a mapping, or ``(name, value)`` pairs. A value is
#: a ``HeaderValue`` (str, bytes, int or float), checked when the headers are built; the annotation says
#: ``object`` so that a dict literal mixing them (``{"A": "x", "Content-Length": 12}``) type-checks.
HeadersLike = Union["Headers", Mapping[str, object], Iterable[tuple[str, object]]]

SENSITIVE = frozenset(("authorization", "cookie", "proxy-authorization", "set-cookie"))
# RFC 9110 §5.6.2: token = 1*tchar; tchar = "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" / "-" / "." /
#                  "^" / "_" / "`" / "|" / "~" / DIGIT / ALPHA
TCHAR = frozenset("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


def check_name(name: object) -> str:
    if type(name) is not str:
        if not isinstance(name, str):
            raise TypeError(f"header name must be a str, not {type(name).__name__}")
        # a str subclass (an enum.StrEnum member): its characters as a plain str, never its __str__ or
        # __format__ ("Color.RED" for an Enum mixed with str)
        name = str.__str__(name)
    if not name:
        raise ValueError("header name is empty")
    for i, ch in enumerate(name):
        if ch not in TCHAR:
            raise ValueError(f"Unexpected char {ord(ch):#04x} at {i} in header name: {name!r}")
    return name


def check_value(name: str, value: object) -> str:
    # RFC 9110 §5.5: field-value = *field-content; field-vchar = VCHAR / obs-text; SP and HTAB inside.
    # CR, LF, NUL and other controls are rejected (they would split or truncate the header).
    text: str
    if isinstance(value, str):
        text = value if type(value) is str else str.__str__(value)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        text = str(value)
    elif isinstance(value, bytes):
        text = value.decode("latin-1")
    else:
        raise TypeError(f"value of header {name!r} must be a str, not {type(value).__name__}")
    for i, ch in enumerate(text):
        if (ch < " " and ch != "\t") or ch == "\x7f" or ch > "\xff":
            shown = "" if name.lower() in SENSITIVE else f": {text!r}"
            raise ValueError(f"Unexpected char {ord(ch):#04x} at {i} in {name} value{shown}")
    return text.strip(" \t")


def headers_from_list(items: list[tuple[str, str]]) -> Headers:
    """Wrap trusted (already validated or received) pairs without copying or checking them."""
    h = Headers.__new__(Headers)
    h._items = items
    h._index = None
    h._wire = None
    h._heads = None
    return h


class Headers:
    """An ordered, case-insensitive multi-map of header fields. Immutable.

    >>> h = Headers([("Accept", "text/html"), ("Set-Cookie", "a=1"), ("set-cookie", "b=2")])
    >>> h["accept"], h.get_all("Set-Cookie"), len(h)
    ('text/html', ['a=1', 'b=2'], 3)
    >>> h.set("Accept", "*/*").remove("set-cookie").items()
    [('Accept', '*/*')]

    Names must be RFC 9110 tokens and values must not contain CR, LF, NUL or other controls:
    violations raise ``ValueError`` naming the header.
    """

    __slots__ = ("_items", "_index", "_wire", "_heads")
    _items: list[tuple[str, str]]
    _index: dict[str, str] | None
    _wire: bytes | None
    # whole request heads built on this block (the Bridge's cached default blocks only), by method+target
    _heads: dict[str, bytes] | None

    def __init__(self, data: HeadersLike | None = None) -> None:
        items: list[tuple[str, str]] = []
        if data is not None:
            if isinstance(data, Headers):
                items = list(data._items)
            else:
                pairs = data.items() if isinstance(data, (dict, Mapping)) else data
                for pair in pairs:
                    name, value = pair
                    name = check_name(name)
                    items.append((name, check_value(name, value)))
        self._items = items
        self._index = None
        self._wire = None
        self._heads = None

    def _lookup(self) -> dict[str, str]:
        index = self._index
        if index is None:
            index = {}
            for name, value in self._items:
                index[name.lower()] = value
            self._index = index
        return index

    def get(self, name: str, default: str | None = None) -> str | None:
        """The last value of ``name`` (case-insensitive), or ``default`` (None unless given)."""
        return self._lookup().get(name.lower(), default)

    def get_all(self, name: str) -> list[str]:
        """Every value of ``name`` in order."""
        key = name.lower()
        return [v for n, v in self._items if n.lower() == key]

    def __getitem__(self, name: str) -> str:
        value = self._lookup().get(name.lower())
        if value is None:
            raise KeyError(name)
        return value

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._lookup()

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[str]:
        return iter([n for n, _ in self._items])

    def __bool__(self) -> bool:
        return len(self._items) > 0

    def items(self) -> list[tuple[str, str]]:
        """Every (name, value) pair in order, repeats included."""
        return list(self._items)

    def keys(self) -> list[str]:
        return [n for n, _ in self._items]

    def values(self) -> list[str]:
        return [v for _, v in self._items]

    def add(self, name: str, value: HeaderValue) -> Headers:
        """A copy with one more field."""
        name = check_name(name)
        items = list(self._items)
        items.append((name, check_value(name, value)))
        return headers_from_list(items)

    def set(self, name: str, value: HeaderValue) -> Headers:
        """A copy where ``name`` has exactly this one value (in place of the first occurrence)."""
        name = check_name(name)
        value = check_value(name, value)
        key = name.lower()
        items: list[tuple[str, str]] = []
        placed = False
        for pair in self._items:
            if pair[0].lower() == key:
                if not placed:
                    items.append((name, value))
                    placed = True
            else:
                items.append(pair)
        if not placed:
            items.append((name, value))
        return headers_from_list(items)

    def remove(self, name: str) -> Headers:
        """A copy without any field called ``name``."""
        key = name.lower()
        if key not in self._lookup():
            return self
        return headers_from_list([p for p in self._items if p[0].lower() != key])

    def to_wire(self) -> bytes:
        """The header block as sent: ``Name: value\\r\\n`` per field (cached)."""
        wire = self._wire
        if wire is None:
            wire = "".join([f"{n}: {v}\r\n" for n, v in self._items]).encode("latin-1")
            self._wire = wire
        return wire

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (dict, list)):
            try:
                other = Headers(other)
            except (TypeError, ValueError):
                return False
        if not isinstance(other, Headers):
            return NotImplemented
        return [(n.lower(), v) for n, v in self._items] == [(n.lower(), v) for n, v in other._items]

    def __hash__(self) -> int:  # immutable, but equality is structural: unhashable like dict
        raise TypeError("unhashable type: 'Headers'")

    def __repr__(self) -> str:
        shown = [(n, "██" if n.lower() in SENSITIVE else v) for n, v in self._items]
        return f"Headers({shown!r})"


def as_headers(headers: HeadersLike | None) -> Headers:
    if headers is None:
        return EMPTY_HEADERS
    if isinstance(headers, Headers):
        return headers
    return Headers(headers)


EMPTY_HEADERS = headers_from_list([])
