"""Tests for fastnet.cookies: Set-Cookie parsing (RFC 6265 §5.2), the storage model (§5.3), retrieval
(§5.4), the date algorithm (§5.1.1), and the jar protocol used by the Bridge interceptor."""

from __future__ import annotations

import calendar
import dataclasses
import email.utils
import http.client
import http.server
import pickle
import random
import threading
import time
from typing import Any

import pytest

from fastnet.cookies import (
    EARLIEST_EXPIRES,
    MAX_EXPIRES,
    NO_COOKIES,
    Cookie,
    CookieJar,
    MemoryCookieJar,
    cookie_header,
    default_path,
    domain_match,
    parse_cookie_date,
    parse_set_cookie,
    path_match,
)
from fastnet.url import URL

NOW = 1_700_000_000.0
HTTP = URL("http://www.example.com/")
HTTPS = URL("https://www.example.com/")


def parse(header: str, url: URL | str = HTTP, now: float = NOW) -> Cookie | None:
    return parse_set_cookie(header, URL(url) if isinstance(url, str) else url, now=now)


def must_parse(header: str, url: URL | str = HTTP, now: float = NOW) -> Cookie:
    cookie = parse(header, url, now)
    assert cookie is not None, header
    return cookie


def gmt(year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0) -> float:
    return float(calendar.timegm((year, month, day, hour, minute, second, 0, 0, 0)))


def names(cookies: list[Cookie]) -> list[str]:
    return [c.name for c in cookies]


# -- parse_set_cookie: the name-value pair ---------------------------------------------------------


def test_parse_basic_cookie_is_host_only_session_with_default_path() -> None:
    c = must_parse("sid=abc123", "http://www.example.com/a/b")
    assert (c.name, c.value, c.domain, c.path) == ("sid", "abc123", "www.example.com", "/a")
    assert c.host_only and c.expires is None and not c.persistent
    assert not c.secure and not c.http_only and c.same_site is None


def test_parse_trims_whitespace_around_name_and_value() -> None:
    c = must_parse("  sid \t=  abc  ; Path=/")
    assert (c.name, c.value) == ("sid", "abc")


def test_parse_value_may_contain_equals_and_quotes() -> None:
    assert must_parse("a=b=c").value == "b=c"
    assert must_parse('a="quoted value"').value == '"quoted value"'


def test_parse_empty_value_is_allowed() -> None:
    assert must_parse("a=").value == ""
    assert must_parse("a=; Path=/").value == ""


@pytest.mark.parametrize(
    "header",
    ["novalue", "=value", "  =value", "", ";", "; Path=/", "a\x00b=1", "a=b\x01c", "a=b\x7f", "a\tb=1"],
)
def test_parse_rejects_bad_name_value_pair(header: str) -> None:
    assert parse(header) is None


def test_parse_rejects_oversized_name_value() -> None:
    # name plus value up to 4096 characters (RFC 6265 §6.1's minimum; Chrome's maximum)
    assert parse("a=" + "x" * 4096) is None
    assert must_parse("a=" + "x" * 4095).value == "x" * 4095


def test_parse_accepts_str_url() -> None:
    c = parse_set_cookie("a=1", "http://example.com/x/y", now=NOW)
    assert c is not None and c.domain == "example.com" and c.path == "/x"


# -- parse_set_cookie: attributes ------------------------------------------------------------------


def test_parse_attribute_names_are_case_insensitive() -> None:
    c = must_parse("a=1; SECURE; httponly; pAtH=/p; DOMAIN=example.com; max-AGE=10")
    assert c.secure and c.http_only and c.path == "/p" and c.domain == "example.com"
    assert c.expires == NOW + 10


def test_parse_unknown_attributes_are_ignored() -> None:
    c = must_parse("a=1; Priority=High; Partitioned; ; =x; Comment=hi")
    assert (c.name, c.value, c.path) == ("a", "1", "/")


def test_parse_secure_and_httponly_ignore_their_values() -> None:
    c = must_parse("a=1; Secure=false; HttpOnly=no")
    assert c.secure and c.http_only


@pytest.mark.parametrize(
    ("attribute", "expected"),
    [("Strict", "Strict"), ("lax", "Lax"), ("NONE", "None"), ("bogus", None), ("", None)],
)
def test_parse_same_site(attribute: str, expected: str | None) -> None:
    assert must_parse(f"a=1; SameSite={attribute}").same_site == expected


