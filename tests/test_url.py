"""URL: parsing, default ports, IDNA, IPv6 literals, resolution, strict rejection of bad URLs."""

from __future__ import annotations

import pickle

import pytest

import fastnet
from tests.support.wire import CRAWLED_TARGETS


def test_url_parse_parts() -> None:
    u = fastnet.URL("http://user:pa%20ss@Example.COM:8080/a/b?x=1&y=2#frag")
    assert u.scheme == "http"
    assert u.username == "user" and u.password == "pa ss"
    assert u.host == "example.com" and u.port == 8080
    assert u.path == "/a/b" and u.query == "x=1&y=2" and u.fragment == "frag"
    assert u.target == "/a/b?x=1&y=2"
    assert u.host_header == "example.com:8080"
    assert u.authority == "example.com:8080"
    assert u.origin == ("http", "example.com", 8080)


@pytest.mark.parametrize(
    ("text", "port", "host_header"),
    [
        ("http://h/", 80, "h"),
        ("https://h/", 443, "h"),
        ("http://h:80/", 80, "h"),
        ("https://h:8443/", 8443, "h:8443"),
        ("HTTP://h", 80, "h"),
    ],
)
def test_url_default_ports(text: str, port: int, host_header: str) -> None:
    u = fastnet.URL(text)
    assert u.port == port and u.host_header == host_header and u.default_port in (80, 443)


def test_url_empty_path_is_slash() -> None:
    assert fastnet.URL("http://h").path == "/"
    assert fastnet.URL("http://h?q").target == "/?q"


def test_url_is_https() -> None:
    assert fastnet.URL("https://h/").is_https and not fastnet.URL("http://h/").is_https


def test_url_ipv6_literal() -> None:
    u = fastnet.URL("http://[::1]:8080/p")
    assert u.host == "::1" and u.host_literal == "[::1]" and u.port == 8080
    assert u.host_header == "[::1]:8080" and u.authority == "[::1]:8080"
    assert u.is_ip_literal
    assert str(u) == "http://[::1]:8080/p"
    assert fastnet.URL("http://[0:0:0:0:0:0:0:1]/").host == "::1"


def test_url_ipv4_literal() -> None:
    assert fastnet.URL("http://127.0.0.1/").is_ip_literal
    assert not fastnet.URL("http://example.com/").is_ip_literal


def test_url_idna_host() -> None:
    u = fastnet.URL("http://bücher.example/")
    assert u.host == "xn--bcher-kva.example"
    assert u.host_header == "xn--bcher-kva.example"


def test_url_trailing_dot_and_case_normalised() -> None:
    assert fastnet.URL("http://EXAMPLE.com./").host == "example.com"


def test_url_path_and_query_percent_encoded() -> None:
    u = fastnet.URL("http://h/a b/ü?q=a b")
    assert u.path == "/a%20b/%C3%BC" and u.query == "q=a%20b"
    assert fastnet.URL("http://h/a%20b").path == "/a%20b"  # not encoded twice


@pytest.mark.parametrize("found, target", CRAWLED_TARGETS)
def test_url_target_encoded_only_where_whatwg_does(found: str, target: str) -> None:
    u = fastnet.URL("http://h" + found)
    assert u.target == target
    assert u.target == (u.path if u.query is None else f"{u.path}?{u.query}")
    text = str(u)
    assert text.startswith("http://h" + target) and text.isascii()
    assert fastnet.URL(text) == u and fastnet.URL(text).target == target  # encoding it again changes nothing
    if found.startswith("/"):  # the same as a Location header
        assert fastnet.URL("http://h/dir/page").resolve(found).target == target


