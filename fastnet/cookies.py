"""Cookies: the :class:`CookieJar` protocol, ``Set-Cookie`` parsing and an RFC 6265 in-memory jar.

Theory of operation. The Bridge interceptor talks to a jar twice per network hop: before sending it
asks ``jar.load_for(url)`` and writes the answer as one ``Cookie`` header (:func:`cookie_header`);
after a response with ``Set-Cookie`` headers it parses each one with :func:`parse_set_cookie` and
hands the valid ones to ``jar.save_from_response(url, cookies)``. :data:`NO_COOKIES` is the default
jar; the Bridge compares against it by identity and then skips parsing altogether.

:func:`parse_set_cookie` runs the parsing algorithm of RFC 6265 §5.2 and the per-cookie decisions of
the storage model in §5.3 that depend only on the request URL (expiry from Max-Age, else Expires;
the Domain attribute checked against the request host; the default path). What it returns is
therefore a complete, validated :class:`Cookie`; ``None`` means "the user agent ignores this
cookie".

:class:`MemoryCookieJar` keeps the rest of §5.3 and §5.4: a cookie replaces the stored one with the
same name, domain and path (keeping its creation order); a cookie whose expiry is in the past deletes
that stored cookie and is not itself stored; a request gets the unexpired cookies whose domain and
path match, secure ones only over https, longest path first and, among equal paths, oldest first.
Cookies are kept in a dict per cookie domain, so a lookup touches only the request host and its
parent domains, never the whole jar. Every read or change happens under one lock; expired cookies
are dropped lazily when a lookup meets them. The per-domain and total limits of §6.1 bound memory for
long crawls: past a limit the expired cookies go first, then the least recently used.

Deliberate deviations and limits:

* There is no public suffix list. A Domain attribute with a single label (``com``, ``localhost``)
  is treated as a public suffix: it is accepted only when it equals the request host (the cookie
  then becomes host-only) and rejected otherwise. Multi-label suffixes such as ``co.uk`` are not
  recognised.
* For an IP-address host a cookie is always host-only; a Domain attribute must equal the address.
* Like Chrome, a cookie whose name plus value exceeds 4096 characters is rejected and an attribute
  value longer than 1024 characters is ignored; a name or value containing a control character
  makes the whole cookie invalid (it could never be sent back safely).
* What goes on the wire is checked twice: ``Cookie(...)`` refuses a name or value that no ``Cookie``
  header can carry (a control character, CR, LF, ``;``, a character past U+00FF), and
  :func:`cookie_header` checks every cookie a jar hands back by the same rules, since a jar is any
  object and may return anything: a bad one raises before the request is written.
* RFC 6265bis additions (cookie name prefixes, refusing ``Secure`` cookies from plain http) are not
  applied: the rules here are RFC 6265's, as OkHttp's are. ``SameSite`` is parsed and kept for
  callers, but a non-browser client has no "site" to enforce it against.
"""

from __future__ import annotations

import calendar
import re
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from fastnet.url import URL

__all__ = [
    "Cookie",
    "CookieJar",
    "NO_COOKIES",
    "MemoryCookieJar",
    "parse_set_cookie",
    "parse_cookie_date",
    "cookie_header",
    "cookie_pairs_header",
    "default_path",
    "domain_match",
    "merge_cookie_headers",
    "path_match",
]

#: Latest expiry we keep: 9999-12-31T23:59:59Z (also what Max-Age values too large for a date become).
MAX_EXPIRES = 253402300799.0
#: The "earliest representable date" of RFC 6265 §5.2.2, used for ``Max-Age`` zero or negative.
EARLIEST_EXPIRES = 0.0

_MAX_NAME_VALUE = 4096
_MAX_ATTRIBUTE_VALUE = 1024
_SAME_SITE = {"strict": "Strict", "lax": "Lax", "none": "None"}