def test_parse_last_valid_attribute_wins() -> None:
    c = must_parse("a=1; Path=/one; Path=/two; Domain=www.example.com; Domain=example.com")
    assert c.path == "/two" and c.domain == "example.com"
    # An invalid later value is ignored, so the earlier valid one stays.
    assert must_parse("a=1; Max-Age=5; Max-Age=abc").expires == NOW + 5


def test_parse_oversized_attribute_value_is_ignored() -> None:
    c = must_parse("a=1; Path=/" + "p" * 1100, "http://www.example.com/dir/page")
    assert c.path == "/dir"


# -- domain attribute (§5.2.3, §5.3 steps 4-6) -----------------------------------------------------


def test_domain_equal_to_host_makes_domain_cookie() -> None:
    c = must_parse("a=1; Domain=www.example.com")
    assert c.domain == "www.example.com" and not c.host_only


def test_domain_parent_is_accepted_leading_dot_and_case_dropped() -> None:
    for attr in ("example.com", ".example.com", ".EXAMPLE.Com", "  example.com "):
        c = must_parse(f"a=1; Domain={attr}")
        assert c.domain == "example.com" and not c.host_only, attr


@pytest.mark.parametrize(
    "attr",
    ["other.com", "badexample.com", "ample.com", "sub.www.example.com", "example.com.", "w.example.com"],
)
def test_domain_not_covering_host_is_rejected(attr: str) -> None:
    assert parse(f"a=1; Domain={attr}") is None


def test_domain_single_label_is_treated_as_public_suffix() -> None:
    assert parse("a=1; Domain=com") is None
    assert parse("a=1; Domain=.com") is None
    assert parse("a=1; Domain=localhost", "http://app.localhost/") is None


def test_domain_single_label_equal_to_host_becomes_host_only() -> None:
    c = must_parse("a=1; Domain=localhost", "http://localhost:8080/")
    assert c.domain == "localhost" and c.host_only


def test_domain_empty_attribute_is_ignored() -> None:
    for header in ("a=1; Domain=", "a=1; Domain=.", "a=1; Domain"):
        c = must_parse(header)
        assert c.domain == "www.example.com" and c.host_only, header


def test_domain_idna() -> None:
    c = must_parse("a=1; Domain=bücher.example", "http://www.bücher.example/")
    assert c.domain == "xn--bcher-kva.example" and not c.host_only


# -- IP hosts --------------------------------------------------------------------------------------


def test_ip_host_cookie_is_host_only() -> None:
    c = must_parse("a=1", "http://127.0.0.1:8080/")
    assert c.domain == "127.0.0.1" and c.host_only


def test_ip_host_domain_equal_to_address_is_host_only() -> None:
    c = must_parse("a=1; Domain=127.0.0.1", "http://127.0.0.1/")
    assert c.domain == "127.0.0.1" and c.host_only


@pytest.mark.parametrize("attr", ["0.0.1", "0.1", "1", "127.0.0.2", "localhost"])
def test_ip_host_other_domain_is_rejected(attr: str) -> None:
    assert parse(f"a=1; Domain={attr}", "http://127.0.0.1/") is None


def test_ipv6_host() -> None:
    c = must_parse("a=1", "http://[::1]:9000/x")
    assert c.domain == "::1" and c.host_only
    assert must_parse("a=1; Domain=[::1]", "http://[::1]/").host_only
    assert parse("a=1; Domain=example.com", "http://[::1]/") is None


def test_name_host_cannot_set_cookie_for_an_address() -> None:
    assert parse("a=1; Domain=127.0.0.1", "http://1.127.0.0.1/") is None


def test_ip_host_never_domain_matches_a_suffix() -> None:
    assert not domain_match("10.0.0.1", "0.0.1")
    assert not domain_match("::1", ":1")
    assert domain_match("10.0.0.1", "10.0.0.1")


# -- path (§5.1.4) ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url_path", "expected"),
    [("", "/"), ("x", "/"), ("/", "/"), ("/a", "/"), ("/a/", "/a"), ("/a/b", "/a"), ("/a/b/c", "/a/b")],
)
def test_default_path(url_path: str, expected: str) -> None:
    assert default_path(url_path) == expected


def test_path_attribute_invalid_falls_back_to_default() -> None:
    url = "http://www.example.com/docs/page.html"
    assert must_parse("a=1; Path=", url).path == "/docs"
    assert must_parse("a=1; Path=relative", url).path == "/docs"
    assert must_parse("a=1", url).path == "/docs"
    assert must_parse("a=1; Path=/other", url).path == "/other"