def test_url_fragment_encoded_as_whatwg_does_and_backslash_kept_after_the_path() -> None:
    u = fastnet.URL("http:\\\\H\\a\\b?q=\\x#f r`ag\\")
    assert (u.host, u.path, u.query, u.fragment) == ("h", "/a/b", "q=\\x", "f%20r%60ag\\")
    assert str(u) == "http://h/a/b?q=\\x#f%20r%60ag\\" and u.target == "/a/b?q=\\x"
    assert fastnet.URL("http://h/d/p").resolve("..\\x\\y?z=\\w#\\v").target == "/x/y?z=\\w"
    assert fastnet.URL("http://h/p?a=1").replace(query="b=[1]|2 3").target == "/p?b=[1]|2%203"


def test_url_dot_segments_removed() -> None:
    assert fastnet.URL("http://h/a/b/../c/./d").path == "/a/c/d"


def test_url_str_roundtrip_and_equality() -> None:
    text = "http://h:8080/a?b=c#d"
    u = fastnet.URL(text)
    assert str(u) == text and fastnet.URL(str(u)) == u
    assert u == text and hash(u) == hash(fastnet.URL(text))
    assert fastnet.URL("http://h:80/") == fastnet.URL("http://h/")
    assert u != "not a url"


def test_url_immutable_and_replace() -> None:
    u = fastnet.URL("http://h/a?x=1")
    with pytest.raises(AttributeError):
        u.host = "other"
    v = u.replace(host="other", path="/b")
    assert str(v) == "http://other/b?x=1" and str(u) == "http://h/a?x=1"
    assert u.replace(scheme="https").port == 443
    with pytest.raises(TypeError):
        u.replace(nope=1)  # type: ignore[call-arg]


def test_url_accepts_url_instance() -> None:
    u = fastnet.URL("http://h/")
    assert fastnet.URL(u) is u and fastnet.URL.parse(u) is u


def test_url_redacted_hides_credentials_and_query() -> None:
    u = fastnet.URL("http://user:secret@h/p?token=abc")
    assert "secret" not in u.redacted() and "abc" not in u.redacted()
    assert u.redacted() == "http://h/p"


def test_url_pickle() -> None:
    u = fastnet.URL("https://h:8443/p?q")
    assert pickle.loads(pickle.dumps(u)) == u


@pytest.mark.parametrize(
    ("ref", "expected"),
    [
        ("g", "http://a/b/c/g"),
        ("./g", "http://a/b/c/g"),
        ("g/", "http://a/b/c/g/"),
        ("/g", "http://a/g"),
        ("//g", "http://g/"),
        ("?y", "http://a/b/c/d;p?y"),
        ("g?y", "http://a/b/c/g?y"),
        ("#s", "http://a/b/c/d;p?q#s"),
        ("", "http://a/b/c/d;p?q"),
        ("..", "http://a/b/"),
        ("../g", "http://a/b/g"),
        ("../../g", "http://a/g"),
        ("../../../g", "http://a/g"),
        ("https://other:8443/x", "https://other:8443/x"),
    ],
)
def test_url_resolve_rfc3986_examples(ref: str, expected: str) -> None:
    base = fastnet.URL("http://a/b/c/d;p?q")
    assert base.resolve(ref) == fastnet.URL(expected)