# CTL = %x00-1F / %x7F (RFC 5234). Neither a name nor a value may carry one; a name also may not
# carry "=" or ";" and a value may not carry ";" (they would change how the Cookie header splits).
# Nor a character past U+00FF: a header is latin-1 on the wire (one character per byte, which is how a
# received Set-Cookie is decoded), so such a cookie could never be sent.
_BAD_NAME = re.compile(r"[\x00-\x1f\x7f;=]|[^\x00-\xff]")
_BAD_VALUE = re.compile(r"[\x00-\x1f\x7f;]|[^\x00-\xff]")
_WSP = " \t"


# -- the value type ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, repr=False)
class Cookie:
    """One cookie as stored by a jar (RFC 6265 §5.3): immutable and hashable.

    ``expires`` is seconds since the epoch, or ``None`` for a session cookie. ``host_only`` cookies
    go back only to ``domain`` itself; the others also to its subdomains.

    >>> c = parse_set_cookie("sid=abc; Path=/app; Secure", URL("https://example.com/app/login"))
    >>> (c.name, c.value, c.domain, c.path, c.secure, c.host_only)
    ('sid', 'abc', 'example.com', '/app', True, True)
    >>> c.matches(URL("https://example.com/app/home")), c.matches(URL("http://example.com/app/home"))
    (True, False)
    """

    name: str
    value: str
    domain: str
    path: str = "/"
    expires: float | None = None
    secure: bool = False
    http_only: bool = False
    host_only: bool = True
    same_site: str | None = None

    def __post_init__(self) -> None:
        _check_pair(self.name, self.value)
        if not self.domain or self.domain != self.domain.lower():
            raise ValueError(f"Invalid cookie domain {self.domain!r}: must be a non-empty lowercase host")
        if not self.path.startswith("/"):
            raise ValueError(f"Invalid cookie path {self.path!r}: must start with '/'")

    @property
    def persistent(self) -> bool:
        """True when the cookie has an expiry; session cookies live until the jar is cleared."""
        return self.expires is not None

    def is_expired(self, now: float | None = None) -> bool:
        """True when the expiry is at or before ``now`` (default: the current time)."""
        if self.expires is None:
            return False
        return self.expires <= (time.time() if now is None else now)

    def matches(self, url: URL | str, now: float | None = None) -> bool:
        """Whether this cookie goes with a request to ``url`` (RFC 6265 §5.4 step 1), and is unexpired."""
        if not isinstance(url, URL):
            url = URL(url)
        if self.secure and not url.is_https:
            return False
        if self.host_only:
            if url.host != self.domain:
                return False
        elif not domain_match(url.host, self.domain, url.is_ip_literal):
            return False
        if not path_match(url.path, self.path):
            return False
        return not self.is_expired(now)

    def __repr__(self) -> str:
        # The value is usually a credential (a session id): keep it out of logs.
        flags = "".join(
            f"; {flag}" for flag, on in (("Secure", self.secure), ("HttpOnly", self.http_only)) if on
        )
        return (
            f"<Cookie {self.name}=<{len(self.value)} chars> domain={self.domain!r}"
            f"{'' if self.host_only else ' (and subdomains)'} path={self.path!r}"
            f" expires={self.expires!r}{flags}>"
        )


# -- matching rules (RFC 6265 §5.1.3, §5.1.4) ------------------------------------------------------


def domain_match(host: str, domain: str, host_is_ip: bool | None = None) -> bool:
    """RFC 6265 §5.1.3: ``host`` equals ``domain`` or is a subdomain of it (never for IP addresses).

    >>> domain_match("www.example.com", "example.com"), domain_match("badexample.com", "example.com")
    (True, False)
    """
    if host == domain:
        return True
    if host_is_ip is None:
        host_is_ip = _is_ip(host)
    return not host_is_ip and host.endswith(domain) and host[-len(domain) - 1] == "."