@pytest.mark.parametrize(
    ("request_path", "cookie_path", "expected"),
    [
        ("/", "/", True),
        ("/foo", "/", True),
        ("/foo", "/foo", True),
        ("/foo/", "/foo", True),
        ("/foo/bar", "/foo", True),
        ("/foo/bar", "/foo/", True),
        ("/foobar", "/foo", False),
        ("/fo", "/foo", False),
        ("/", "/foo", False),
        ("/Foo", "/foo", False),
        ("/foo", "/foo/", False),
    ],
)
def test_path_match(request_path: str, cookie_path: str, expected: bool) -> None:
    assert path_match(request_path, cookie_path) is expected


@pytest.mark.parametrize(
    ("host", "domain", "expected"),
    [
        ("example.com", "example.com", True),
        ("www.example.com", "example.com", True),
        ("a.b.example.com", "example.com", True),
        ("badexample.com", "example.com", False),
        ("example.com", "www.example.com", False),
        ("example.org", "example.com", False),
    ],
)
def test_domain_match(host: str, domain: str, expected: bool) -> None:
    assert domain_match(host, domain) is expected


# -- expiry: Max-Age and Expires -------------------------------------------------------------------


def test_max_age_positive() -> None:
    assert must_parse("a=1; Max-Age=3600").expires == NOW + 3600


@pytest.mark.parametrize("value", ["0", "-1", "-999999", "-0", "00"])
def test_max_age_zero_or_negative_is_earliest_time(value: str) -> None:
    c = must_parse(f"a=1; Max-Age={value}")
    assert c.expires == EARLIEST_EXPIRES and c.is_expired(NOW)


@pytest.mark.parametrize("value", ["", "abc", "1.5", "+5", "5s", " - 5", "-", "１２", "1e3"])
def test_max_age_invalid_is_ignored(value: str) -> None:
    assert must_parse(f"a=1; Max-Age={value}").expires is None


def test_max_age_wins_over_expires_in_either_order() -> None:
    expires = "Expires=Wed, 09 Jun 2021 10:18:14 GMT"
    assert must_parse(f"a=1; {expires}; Max-Age=60").expires == NOW + 60
    assert must_parse(f"a=1; Max-Age=60; {expires}").expires == NOW + 60
    # An invalid Max-Age does not hide a valid Expires.
    assert must_parse(f"a=1; Max-Age=x; {expires}").expires == gmt(2021, 6, 9, 10, 18, 14)


def test_max_age_huge_is_capped() -> None:
    assert must_parse("a=1; Max-Age=99999999999999999999999999").expires == MAX_EXPIRES


def test_max_age_uses_current_time_by_default() -> None:
    before = time.time()
    c = parse_set_cookie("a=1; Max-Age=100", HTTP)
    assert c is not None and c.expires is not None
    assert before + 100 <= c.expires <= time.time() + 100


def test_expires_sets_absolute_time() -> None:
    c = must_parse("a=1; Expires=Sun, 06 Nov 2044 08:49:37 GMT")
    assert c.expires == gmt(2044, 11, 6, 8, 49, 37) and c.persistent


def test_expires_invalid_is_ignored() -> None:
    assert must_parse("a=1; Expires=tomorrow").expires is None
    assert must_parse("a=1; Expires=").expires is None


def test_expires_far_future_is_capped() -> None:
    assert must_parse("a=1; Expires=Fri, 31 Dec 9999 23:59:59 GMT").expires == MAX_EXPIRES


def test_expires_in_the_past_parses() -> None:
    c = must_parse("a=1; Expires=Thu, 01 Jan 1970 00:00:00 GMT")
    assert c.expires == 0.0 and c.is_expired(NOW)


# -- dates (§5.1.1) --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "Sun, 06 Nov 1994 08:49:37 GMT",  # RFC 1123
        "Sunday, 06-Nov-94 08:49:37 GMT",  # RFC 850
        "Sun Nov  6 08:49:37 1994",  # asctime
        "Sun, 06-Nov-1994 08:49:37 GMT",  # Netscape
        "06 Nov 1994 08:49:37",  # no weekday, no zone
        "Sun, 6 November 1994 08:49:37 UTC",
        "sun, 06 nov 1994 08:49:37 gmt",
        "Sun,06-Nov-1994 08:49:37GMT",
        "1994 Nov 06 08:49:37",
        "Sun, 06 Nov 1994 8:49:37 GMT",
        "Sun, 06 Nov 1994 08:49:37 +0000",
    ],
)
def test_date_formats(text: str) -> None:
    assert parse_cookie_date(text) == gmt(1994, 11, 6, 8, 49, 37)


