"""URL parsing, reference resolution (for ``Location``), default ports, IDNA hosts, IPv6 literals.

Theory of operation: a :class:`URL` is an immutable, hashable value holding the parts of an ``http``
or ``https`` URL in the form that goes on the wire: the host lowercased and IDNA-encoded (IPv6
without brackets), the port always known (default filled in), path, query and fragment percent-encoded
where the WHATWG URL Standard encodes them and nowhere else, so a URL goes out as a browser (or httpx)
sends it: ``?data[0]=1|2`` stays as it is, and ``%XX`` is never decoded nor encoded twice. Parsing is
strict about what could smuggle bytes into a request (any control character, CR, LF or NUL anywhere
raises ``ValueError``) and lenient about what browsers fix silently (spaces, quotes and non-ASCII are
percent-encoded, a backslash before the query is a slash). Parsed URLs are cached by their text, which
saves about a microsecond per request for the crawler's common case of fetching the same URLs
repeatedly. A URL with user-info is never cached, so the per-request path knows that a URL found in
the cache carries no credentials (the request turns credentials into an ``Authorization`` header).

A password never leaves this module in text meant for people: ``repr()`` and every ``ValueError``
show it as ``***`` (:func:`mask_password`); only ``str()``, the URL's value, keeps it.

Grammar (RFC 3986 §3):  URI = scheme ":" "//" authority path-abempty [ "?" query ] [ "#" fragment ]
                         authority = [ userinfo "@" ] host [ ":" port ]
"""

from __future__ import annotations

import ipaddress
import re
from typing import TYPE_CHECKING
from urllib.parse import quote, unquote

if TYPE_CHECKING:
    from typing import TypedDict, Unpack

    class _Parts(TypedDict):
        """The parts of a URL that :meth:`URL.replace` changes."""

        scheme: str
        username: str
        password: str
        host: str
        port: int
        path: str
        query: str | None
        fragment: str | None

    class _Changes(TypedDict, total=False):
        """``URL.replace``'s keyword arguments: any of the parts."""

        scheme: str
        username: str
        password: str
        host: str
        port: int
        path: str
        query: str | None
        fragment: str | None


__all__ = ["URL", "DEFAULT_PORTS", "header_reference", "mask_password"]


DEFAULT_PORTS = {"http": 80, "https": 443}
_SCHEME_ALIASES = {"ws": "http", "wss": "https"}

# What is percent-encoded in a path, a query and a fragment: the WHATWG URL Standard's percent-encode
# sets for a special scheme (§1.3; controls never get here: they are refused), which is what browsers and
# httpx put on the wire. Everything else is kept byte for byte, "%" included, so "%2F" and "%zz" stay
# as they are and nothing is ever decoded or encoded twice. "#" and "?" cannot occur where they would
# be encoded: they end the path (and "#" the query). Non-ASCII characters become their UTF-8 bytes.
_PATH_ENCODE = re.compile('[ "<>`{}\x7f-\U0010ffff]+')
_QUERY_ENCODE = re.compile("[ \"<>'\x7f-\U0010ffff]+")
_FRAGMENT_ENCODE = re.compile('[ "<>`\x7f-\U0010ffff]+')
# reg-name characters that can never be part of a host (RFC 3986 gen-delims, WHATWG forbidden host
# code points); IDNA handles the rest.
_FORBIDDEN_HOST = set(' #%/:<>?@[\\]^|"`{}')


def _percent(match: re.Match[str]) -> str:
    return quote(match.group(), safe="")


def _encode(text: str, unsafe: re.Pattern[str]) -> str:
    """``text`` with the characters of the ``unsafe`` set percent-encoded (their UTF-8 bytes)."""
    return unsafe.sub(_percent, text)


_cache: dict[str, URL] = {}
_CACHE_MAX = 4096


# Where a URL's user-info may start: after "scheme:" and any slashes (or after leading slashes alone).
_AUTHORITY_START = re.compile(r"\s*(?:[A-Za-z][A-Za-z0-9+.\-]*:)?[/\\]*")


def mask_password(text: str) -> str:
    """``text`` with the password of its user-info replaced by ``***``: for messages about a URL that
    may not even parse.

    >>> mask_password("http://alice:s3cret@h:99999/")
    'http://alice:***@h:99999/'

    Deliberately loose: the user-info runs to the *last* ``@``, whatever comes between, so a password
    holding a raw ``/``, ``?`` or ``#`` (which makes the URL unparsable) is hidden too. For a URL that
    does parse, ``repr(URL(...))`` shows exactly its parts.
    """
    match = _AUTHORITY_START.match(text)
    start = match.end() if match is not None else 0
    at = text.rfind("@", start)
    if at < 0:
        return text
    colon = text.find(":", start, at)
    if colon < 0:
        return text
    return text[: colon + 1] + "***" + text[at:]