def path_match(request_path: str, cookie_path: str) -> bool:
    """RFC 6265 §5.1.4: the cookie path equals the request path or is a whole-segment prefix of it.

    >>> path_match("/app/x", "/app"), path_match("/application", "/app"), path_match("/app/", "/app/")
    (True, False, True)
    """
    if request_path == cookie_path:
        return True
    if not request_path.startswith(cookie_path):
        return False
    return cookie_path.endswith("/") or request_path[len(cookie_path)] == "/"


def default_path(url_path: str) -> str:
    """RFC 6265 §5.1.4: the directory of the request path, used when ``Path`` is absent or invalid.

    >>> default_path("/a/b/c"), default_path("/a"), default_path("")
    ('/a/b', '/', '/')
    """
    if not url_path.startswith("/"):
        return "/"
    last = url_path.rfind("/")
    return "/" if last == 0 else url_path[:last]


def _is_ip(host: str) -> bool:
    return ":" in host or (host.count(".") == 3 and host.replace(".", "").isdigit())


# -- dates (RFC 6265 §5.1.1) ------------------------------------------------------------------------

# delimiter = %x09 / %x20-2F / %x3B-40 / %x5B-60 / %x7B-7E ; a date-token is a run of anything else
_DATE_TOKEN = re.compile(r"[^\x09\x20-\x2f\x3b-\x40\x5b-\x60\x7b-\x7e]+")
# time = hms-time ( non-digit *OCTET ) ; hms-time = time-field ":" time-field ":" time-field
_TIME = re.compile(r"(\d{1,2}):(\d{1,2}):(\d{1,2})(?:\D|$)")
# day-of-month = 1*2DIGIT ( non-digit *OCTET )
_DAY = re.compile(r"(\d{1,2})(?:\D|$)")
# year = 2*4DIGIT ( non-digit *OCTET )
_YEAR = re.compile(r"(\d{2,4})(?:\D|$)")
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")


def parse_cookie_date(text: str) -> float | None:
    """Parse an ``Expires`` value the lenient way of RFC 6265 §5.1.1; ``None`` when it is no date.

    Accepts the RFC 1123 form, the RFC 850 form with a two-digit year, asctime, and the many
    variants servers send in practice, since each token is recognised by its shape, not position.

    >>> parse_cookie_date("Wed, 09 Jun 2021 10:18:14 GMT") == parse_cookie_date("Wed Jun  9 10:18:14 21")
    True
    """
    hms: tuple[int, int, int] | None = None
    day = month = year = None
    for token in _DATE_TOKEN.findall(text):
        if hms is None and (m := _TIME.match(token)):
            hms = (int(m[1]), int(m[2]), int(m[3]))
        elif day is None and (m := _DAY.match(token)):
            day = int(m[1])
        elif month is None and token[:3].lower() in _MONTHS and len(token) >= 3:
            month = _MONTHS.index(token[:3].lower()) + 1
        elif year is None and (m := _YEAR.match(token)):
            year = int(m[1])
    if hms is None or day is None or month is None or year is None:
        return None
    if 70 <= year <= 99:
        year += 1900
    elif 0 <= year <= 69:
        year += 2000
    hour, minute, second = hms
    if not 1 <= day <= 31 or year < 1601 or hour > 23 or minute > 59 or second > 59:
        return None
    if day > calendar.monthrange(year, month)[1]:
        return None  # "the date does not exist" (31 April, 29 February of a common year)
    return float(calendar.timegm((year, month, day, hour, minute, second, 0, 0, 0)))


# -- parsing Set-Cookie (RFC 6265 §5.2, §5.3 steps 2-9) --------------------------------------------