@pytest.mark.parametrize(
    ("year_text", "year"),
    [("70", 1970), ("99", 1999), ("00", 2000), ("69", 2069), ("1601", 1601), ("2038", 2038), ("0099", 1999)],
)
def test_date_two_digit_years(year_text: str, year: int) -> None:
    assert parse_cookie_date(f"01 Jan {year_text} 00:00:00") == gmt(year, 1, 1)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "garbage",
        "Sun, 06 Nov 1994",  # no time
        "Sun, Nov 1994 08:49:37 GMT",  # no day
        "Sun, 06 1994 08:49:37 GMT",  # no month
        "Sun, 06 Nov 08:49:37 GMT",  # no year
        "Sun, 32 Nov 1994 08:49:37 GMT",
        "Sun, 00 Nov 1994 08:49:37 GMT",
        "Sun, 31 Nov 1994 08:49:37 GMT",  # 31 November does not exist
        "Sun, 29 Feb 2023 08:49:37 GMT",  # not a leap year
        "Sun, 06 Nov 1600 08:49:37 GMT",
        "Sun, 06 Nov 1994 24:00:00 GMT",
        "Sun, 06 Nov 1994 08:60:00 GMT",
        "Sun, 06 Nov 1994 08:49:60 GMT",
        "Sun, 06 Nov 1994 123:49:37 GMT",
        "Sun, 06 Nov 19945 08:49:37 GMT",
    ],
)
def test_date_invalid(text: str) -> None:
    assert parse_cookie_date(text) is None


def test_date_leap_day() -> None:
    assert parse_cookie_date("Thu, 29 Feb 2024 12:00:00 GMT") == gmt(2024, 2, 29, 12)


def test_date_agrees_with_stdlib_on_random_dates() -> None:
    # Reference implementation: email.utils formats RFC 1123 dates; time.strftime gives the others.
    rng = random.Random(6265)
    for _ in range(300):
        stamp = float(rng.randrange(-2_000_000_000, 7_000_000_000))
        tm = time.gmtime(stamp)
        forms = [
            email.utils.formatdate(stamp, usegmt=True),
            time.strftime("%A, %d-%b-%y %H:%M:%S GMT", tm) if 1970 <= tm.tm_year <= 2069 else None,
            time.strftime("%a %b %d %H:%M:%S %Y", tm),
        ]
        for text in forms:
            if text is not None:
                assert parse_cookie_date(text) == stamp, text


# -- Cookie ----------------------------------------------------------------------------------------


def test_cookie_is_immutable_and_hashable() -> None:
    c = Cookie("a", "1", "example.com")
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.value = "2"  # type: ignore[misc]
    assert c == Cookie("a", "1", "example.com")
    assert len({c, Cookie("a", "1", "example.com"), Cookie("a", "2", "example.com")}) == 2
    assert pickle.loads(pickle.dumps(c)) == c


@pytest.mark.parametrize(
    "kwargs",
    [
        {"name": "", "value": "1", "domain": "example.com"},
        {"name": "a;b", "value": "1", "domain": "example.com"},
        {"name": "a=b", "value": "1", "domain": "example.com"},
        {"name": " a", "value": "1", "domain": "example.com"},
        {"name": "a", "value": "1\r\nX-Evil: 1", "domain": "example.com"},
        {"name": "a", "value": "1;b=2", "domain": "example.com"},
        {"name": "a", "value": "x\u2028y", "domain": "example.com"},  # not latin-1: no header can carry it
        {"name": "a", "value": "\u20ac", "domain": "example.com"},
        {"name": "\u00e9\u2028", "value": "1", "domain": "example.com"},
        {"name": "a", "value": "x\x7fy", "domain": "example.com"},
        {"name": "a", "value": "x\ty", "domain": "example.com"},
        {"name": "a", "value": "1", "domain": ""},
        {"name": "a", "value": "1", "domain": "Example.com"},
        {"name": "a", "value": "1", "domain": "example.com", "path": "relative"},
    ],
)
def test_cookie_rejects_invalid_fields(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        Cookie(**kwargs)


def test_cookie_latin1_value_is_accepted() -> None:
    # what parse_set_cookie makes of the bytes a server sent (one character per byte) goes back as is
    assert Cookie("a", "caf\u00e9", "example.com").value == "caf\u00e9"


class _Impostor:
    """What a hostile jar may hand back: any object with ``name`` and ``value``."""

    def __init__(self, name: Any, value: Any) -> None:
        self.name = name
        self.value = value


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("a", "1\r\nX-Evil: 1"),
        ("a", "1\nX-Evil: 1"),
        ("a", "x\u2028y"),
        ("a", "1; b=2"),
        ("a\r\nX-Evil", "1"),
        ("a=b", "1"),
        ("", "1"),
        ("a", 1),
        (None, "1"),
    ],
)
def test_cookie_header_rejects_what_cannot_be_sent(name: Any, value: Any) -> None:
    with pytest.raises((ValueError, TypeError)) as info:
        cookie_header([Cookie("ok", "1", "example.com"), _Impostor(name, value)])  # type: ignore[list-item]
    if isinstance(value, str) and "\n" in value:
        assert "X-Evil" not in str(info.value)  # a cookie value is a credential: never quoted