def header_reference(value: str) -> str:
    """A URL reference as a response header carried it (``Location``), ready for :meth:`URL.resolve`.

    Header values are decoded as latin-1, one character per received byte, so the raw UTF-8 of
    ``/café`` arrives as ``/cafÃ©``; each byte past ASCII is percent-encoded once, as browsers, curl
    and requests do, which gives ``/caf%C3%A9`` (a host so encoded is decoded again as UTF-8 for IDNA).

    >>> header_reference("/caf\xc3\xa9")
    '/caf%C3%A9'
    """
    if value.isascii():
        return value
    # a character past U+00FF is no received byte (a value built in code): its UTF-8 is used
    return "".join(
        ch if ch < "\x80" else (f"%{ord(ch):02X}" if ch <= "\xff" else quote(ch, safe="")) for ch in value
    )


def _shown(text: str) -> str:
    """``text`` as a ``ValueError`` quotes it: password masked, then at most 200 characters."""
    return mask_password(text)[:200]


_CONTROL = re.compile("[\x00-\x1f\x7f]")
#: An absolute reference's scheme (RFC 3986 §3.1) and its colon.
SCHEME_PREFIX = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")


def check_controls(text: str, what: str) -> None:
    found = _CONTROL.search(text)
    if found is not None:
        i = found.start()
        raise ValueError(f"Invalid {what}: control character {text[i]!r} at index {i} in {_shown(text)!r}")


def _encode_host(host: str, text: str) -> str:
    """Validate and normalise a host: IPv6 literal (without brackets), IPv4, or an IDNA name."""
    if not host:
        raise ValueError(f"Invalid URL: no host in {_shown(text)!r}")
    if host[0] == "[":
        if host[-1] != "]":
            raise ValueError(f"Invalid URL host {host!r}: unterminated IPv6 literal")
        inner = host[1:-1]
        try:
            return ipaddress.IPv6Address(inner.split("%", 1)[0]).compressed
        except ValueError:
            raise ValueError(f"Invalid URL host {host!r}: not an IPv6 address") from None
    if "%" in host:
        host = unquote(host)
    lowered = host.lower().rstrip(".") if host != "." else host
    if lowered.isascii():
        for ch in lowered:
            if ch in _FORBIDDEN_HOST or ch < " " or ch == "\x7f":
                raise ValueError(f"Invalid URL host {host!r}: character {ch!r} is not allowed")
        if not lowered or ".." in lowered:
            raise ValueError(f"Invalid URL host {host!r}: empty label")
        if len(lowered) > 253:
            raise ValueError(f"Invalid URL host {host[:80]!r}...: longer than 253 characters")
        for label in lowered.split("."):
            if len(label) > 63:
                raise ValueError(f"Invalid URL host {host[:80]!r}: label longer than 63 characters")
        return lowered
    for ch in lowered:
        if ch in _FORBIDDEN_HOST or ch < " ":
            raise ValueError(f"Invalid URL host {host!r}: character {ch!r} is not allowed")
    try:
        return lowered.encode("idna").decode("ascii")
    except UnicodeError as exc:
        raise ValueError(f"Invalid URL host {host!r}: cannot be IDNA-encoded ({exc})") from None


def _remove_dot_segments(path: str) -> str:
    """RFC 3986 §5.2.4."""
    if "." not in path:
        return path
    output: list[str] = []
    segments = path.split("/")
    for i, seg in enumerate(segments):
        if seg == ".":
            if i == len(segments) - 1:
                output.append("")
            continue
        if seg == "..":
            if len(output) > 1:
                output.pop()
            if i == len(segments) - 1:
                output.append("")
            continue
        output.append(seg)
    result = "/".join(output)
    if path.startswith("/") and not result.startswith("/"):
        result = "/" + result
    return result