def parse_set_cookie(header_value: str, url: URL | str, now: float | None = None) -> Cookie | None:
    """Parse one ``Set-Cookie`` header received from ``url``; ``None`` if the cookie must be ignored.

    ``now`` (epoch seconds, default the current time) is the base for ``Max-Age``. A cookie whose
    expiry is already past is returned as is: stored in a jar it deletes the cookie it replaces.

    >>> c = parse_set_cookie("id=7; Domain=.Example.com; Max-Age=60", URL("http://www.example.com/"), now=0)
    >>> c.domain, c.host_only, c.expires, c.path
    ('example.com', False, 60.0, '/')
    >>> parse_set_cookie("id=7; Domain=other.org", URL("http://www.example.com/")) is None
    True
    """
    if not isinstance(url, URL):
        url = URL(url)

    # §5.2 steps 1-6: the name-value-pair is everything before the first ";".
    pair, _, attributes = header_value.partition(";")
    name, eq, value = pair.partition("=")
    if not eq:
        return None
    name = name.strip(_WSP)
    value = value.strip(_WSP)
    if not name or len(name) + len(value) > _MAX_NAME_VALUE:
        return None
    if _BAD_NAME.search(name) or _BAD_VALUE.search(value):
        return None

    # §5.2 step 7 onwards: each attribute; an invalid one is ignored, the last valid one wins.
    max_age: float | None = None
    expires: float | None = None
    domain_attr: str | None = None
    path: str | None = None
    secure = http_only = False
    same_site: str | None = None
    for av in attributes.split(";") if attributes else ():
        attr_name, _, attr_value = av.partition("=")
        key = attr_name.strip(_WSP).lower()
        attr_value = attr_value.strip(_WSP)
        if len(attr_value) > _MAX_ATTRIBUTE_VALUE:
            continue
        if key == "expires":
            parsed = parse_cookie_date(attr_value)
            if parsed is not None:
                expires = min(parsed, MAX_EXPIRES)
        elif key == "max-age":
            # max-age-av = "Max-Age=" non-zero-digit *DIGIT; §5.2.2 reads it leniently as ["-"] 1*DIGIT
            digits = attr_value[1:] if attr_value.startswith("-") else attr_value
            if not digits or not digits.isdigit() or not digits.isascii():
                continue
            delta = int(attr_value)
            if delta <= 0:
                max_age = EARLIEST_EXPIRES
            else:
                base = time.time() if now is None else now
                max_age = min(float(base) + delta, MAX_EXPIRES)
        elif key == "domain":
            # An empty value is ignored; a leading "." is dropped (§5.2.3).
            if attr_value:
                domain_attr = attr_value[1:] if attr_value[0] == "." else attr_value
        elif key == "path":
            path = attr_value if attr_value.startswith("/") else None
        elif key == "secure":
            secure = True
        elif key == "httponly":
            http_only = True
        elif key == "samesite":
            same_site = _SAME_SITE.get(attr_value.lower())

    # §5.3 step 3: Max-Age wins over Expires; neither makes a session cookie.
    expiry = max_age if max_age is not None else expires

    # §5.3 steps 4-6: the Domain attribute must cover the request host.
    host = url.host
    host_is_ip = url.is_ip_literal
    host_only = True
    if domain_attr:
        domain = _canonical_domain(domain_attr)
        if domain is None:
            return None
        if host_is_ip:
            if domain.strip("[]") != host:
                return None  # an address has no parent domain to share cookies with
        elif "." not in domain or _is_ip(domain):
            # Public-suffix-like (single label): only the host itself may name it. Nor may a name
            # such as "1.127.0.0.1" plant cookies for the address 127.0.0.1.
            if domain != host:
                return None
        elif not domain_match(host, domain, False):
            return None
        else:
            host_only = False
            host = domain

    return Cookie(
        name=name,
        value=value,
        domain=host,
        path=path if path is not None else default_path(url.path),
        expires=expiry,
        secure=secure,
        http_only=http_only,
        host_only=host_only,
        same_site=same_site,
    )


def _canonical_domain(domain: str) -> str | None:
    """Lowercase (and IDNA-encode) a Domain attribute as RFC 6265 §5.1.2 asks; ``None`` if impossible."""
    domain = domain.lower()
    if domain.isascii():
        return domain
    try:
        return domain.encode("idna").decode("ascii")
    except UnicodeError:
        return None