def test_cookie_header_rejects_a_cookie_changed_after_construction() -> None:
    cookie = Cookie("sid", "1", "example.com")
    object.__setattr__(cookie, "value", "1\r\nX-Evil: 1")
    with pytest.raises(ValueError, match="sid"):
        cookie_header([cookie])


def test_cookie_repr_hides_value() -> None:
    text = repr(Cookie("sid", "s3cr3t-token", "example.com", secure=True))
    assert "s3cr3t" not in text and "sid" in text and "Secure" in text


def test_cookie_matches_secure_only_on_https() -> None:
    c = must_parse("a=1; Secure", HTTPS)
    assert c.matches(HTTPS, now=NOW)
    assert not c.matches(HTTP, now=NOW)
    assert must_parse("a=1", HTTP).matches(HTTPS, now=NOW)


def test_cookie_matches_host_only_versus_domain() -> None:
    host_only = must_parse("a=1", "http://example.com/")
    domain = must_parse("a=1; Domain=example.com", "http://example.com/")
    for c in (host_only, domain):
        assert c.matches(URL("http://example.com/"), now=NOW)
        assert not c.matches(URL("http://badexample.com/"), now=NOW)
        assert not c.matches(URL("http://example.org/"), now=NOW)
    assert not host_only.matches(URL("http://www.example.com/"), now=NOW)
    assert domain.matches(URL("http://www.example.com/"), now=NOW)
    assert domain.matches("http://a.b.example.com/", now=NOW)


def test_cookie_matches_path_and_expiry() -> None:
    c = must_parse("a=1; Path=/app; Max-Age=10")
    assert c.matches(URL("http://www.example.com/app/x"), now=NOW)
    assert not c.matches(URL("http://www.example.com/apple"), now=NOW)
    assert c.matches(URL("http://www.example.com/app"), now=NOW + 9.9)
    assert not c.matches(URL("http://www.example.com/app"), now=NOW + 10)


def test_cookie_matches_port_and_scheme_do_not_isolate() -> None:
    # RFC 6265 §8.5: cookies do not provide isolation by port (or by scheme, without Secure).
    c = must_parse("a=1", "http://www.example.com:8080/")
    assert c.matches(URL("https://www.example.com:9443/"), now=NOW)


def test_cookie_header_format() -> None:
    cookies = [Cookie("n1", "v1", "example.com"), Cookie("n2", "v2", "example.com")]
    assert cookie_header(cookies) == "n1=v1; n2=v2"
    assert cookie_header([]) == ""
    assert cookie_header(iter(cookies[:1])) == "n1=v1"


# -- jars: protocol and NO_COOKIES -----------------------------------------------------------------


def test_no_cookies_stores_nothing() -> None:
    NO_COOKIES.save_from_response(HTTP, [must_parse("a=1")])
    assert NO_COOKIES.load_for(HTTP) == []
    assert repr(NO_COOKIES) == "NO_COOKIES"
    assert pickle.loads(pickle.dumps(NO_COOKIES)) is NO_COOKIES