def test_url_resolve_rejects_unknown_scheme() -> None:
    with pytest.raises(ValueError, match="scheme"):
        fastnet.URL("http://a/").resolve("ftp://x/")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("ftp://h/", "scheme"),
        ("file:///etc/passwd", "scheme"),
        ("h/path", "scheme"),
        ("", "scheme"),
        ("http:/h", "//"),
        ("http://", "host"),
        ("http:///path", "host"),
        ("http://h:99999/", "port"),
        ("http://h:0/", "port"),
        ("http://h:abc/", "port"),
        ("http://[::1/", "IPv6"),
        ("http://[zz::1]/", "IPv6"),
        ("http://[::1]x/", "IPv6"),
        ("http://h\r\nX-Injected: 1/", "control"),
        ("http://h/p\r\nX-Injected: 1", "control"),
        ("http://h/p?q=\n", "control"),
        ("http://h/\x00", "control"),
        ("http://a b/", "host"),
        ("http://a..b/", "host"),
        ("http://" + "a" * 64 + ".com/", "63"),
    ],
)
def test_url_bad_urls_raise_value_error_naming_the_problem(text: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        fastnet.URL(text)


def test_url_non_string_is_type_error() -> None:
    with pytest.raises(TypeError):
        fastnet.URL(b"http://h/")  # type: ignore[arg-type]


def test_url_repr_masks_the_password() -> None:
    u = fastnet.URL("http://alice:s3cret@h:8080/p?q=1#f")
    assert repr(u) == "URL('http://alice:***@h:8080/p?q=1#f')"
    assert "s3cret" not in repr(u) and str(u) == "http://alice:s3cret@h:8080/p?q=1#f"
    assert repr(fastnet.URL("http://alice@h/")) == "URL('http://alice@h/')"
    assert repr(fastnet.URL("http://h/")) == "URL('http://h/')"
    assert "s3cret" not in repr([u])  # what containers, logs and tracebacks show


@pytest.mark.parametrize(
    "text",
    [
        "http://alice:s3cret@h:99999/",
        "http://alice:s3cret@h:0/",
        "http://alice:s3cret@h:x/",
        "http://alice:s3cret@[::1/",
        "http://alice:s3cret@[zz::1]/",
        "http://alice:s3cret@/x",
        "http://alice:s3cret@a..b/",
        "http://alice:s3cret@h\x00/",
        "http://alice:s3\r\ncret@h/",
        "ftp://alice:s3cret@h/",
        "http:alice:s3cret@h/",
        "http://alice:s3c#ret@h/",  # an unencoded "#" in the password: the parser reads port "s3c"
        "http://alice:s3c/ret@h/",  # an unencoded "/": the parser reads port "s3c"
        "http://alice:s3c?ret@h/",
        "http://alice:" + "s3cret" * 60 + "@h:99999/",  # past the 200 characters a message shows
    ],
)
def test_url_value_errors_never_show_the_password(text: str) -> None:
    with pytest.raises(ValueError) as info:
        fastnet.URL(text)
    message = str(info.value)
    assert "s3c" not in message and "ret@" not in message


def test_url_resolve_errors_never_show_the_password() -> None:
    base = fastnet.URL("http://alice:s3cret@h/dir/")
    for reference in ("//bob:s3cret@h:99999/", "x\r\ny", "ftp://bob:s3cret@h/", "http://bob:s3cret@[::1/"):
        with pytest.raises(ValueError) as info:
            base.resolve(reference)
        assert "s3cret" not in str(info.value)


def test_url_mask_password() -> None:
    from fastnet.url import mask_password

    assert mask_password("http://alice:pw@h/") == "http://alice:***@h/"
    assert mask_password("http://alice@h/") == "http://alice@h/"
    assert mask_password("http://h/a@b") == "http://h/a@b"
    assert mask_password("socks5://u:p@127.0.0.1:1080") == "socks5://u:***@127.0.0.1:1080"
    assert mask_password("not a url") == "not a url"


def test_url_header_reference_percent_encodes_each_received_byte_once() -> None:
    from fastnet.url import header_reference

    raw = "/café?q=é".encode().decode("latin-1")  # what the parser makes of the raw UTF-8 bytes
    assert header_reference(raw) == "/caf%C3%A9?q=%C3%A9"
    assert header_reference("/caf\xe9") == "/caf%E9"  # a latin-1 byte stays that byte
    assert header_reference("/caf%C3%A9") == "/caf%C3%A9" and header_reference("/a b") == "/a b"
    assert header_reference("/\u20ac") == "/%E2%82%AC"  # no received byte: built in code, UTF-8
    assert fastnet.URL("http://h/").resolve(header_reference(raw)).target == "/caf%C3%A9?q=%C3%A9"
    host = "http://bücher.test/".encode().decode("latin-1")
    assert fastnet.URL("http://h/").resolve(header_reference(host)).host == "xn--bcher-kva.test"