def cookie_header(cookies: Iterable[Cookie]) -> str:
    """The ``Cookie`` request header value for ``cookies`` in the order given (RFC 6265 §5.4 step 4).

    >>> cookie_header([Cookie("a", "1", "example.com"), Cookie("b", "", "example.com")])
    'a=1; b='

    A cookie ``Cookie(...)`` would refuse (CR, LF, any control character, ``;``, a character past
    U+00FF) raises ``ValueError``, naming the cookie but not its value; a non-cookie ``TypeError``.
    """
    parts = []
    for cookie in cookies:
        try:
            name, value = cookie.name, cookie.value
        except AttributeError:
            raise TypeError(f"a cookie must be a Cookie, not {type(cookie).__name__}") from None
        _check_pair(name, value)  # a jar is any object: what it returns is checked like a new Cookie
        parts.append(f"{name}={value}")
    return "; ".join(parts)


def cookie_pairs_header(cookies: object, url: URL) -> str:
    """The ``Cookie`` value for a request's ``cookies=``: a mapping or ``(name, value)`` pairs (sent as
    they are), or ``Cookie`` objects (a jar's: only those that match ``url``). Checked like a jar's.

    >>> cookie_pairs_header({"sid": "abc", "theme": "dark"}, URL("http://h/"))
    'sid=abc; theme=dark'
    """
    if isinstance(cookies, Mapping):
        items: Iterable[object] = cookies.items()
    elif isinstance(cookies, (str, bytes)) or not isinstance(cookies, Iterable):
        raise TypeError(f"cookies must be a mapping or (name, value) pairs, not {type(cookies).__name__}")
    else:
        items = cookies
    parts = []
    for item in items:
        if isinstance(item, Cookie):
            if item.matches(url):
                parts.append(f"{item.name}={item.value}")
            continue
        if not isinstance(item, (tuple, list)) or len(item) != 2:
            raise TypeError(f"cookies: each item must be a (name, value) pair or a Cookie, not {item!r}")
        name, value = item
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            value = str(value)
        _check_pair(name, value)
        parts.append(f"{name}={value}")
    return "; ".join(parts)


def merge_cookie_headers(sent: str, jar: str) -> str:
    """A request's own ``Cookie`` header with the jar's cookies for the URL: a name the request sets wins."""
    names = {part.split("=", 1)[0].strip() for part in sent.split(";")}
    extra = [part for part in jar.split("; ") if part and part.split("=", 1)[0] not in names]
    return "; ".join([sent, *extra]) if extra else sent


def _check_pair(name: object, value: object) -> None:
    """Raise unless ``name=value`` can go into a ``Cookie`` header as it is. The value is never quoted:
    it is usually a credential."""
    if not isinstance(name, str):
        raise TypeError(f"cookie name must be a str, not {type(name).__name__}")
    if not name or _BAD_NAME.search(name) or name.strip(_WSP) != name:
        raise ValueError(f"Invalid cookie name {name!r}")
    if not isinstance(value, str):
        raise TypeError(f"value of cookie {name!r} must be a str, not {type(value).__name__}")
    bad = _BAD_VALUE.search(value)
    if bad is not None:
        raise ValueError(
            f"Invalid value for cookie {name!r}: character {ord(bad.group()):#04x} at {bad.start()}"
            " (a control character, ';' or past U+00FF cannot be sent)"
        )


# -- jars -------------------------------------------------------------------------------------------