def test_jar_protocol_is_structural() -> None:
    class ListJar:
        def __init__(self) -> None:
            self.saved: list[Cookie] = []

        def load_for(self, url: URL) -> list[Cookie]:
            return list(self.saved)

        def save_from_response(self, url: URL, cookies: list[Cookie]) -> None:
            self.saved.extend(cookies)

    assert isinstance(ListJar(), CookieJar)
    assert isinstance(MemoryCookieJar(), CookieJar)
    assert isinstance(NO_COOKIES, CookieJar)
    assert not isinstance(object(), CookieJar)


# -- MemoryCookieJar -------------------------------------------------------------------------------


def save(jar: MemoryCookieJar, url: URL | str, *headers: str, now: float = NOW) -> None:
    url = URL(url) if isinstance(url, str) else url
    cookies = [c for c in (parse_set_cookie(h, url, now=now) for h in headers) if c is not None]
    jar.save_from_response(url, cookies, now=now)


def load(jar: MemoryCookieJar, url: URL | str, now: float = NOW) -> list[Cookie]:
    return jar.load_for(URL(url) if isinstance(url, str) else url, now=now)


def test_jar_empty() -> None:
    jar = MemoryCookieJar()
    assert load(jar, HTTP) == [] and len(jar) == 0 and list(jar) == []
    jar.save_from_response(HTTP, [])
    assert len(jar) == 0


def test_jar_stores_and_returns() -> None:
    jar = MemoryCookieJar()
    save(jar, HTTP, "a=1", "b=2")
    assert cookie_header(load(jar, HTTP)) == "a=1; b=2"
    assert len(jar) == 2
    assert names(list(jar)) == ["a", "b"]


def test_jar_replaces_same_name_domain_path_keeping_creation_order() -> None:
    jar = MemoryCookieJar()
    save(jar, HTTP, "a=1", "b=2")
    save(jar, HTTP, "a=3")
    assert cookie_header(load(jar, HTTP)) == "a=3; b=2"
    assert len(jar) == 2


def test_jar_same_name_different_path_or_domain_coexist() -> None:
    jar = MemoryCookieJar()
    save(jar, HTTP, "a=root; Path=/", "a=app; Path=/app", "a=dom; Domain=example.com")
    assert len(jar) == 3
    assert cookie_header(load(jar, "http://www.example.com/app/x")) == "a=app; a=root; a=dom"
    assert cookie_header(load(jar, "http://www.example.com/")) == "a=root; a=dom"


def test_jar_host_only_and_domain_cookie_with_same_domain_replace_each_other() -> None:
    # §5.3 step 11: the identity is (name, domain, path); the host-only flag is not part of it.
    jar = MemoryCookieJar()
    save(jar, "http://example.com/", "a=1")
    save(jar, "http://example.com/", "a=2; Domain=example.com")
    assert len(jar) == 1
    assert cookie_header(load(jar, "http://www.example.com/")) == "a=2"


def test_jar_max_age_zero_deletes() -> None:
    jar = MemoryCookieJar()
    save(jar, HTTP, "a=1", "b=2")
    save(jar, HTTP, "a=gone; Max-Age=0")
    assert cookie_header(load(jar, HTTP)) == "b=2"
    assert len(jar) == 1


def test_jar_negative_max_age_deletes() -> None:
    jar = MemoryCookieJar()
    save(jar, HTTP, "a=1")
    save(jar, HTTP, "a=1; Max-Age=-1")
    assert len(jar) == 0 and load(jar, HTTP) == []


def test_jar_expires_in_the_past_deletes() -> None:
    jar = MemoryCookieJar()
    save(jar, HTTP, "a=1; Path=/p")
    save(jar, HTTP, "a=1; Path=/p; Expires=Thu, 01 Jan 1970 00:00:01 GMT")
    assert len(jar) == 0


def test_jar_delete_needs_same_domain_and_path() -> None:
    jar = MemoryCookieJar()
    save(jar, HTTP, "a=1; Path=/p")
    save(jar, HTTP, "a=1; Path=/q; Max-Age=0")
    save(jar, HTTP, "a=1; Path=/p; Domain=example.com; Max-Age=0")
    assert len(jar) == 1


def test_jar_expired_cookie_is_not_stored() -> None:
    jar = MemoryCookieJar()
    save(jar, HTTP, "a=1; Max-Age=0", "b=2; Expires=Sun, 06 Nov 1994 08:49:37 GMT")
    assert len(jar) == 0 and load(jar, HTTP) == []


