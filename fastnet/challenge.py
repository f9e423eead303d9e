"""Authentication challenges: ``WWW-Authenticate`` and ``Proxy-Authenticate`` parsed per RFC 9110 §11.

    challenge   = auth-scheme [ 1*SP ( token68 / #auth-param ) ]
    auth-param  = token BWS "=" BWS ( token / quoted-string )
    token68     = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="

A value type with its parser, at the bottom of the package so ``Response.challenges()`` and the
authenticators both use it.
"""

from __future__ import annotations

import codecs
from collections.abc import Iterable
from typing import Any

__all__ = ["TOKEN68", "Challenge", "parse_challenges"]


_TCHAR = frozenset("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
TOKEN68 = frozenset("-._~+/0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
_WS = " \t"


class Challenge:
    """One authentication challenge: ``scheme``, ``params`` (names lowercased), ``token68`` or None.

    >>> c = parse_challenges(['Basic realm="api", charset="UTF-8"'])[0]
    >>> c.scheme, c.realm, c.charset, c.params
    ('Basic', 'api', 'UTF-8', {'realm': 'api', 'charset': 'UTF-8'})
    """

    __slots__ = ("scheme", "params", "token68")

    scheme: str
    params: dict[str, str]
    token68: str | None

    def __init__(self, scheme: str, params: dict[str, str] | None = None, token68: str | None = None) -> None:
        object.__setattr__(self, "scheme", scheme)
        object.__setattr__(self, "params", {k.lower(): v for k, v in (params or {}).items()})
        object.__setattr__(self, "token68", token68)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Challenge is immutable")

    @property
    def realm(self) -> str | None:
        return self.params.get("realm")

    @property
    def charset(self) -> str:
        """The ``charset`` parameter when it names a known codec, else ``ISO-8859-1`` (RFC 7617 §2.1)."""
        charset = self.params.get("charset")
        if charset:
            try:
                codecs.lookup(charset)
                return charset
            except LookupError:
                pass
        return "ISO-8859-1"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Challenge):
            return NotImplemented
        return (
            self.scheme.lower() == other.scheme.lower()
            and self.params == other.params
            and self.token68 == other.token68
        )

    def __hash__(self) -> int:
        return hash((self.scheme.lower(), tuple(sorted(self.params.items())), self.token68))

    def __repr__(self) -> str:
        extra = f", token68={self.token68!r}" if self.token68 is not None else ""
        return f"Challenge({self.scheme!r}, {self.params!r}{extra})"


class _Malformed(Exception):
    pass


class _Reader:
    __slots__ = ("text", "pos")

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def at_end(self) -> bool:
        return self.pos >= len(self.text)

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def skip_ws(self) -> bool:
        start = self.pos
        text = self.text
        while self.pos < len(text) and text[self.pos] in _WS:
            self.pos += 1
        return self.pos > start

    def skip_commas_and_ws(self) -> bool:
        found = False
        text = self.text
        while self.pos < len(text) and (text[self.pos] in _WS or text[self.pos] == ","):
            found = found or text[self.pos] == ","
            self.pos += 1
        return found

    def token(self) -> str:
        start = self.pos
        text = self.text
        while self.pos < len(text) and text[self.pos] in _TCHAR:
            self.pos += 1
        return text[start : self.pos]

    def token68(self) -> str | None:
        """A token68 when one ends here (followed by the end, or whitespace and a comma), else None."""
        start = self.pos
        text = self.text
        end = start
        while end < len(text) and text[end] in TOKEN68:
            end += 1
        if end == start:
            return None
        while end < len(text) and text[end] == "=":
            end += 1
        after = end
        while after < len(text) and text[after] in _WS:
            after += 1
        if after < len(text) and text[after] != ",":
            return None
        self.pos = end
        return text[start:end]

    def quoted(self) -> str:
        text = self.text
        self.pos += 1  # the opening quote
        out: list[str] = []
        while self.pos < len(text):
            ch = text[self.pos]
            if ch == '"':
                self.pos += 1
                return "".join(out)
            if ch == "\\":
                self.pos += 1
                if self.pos >= len(text):
                    break
                ch = text[self.pos]
            out.append(ch)
            self.pos += 1
        raise _Malformed("unterminated quoted-string")

    def starts_param(self) -> bool:
        """Whether the next item is ``token BWS "="`` (an auth-param) rather than a new challenge."""
        save = self.pos
        try:
            if not self.token():
                return False
            self.skip_ws()
            return self.peek() == "="
        finally:
            self.pos = save


def _parse_one_header(value: str, out: list[Challenge]) -> None:
    reader = _Reader(value)
    while True:
        reader.skip_commas_and_ws()
        if reader.at_end():
            return
        scheme = reader.token()
        if not scheme:
            raise _Malformed(f"expected an auth-scheme at {reader.pos}")
        had_space = reader.skip_ws()
        if reader.at_end() or reader.peek() == ",":
            out.append(Challenge(scheme))
            continue
        if not had_space:
            raise _Malformed(f"expected a space after the auth-scheme {scheme!r}")
        token68 = reader.token68()
        if token68 is not None:
            out.append(Challenge(scheme, token68=token68))
            continue
        params: dict[str, str] = {}
        while True:
            name = reader.token().lower()
            reader.skip_ws()
            if reader.peek() != "=":
                raise _Malformed("expected '=' in an auth-param")
            reader.pos += 1
            reader.skip_ws()
            if reader.peek() == '"':
                param_value = reader.quoted()
            else:
                param_value = reader.token()
                if not param_value:
                    raise _Malformed(f"empty value for auth-param {name!r}")
            if name in params:
                raise _Malformed(f"duplicate auth-param {name!r}")
            params[name] = param_value
            reader.skip_ws()
            if reader.at_end():
                break
            if reader.peek() != ",":
                raise _Malformed(f"unexpected {reader.peek()!r} after auth-param {name!r}")
            reader.skip_commas_and_ws()
            if reader.at_end() or not reader.starts_param():
                break
        out.append(Challenge(scheme, params))


def parse_challenges(values: str | Iterable[str]) -> list[Challenge]:
    """Every challenge in ``WWW-Authenticate``/``Proxy-Authenticate`` header values, in order.

    >>> parse_challenges(['Newauth realm="apps", type=1, Basic realm="simple"', "Bearer abc.def=="])
    [Challenge('Newauth', {'realm': 'apps', 'type': '1'}), Challenge('Basic', {'realm': 'simple'}), \
Challenge('Bearer', {}, token68='abc.def==')]

    A malformed header stops at the first error; the challenges before it are kept.
    """
    if isinstance(values, str):
        values = [values]
    out: list[Challenge] = []
    for value in values:
        if not isinstance(value, str):
            continue
        found: list[Challenge] = []
        try:
            _parse_one_header(value, found)
        except _Malformed:
            pass
        out.extend(found)
    return out