class URL:
    """An ``http`` or ``https`` URL.

    >>> u = URL("https://user:pw@Example.COM:8443/a b?q=1#top")
    >>> u.host, u.port, u.path, u.query, u.target
    ('example.com', 8443, '/a%20b', 'q=1', '/a%20b?q=1')
    >>> str(u.resolve("../x"))
    'https://user:pw@example.com:8443/x'

    Bad URLs raise ``ValueError`` naming the problem; neither it nor ``repr()`` shows a password.
    """

    __slots__ = (
        "scheme",
        "username",
        "password",
        "host",
        "port",
        "path",
        "query",
        "fragment",
        "target",
        "host_header",
        "origin_key",
        "_text",
        "_hash",
    )

    scheme: str
    username: str
    password: str
    host: str
    port: int
    path: str
    query: str | None
    fragment: str | None
    #: The origin-form request target: path and query.
    target: str
    #: The ``Host`` header value: host, plus ``:port`` when it is not the scheme's default.
    host_header: str
    #: ``scheme://host:port``, port always present: one string that identifies the origin.
    origin_key: str
    _text: str | None
    _hash: int | None

    def __new__(cls, url: str | URL = "") -> URL:
        if isinstance(url, URL):
            return url
        cached = _cache.get(url) if isinstance(url, str) else None
        if cached is not None:
            return cached
        self = object.__new__(cls)
        self._parse(url)
        if not (self.username or self.password):  # never cached: a request checks a miss for credentials
            if len(_cache) >= _CACHE_MAX:
                _cache.clear()
            _cache[url] = self
        return self

    @classmethod
    def parse(cls, url: str | URL) -> URL:
        """Parse ``url`` (cached); a ``URL`` is returned as it is."""
        return cls(url)

    def _parse(self, text: object) -> None:
        if not isinstance(text, str):
            raise TypeError(f"URL must be a str or URL, not {type(text).__name__}")
        stripped = text.strip(" ")
        check_controls(stripped, "URL")
        colon = stripped.find(":")
        if colon <= 0:
            raise ValueError(f"Invalid URL {_shown(text)!r}: no scheme (expected http:// or https://)")
        scheme = stripped[:colon].lower()
        scheme = _SCHEME_ALIASES.get(scheme, scheme)
        if scheme not in DEFAULT_PORTS:
            raise ValueError(
                f"Unsupported URL scheme {stripped[:colon]!r} in {_shown(text)!r}: expected 'http' or 'https'"
            )
        rest = stripped[colon + 1 :]
        fragment = None
        hash_at = rest.find("#")
        if hash_at >= 0:
            fragment = _encode(rest[hash_at + 1 :], _FRAGMENT_ENCODE)
            rest = rest[:hash_at]
        query = None
        q_at = rest.find("?")
        if q_at >= 0:
            query = _encode(rest[q_at + 1 :], _QUERY_ENCODE)
            rest = rest[:q_at]
        # before the query a backslash is a slash (WHATWG, for http and https); in the query it is kept
        rest = rest.replace("\\", "/")
        if not rest.startswith("//"):
            raise ValueError(f"Invalid URL {_shown(text)!r}: expected '//' after '{scheme}:'")
        rest = rest[2:]
        slash = rest.find("/")
        if slash >= 0:
            authority, path = rest[:slash], rest[slash:]
        else:
            authority, path = rest, "/"
        username = password = ""
        at = authority.rfind("@")
        if at >= 0:
            userinfo, authority = authority[:at], authority[at + 1 :]
            user, sep, pw = userinfo.partition(":")
            username, password = unquote(user), unquote(pw) if sep else ""
        if authority.startswith("["):
            end = authority.find("]")
            if end < 0:
                raise ValueError(f"Invalid URL {_shown(text)!r}: unterminated IPv6 literal")
            host_part, port_part = authority[: end + 1], authority[end + 1 :]
            if port_part and not port_part.startswith(":"):
                raise ValueError(f"Invalid URL {_shown(text)!r}: junk after IPv6 literal")
            port_text = port_part[1:] if port_part else None
        else:
            host_part, sep, port_text_ = authority.partition(":")
            port_text = port_text_ if sep else None
        if port_text:
            # the port is not quoted on its own: when a password holds a raw "#", "?" or "/", what the
            # parser takes for the port is the start of that password
            if not port_text.isdigit() or not port_text.isascii():
                raise ValueError(f"Invalid URL port in {_shown(text)!r}: not a number")
            port = int(port_text)
            if not 0 < port < 65536:
                raise ValueError(f"Invalid URL port in {_shown(text)!r}: must be 1-65535")
        else:
            port = DEFAULT_PORTS[scheme]
        self.scheme = scheme
        self.username = username
        self.password = password
        self.host = _encode_host(host_part, text)
        self.port = port
        self.path = _remove_dot_segments(_encode(path, _PATH_ENCODE))
        self.query = query
        self.fragment = fragment
        self.target = self.path if query is None else f"{self.path}?{query}"
        literal = f"[{self.host}]" if ":" in self.host else self.host
        self.host_header = literal if port == DEFAULT_PORTS[scheme] else f"{literal}:{port}"
        self.origin_key = f"{scheme}://{literal}:{port}"
        self._text = None
        self._hash = None

    # -- derived values -------------------------------------------------------------------------

    @property
    def is_https(self) -> bool:
        return self.scheme == "https"

    @property
    def default_port(self) -> int:
        return DEFAULT_PORTS[self.scheme]

    @property
    def host_literal(self) -> str:
        """The host as written in a URL: IPv6 in brackets."""
        return f"[{self.host}]" if ":" in self.host else self.host

    @property
    def authority(self) -> str:
        """``host:port`` with the port always present (the CONNECT target form)."""
        return f"{self.host_literal}:{self.port}"

    @property
    def origin(self) -> tuple[str, str, int]:
        return (self.scheme, self.host, self.port)

    @property
    def is_ip_literal(self) -> bool:
        host = self.host
        if ":" in host:
            return True
        return host.replace(".", "").isdigit() and host.count(".") == 3

    def redacted(self) -> str:
        """The URL without credentials, query or fragment: safe for logs and error messages."""
        return f"{self.scheme}://{self.host_header}{self.path}"

    def same_origin(self, other: URL) -> bool:
        return self.scheme == other.scheme and self.host == other.host and self.port == other.port

    # -- transformations ------------------------------------------------------------------------

    def resolve(self, reference: str) -> URL:
        """Resolve ``reference`` (absolute, scheme-relative, absolute-path or relative) against this URL.

        RFC 3986 §5.2; raises ``ValueError`` when the result is not a valid http(s) URL.
        """
        if not isinstance(reference, str):
            raise TypeError(f"reference must be a str, not {type(reference).__name__}")
        ref = reference.strip(" ")
        check_controls(ref, "URL reference")
        end = len(ref)  # a backslash is a slash up to the query or fragment, as in a URL
        for sep in "?#":
            at = ref.find(sep)
            if 0 <= at < end:
                end = at
        ref = ref[:end].replace("\\", "/") + ref[end:]
        if SCHEME_PREFIX.match(ref) is not None:
            return URL(ref)
        if ref.startswith("//"):
            return URL(f"{self.scheme}:{ref}")
        base = f"{self.scheme}://{self._userinfo()}{self.host_header}"
        if ref.startswith("/"):
            return URL(base + ref)
        if ref == "":
            return URL(base + self.target)
        if ref.startswith("?"):
            return URL(base + self.path + ref)
        if ref.startswith("#"):
            return URL(base + self.target + ref)
        directory = self.path[: self.path.rfind("/") + 1] or "/"
        return URL(base + directory + ref)

    def replace(self, **changes: Unpack[_Changes]) -> URL:
        """Return a URL with some parts changed: ``scheme``, ``host``, ``port``, ``path``, ``query``..."""
        parts: _Parts = {
            "scheme": self.scheme,
            "username": self.username,
            "password": self.password,
            "host": self.host,
            "port": self.port,
            "path": self.path,
            "query": self.query,
            "fragment": self.fragment,
        }
        for key in changes:
            if key not in parts:
                raise TypeError(f"URL.replace() got an unexpected keyword argument {key!r}")
        parts.update(changes)
        scheme = parts["scheme"]
        port = parts["port"]
        if "scheme" in changes and "port" not in changes and self.port == DEFAULT_PORTS.get(self.scheme):
            port = DEFAULT_PORTS.get(scheme, port)
        host = parts["host"]
        host_lit = f"[{host}]" if ":" in host else host
        userinfo = ""
        if parts["username"] or parts["password"]:
            userinfo = (
                quote(parts["username"], safe="")
                + (":" + quote(parts["password"], safe="") if parts["password"] else "")
                + "@"
            )
        text = f"{scheme}://{userinfo}{host_lit}:{port}{parts['path'] or '/'}"
        if parts["query"] is not None:
            text += "?" + parts["query"]
        if parts["fragment"] is not None:
            text += "#" + parts["fragment"]
        return URL(text)

    def _userinfo(self) -> str:
        if not self.username and not self.password:
            return ""
        info = quote(self.username, safe="")
        if self.password:
            info += ":" + quote(self.password, safe="")
        return info + "@"

    # -- value semantics ------------------------------------------------------------------------

    def __str__(self) -> str:
        text = self._text
        if text is None:
            text = f"{self.scheme}://{self._userinfo()}{self.host_header}{self.target}"
            if self.fragment is not None:
                text += "#" + self.fragment
            self._text = text
        return text

    def __repr__(self) -> str:
        if not self.password:
            return f"URL({str(self)!r})"
        text = f"{self.scheme}://{quote(self.username, safe='')}:***@{self.host_header}{self.target}"
        if self.fragment is not None:
            text += "#" + self.fragment
        return f"URL({text!r})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            try:
                other = URL(other)
            except ValueError:
                return False
        if not isinstance(other, URL):
            return NotImplemented
        return str(self) == str(other)

    def __hash__(self) -> int:
        h = self._hash
        if h is None:
            h = self._hash = hash(str(self))
        return h

    def __setattr__(self, name: str, value: object) -> None:
        if name in ("_text", "_hash") or not hasattr(self, name):
            object.__setattr__(self, name, value)
        else:
            raise AttributeError(f"URL is immutable; use URL.replace({name}=...)")

    def __reduce__(self) -> tuple[object, ...]:
        return (URL, (str(self),))