def test_jar_cookie_expires_later() -> None:
    jar = MemoryCookieJar()
    save(jar, HTTP, "a=1; Max-Age=10", "b=2")
    assert names(load(jar, HTTP, now=NOW + 9)) == ["a", "b"]
    assert names(load(jar, HTTP, now=NOW + 10)) == ["b"]
    # The lookup dropped the expired cookie, so it stays gone even for an earlier "now".
    assert names(load(jar, HTTP, now=NOW)) == ["b"]


def test_jar_len_and_iter_skip_expired() -> None:
    jar = MemoryCookieJar()
    past = time.time() - 1000
    save(jar, HTTP, "old=1; Max-Age=10", "new=2; Max-Age=100000", now=past)
    assert names(list(jar)) == ["new"] and len(jar) == 1


def test_jar_ordering_longest_path_then_earliest_creation() -> None:
    jar = MemoryCookieJar()
    save(jar, HTTP, "c=1; Path=/", "b=1; Path=/a/b", "a=1; Path=/a")
    save(jar, HTTP, "d=1; Path=/a/b", "e=1; Path=/")
    save(jar, HTTP, "c=2; Path=/")  # replacement keeps c's place before e
    assert cookie_header(load(jar, "http://www.example.com/a/b/c")) == "b=1; d=1; a=1; c=2; e=1"


def test_jar_secure_only_on_https() -> None:
    jar = MemoryCookieJar()
    save(jar, HTTPS, "s=1; Secure", "p=2")
    assert names(load(jar, HTTPS)) == ["s", "p"]
    assert names(load(jar, HTTP)) == ["p"]


def test_jar_domain_cookie_goes_to_subdomains_host_only_does_not() -> None:
    jar = MemoryCookieJar()
    save(jar, "http://example.com/", "host=1", "dom=2; Domain=example.com")
    assert names(load(jar, "http://example.com/")) == ["host", "dom"]
    assert names(load(jar, "http://www.example.com/")) == ["dom"]
    assert names(load(jar, "http://a.b.example.com/")) == ["dom"]
    assert load(jar, "http://badexample.com/") == []
    assert load(jar, "http://com/") == []


def test_jar_subdomain_cookie_does_not_go_to_parent() -> None:
    jar = MemoryCookieJar()
    save(jar, "http://www.example.com/", "a=1", "b=2; Domain=www.example.com")
    assert load(jar, "http://example.com/") == []
    assert names(load(jar, "http://x.www.example.com/")) == ["b"]


def test_jar_path_matching() -> None:
    jar = MemoryCookieJar()
    save(jar, HTTP, "a=1; Path=/app")
    assert names(load(jar, "http://www.example.com/app")) == ["a"]
    assert names(load(jar, "http://www.example.com/app/deep/x")) == ["a"]
    assert load(jar, "http://www.example.com/apple") == []
    assert load(jar, "http://www.example.com/") == []


def test_jar_ip_hosts() -> None:
    jar = MemoryCookieJar()
    save(jar, "http://127.0.0.1:8080/", "a=1", "b=2; Domain=127.0.0.1", "c=3; Domain=0.0.1")
    assert names(load(jar, "http://127.0.0.1:9090/")) == ["a", "b"]
    assert load(jar, "http://127.0.0.2/") == []
    assert load(jar, "http://x.127.0.0.1/") == []
    save(jar, "http://[::1]/", "v6=1")
    assert names(load(jar, "http://[::1]/")) == ["v6"]
    assert names(load(jar, "http://127.0.0.1/")) == ["a", "b"]


def test_jar_ignores_cookies_for_another_host() -> None:
    # The Bridge only passes cookies parsed for this URL; a jar still refuses foreign ones.
    jar = MemoryCookieJar()
    jar.save_from_response(
        HTTP,
        [
            Cookie("a", "1", "evil.com"),
            Cookie("b", "1", "example.com", host_only=True),
            Cookie("c", "1", "example.com", host_only=False),
            Cookie("d", "1", "www.example.com"),
            Cookie("e", "1", "com", host_only=False),
        ],
        now=NOW,
    )
    assert names(list(jar)) == ["c", "d"]


def test_jar_clear() -> None:
    jar = MemoryCookieJar()
    save(jar, HTTP, "a=1", "b=2")
    jar.clear()
    assert len(jar) == 0 and load(jar, HTTP) == []
    save(jar, HTTP, "c=3")
    assert names(load(jar, HTTP)) == ["c"]