@runtime_checkable
class CookieJar(Protocol):
    """Where a client keeps cookies: called by the Bridge interceptor on every network hop.

    ``load_for`` returns the cookies for a request, in the order they should be sent;
    ``save_from_response`` receives the valid cookies of one response (never an empty list).
    Any object with these two methods is a jar:

    >>> class PrintingJar:
    ...     def load_for(self, url): return []
    ...     def save_from_response(self, url, cookies): print([c.name for c in cookies])
    >>> isinstance(PrintingJar(), CookieJar)
    True
    """

    def load_for(self, url: URL) -> list[Cookie]: ...

    def save_from_response(self, url: URL, cookies: list[Cookie]) -> None: ...


class _NoCookies:
    """The jar that never stores or returns a cookie; the client default."""

    __slots__ = ()

    def load_for(self, url: URL) -> list[Cookie]:
        return []

    def save_from_response(self, url: URL, cookies: list[Cookie]) -> None:
        return None

    def __repr__(self) -> str:
        return "NO_COOKIES"

    def __reduce__(self) -> str:
        return "NO_COOKIES"


#: The default jar: accepts nothing, sends nothing. The Bridge skips ``Set-Cookie`` parsing for it.
NO_COOKIES: CookieJar = _NoCookies()


class _Entry:
    """A stored cookie with the jar's bookkeeping: creation order and last use."""

    __slots__ = ("cookie", "created", "used")

    def __init__(self, cookie: Cookie, created: int) -> None:
        self.cookie = cookie
        self.created = created
        self.used = created