def test_jar_session_cookies_never_expire() -> None:
    jar = MemoryCookieJar()
    save(jar, HTTP, "a=1")
    assert names(load(jar, HTTP, now=MAX_EXPIRES + 1)) == ["a"]


def test_jar_per_domain_limit_evicts_least_recently_used() -> None:
    jar = MemoryCookieJar(max_cookies_per_domain=3)
    save(jar, HTTP, "a=1", "b=2", "c=3")
    save(jar, HTTP, "b=22")  # b is now the most recently used
    save(jar, HTTP, "d=4")  # a is the least recently used
    assert names(load(jar, HTTP)) == ["b", "c", "d"]
    save(jar, "http://other.example/", "x=1")  # another domain has its own budget
    assert len(jar) == 4


def test_jar_per_domain_limit_evicts_expired_first() -> None:
    jar = MemoryCookieJar(max_cookies_per_domain=2)
    save(jar, HTTP, "short=1; Max-Age=5", "keep=2")
    save(jar, HTTP, "new=3", now=NOW + 10)
    assert names(load(jar, HTTP, now=NOW + 10)) == ["keep", "new"]


def test_jar_total_limit() -> None:
    jar = MemoryCookieJar(max_cookies=20)
    for i in range(50):
        save(jar, f"http://host{i}.example/", f"c{i}=1")
    assert 1 <= len(jar) <= 20
    assert names(load(jar, "http://host49.example/")) == ["c49"]
    assert load(jar, "http://host0.example/") == []


def test_jar_rejects_bad_limits() -> None:
    with pytest.raises(ValueError):
        MemoryCookieJar(max_cookies=0)
    with pytest.raises(ValueError):
        MemoryCookieJar(max_cookies_per_domain=0)


def test_jar_uses_current_time_by_default() -> None:
    jar = MemoryCookieJar()
    url = URL("http://example.com/")
    jar.save_from_response(url, [c for c in [parse_set_cookie("a=1; Max-Age=1000", url)] if c])
    jar.save_from_response(url, [c for c in [parse_set_cookie("b=1; Max-Age=0", url)] if c])
    assert names(jar.load_for(url)) == ["a"]
    assert "1 cookies" in repr(jar)


def test_jar_thread_safety() -> None:
    jar = MemoryCookieJar(max_cookies_per_domain=5000, max_cookies=100_000)
    errors: list[BaseException] = []

    def worker(n: int) -> None:
        try:
            url = URL(f"http://h{n % 3}.example.com/")
            for i in range(200):
                save(jar, url, f"w{n}_{i}=1; Domain=example.com", f"shared=1; Max-Age={i % 2}")
                load(jar, url)
                len(jar)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert not errors
    assert not any(t.is_alive() for t in threads)
    cookies = load(jar, "http://x.example.com/")
    assert sum(1 for c in cookies if c.name.startswith("w")) == 8 * 200
    assert len(jar) == len({(c.name, c.domain, c.path) for c in jar})


# -- round trip over a real loopback socket --------------------------------------------------------


class _CookieHandler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        body = (self.headers.get("Cookie") or "").encode()
        self.send_response(200)
        if self.path == "/login":
            self.send_header("Set-Cookie", "sid=abc; Path=/; HttpOnly")
            self.send_header("Set-Cookie", "pref=dark; Max-Age=3600")
            self.send_header("Set-Cookie", "evil=1; Domain=example.com")
            self.send_header("Set-Cookie", "tls=1; Secure")
        elif self.path == "/logout":
            self.send_header("Set-Cookie", "sid=; Path=/; Max-Age=0")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


def test_jar_round_trip_over_loopback() -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _CookieHandler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    jar = MemoryCookieJar()
    port = server.server_address[1]

    def get(path: str) -> str:
        url = URL(f"http://127.0.0.1:{port}{path}")
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        try:
            cookies = jar.load_for(url)
            headers = {"Cookie": cookie_header(cookies)} if cookies else {}
            conn.request("GET", url.target, headers=headers)
            response = conn.getresponse()
            body = response.read().decode()
            parsed = [parse_set_cookie(v, url) for v in response.headers.get_all("Set-Cookie") or []]
            valid = [c for c in parsed if c is not None]
            if valid:
                jar.save_from_response(url, valid)
            return body
        finally:
            conn.close()

    try:
        assert get("/login") == ""
        assert get("/account/page") == "sid=abc; pref=dark"
        assert get("/logout") == "sid=abc; pref=dark"
        assert get("/account/page") == "pref=dark"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