class MemoryCookieJar:
    """A thread-safe in-memory jar following the RFC 6265 storage model (§5.3) and retrieval (§5.4).

    >>> jar = MemoryCookieJar()
    >>> url = URL("https://example.com/shop/cart")
    >>> jar.save_from_response(url, [parse_set_cookie("sid=1; Path=/", url), parse_set_cookie("c=2", url)])
    >>> cookie_header(jar.load_for(URL("https://example.com/shop/x")))
    'c=2; sid=1'
    >>> jar.save_from_response(url, [parse_set_cookie("sid=; Path=/; Max-Age=0", url)])
    >>> len(jar)
    1

    ``max_cookies_per_domain`` and ``max_cookies`` bound memory (RFC 6265 §6.1 asks for at least 50
    and 3000); past a limit the expired cookies are dropped first, then the least recently used.
    """

    def __init__(self, *, max_cookies_per_domain: int = 180, max_cookies: int = 3000) -> None:
        if max_cookies_per_domain < 1 or max_cookies < 1:
            raise ValueError("cookie limits must be at least 1")
        self._max_per_domain = max_cookies_per_domain
        self._max_total = max_cookies
        self._lock = threading.Lock()
        # cookie domain -> (name, path) -> entry; (name, domain, path) is a cookie's identity.
        self._by_domain: dict[str, dict[tuple[str, str], _Entry]] = {}
        self._count = 0
        self._clock = 0  # creation and use order; a counter, because time.time() can tie

    def load_for(self, url: URL, now: float | None = None) -> list[Cookie]:
        """The unexpired cookies for a request to ``url``: longest path first, then oldest first."""
        if not self._count:
            return []
        if now is None:
            now = time.time()
        host = url.host
        is_ip = url.is_ip_literal
        is_https = url.is_https
        request_path = url.path
        found: list[_Entry] = []
        with self._lock:
            # The request host and each parent domain: "a.b.c" -> "a.b.c", "b.c", "c".
            domain = host
            while True:
                bucket = self._by_domain.get(domain)
                if bucket:
                    expired: list[tuple[str, str]] = []
                    for key, entry in bucket.items():
                        c = entry.cookie
                        if c.expires is not None and c.expires <= now:
                            expired.append(key)
                        elif (
                            (domain == host or not c.host_only)
                            and (is_https or not c.secure)
                            and path_match(request_path, c.path)
                        ):
                            found.append(entry)
                    for key in expired:
                        del bucket[key]
                    self._count -= len(expired)
                    if not bucket:
                        del self._by_domain[domain]
                dot = domain.find(".")
                if is_ip or dot < 0:
                    break
                domain = domain[dot + 1 :]
            if not found:
                return []
            found.sort(key=lambda e: (-len(e.cookie.path), e.created))
            self._clock += 1
            for entry in found:
                entry.used = self._clock
        return [entry.cookie for entry in found]

    def save_from_response(self, url: URL, cookies: list[Cookie], now: float | None = None) -> None:
        """Store ``cookies`` received from ``url``: replace, delete when already expired, or add.

        A cookie whose domain does not cover ``url``'s host is ignored (a well-behaved caller passes
        only what :func:`parse_set_cookie` returned for this URL, which never has one).
        """
        if not cookies:
            return
        if now is None:
            now = time.time()
        host = url.host
        is_ip = url.is_ip_literal
        with self._lock:
            for cookie in cookies:
                if cookie.host_only or is_ip:
                    if cookie.domain != host:
                        continue
                elif "." not in cookie.domain or not domain_match(host, cookie.domain, False):
                    continue  # another site's domain, or a public-suffix-like one
                bucket = self._by_domain.get(cookie.domain)
                key = (cookie.name, cookie.path)
                old = bucket.get(key) if bucket is not None else None
                if cookie.expires is not None and cookie.expires <= now:
                    # §5.3: an expiry in the past removes the cookie it would have replaced.
                    if old is not None and bucket is not None:
                        del bucket[key]
                        self._count -= 1
                        if not bucket:
                            del self._by_domain[cookie.domain]
                    continue
                self._clock += 1
                if old is not None:
                    # §5.3 step 11.3: the replacement keeps the old creation time, hence its order.
                    old.cookie = cookie
                    old.used = self._clock
                    continue
                if bucket is None:
                    bucket = self._by_domain[cookie.domain] = {}
                bucket[key] = _Entry(cookie, self._clock)
                self._count += 1
                if len(bucket) > self._max_per_domain:
                    self._evict_domain(cookie.domain, bucket, now)
            if self._count > self._max_total:
                self._evict_total(now)

    def _evict_domain(self, domain: str, bucket: dict[tuple[str, str], _Entry], now: float) -> None:
        """Bring one domain back to its limit: expired cookies first, then the least recently used."""
        excess = len(bucket) - self._max_per_domain
        victims = sorted(
            bucket.items(),
            key=lambda kv: (not kv[1].cookie.is_expired(now), kv[1].used),
        )[:excess]
        for key, _ in victims:
            del bucket[key]
        self._count -= len(victims)

    def _evict_total(self, now: float) -> None:
        """Bring the whole jar back under its limit, with a little slack so this stays rare."""
        target = max(1, self._max_total - max(1, self._max_total // 10))
        everything = [
            (not entry.cookie.is_expired(now), entry.used, domain, key)
            for domain, bucket in self._by_domain.items()
            for key, entry in bucket.items()
        ]
        everything.sort(key=lambda t: (t[0], t[1]))
        victims = everything[: len(everything) - target]
        for _, _, domain, key in victims:
            bucket = self._by_domain[domain]
            del bucket[key]
            if not bucket:
                del self._by_domain[domain]
        self._count -= len(victims)

    def clear(self) -> None:
        """Forget every cookie."""
        with self._lock:
            self._by_domain.clear()
            self._count = 0

    def _live(self) -> list[_Entry]:
        now = time.time()
        with self._lock:
            entries = [
                entry
                for bucket in self._by_domain.values()
                for entry in bucket.values()
                if not entry.cookie.is_expired(now)
            ]
        entries.sort(key=lambda e: e.created)
        return entries

    def __len__(self) -> int:
        """The number of unexpired cookies."""
        return len(self._live())

    def __iter__(self) -> Iterator[Cookie]:
        """The unexpired cookies, oldest first (a snapshot: the jar may change while you iterate)."""
        return iter([entry.cookie for entry in self._live()])

    def __repr__(self) -> str:
        return f"<MemoryCookieJar with {len(self)} cookies>"
