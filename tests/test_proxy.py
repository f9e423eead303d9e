from __future__ import annotations

import pickle

import pytest

import fastnet
from fastnet.proxy import NullProxySelector

# -- Proxy construction ----------------------------------------------------------------------------


def test_proxy_no_proxy_is_direct() -> None:
    direct = fastnet.Proxy.NO_PROXY
    assert direct.type is fastnet.ProxyType.DIRECT
    assert direct.host is None and direct.port is None and direct.address is None
    assert direct.is_direct and not direct.is_http and not direct.is_socks
    assert str(direct) == "DIRECT"
    assert fastnet.Proxy(fastnet.ProxyType.DIRECT) == direct
    assert hash(fastnet.Proxy(fastnet.ProxyType.DIRECT)) == hash(direct)
    assert direct.authorization is None


def test_proxy_http_fields() -> None:
    p = fastnet.Proxy.http("Proxy.Example.", 3128)
    assert p.type is fastnet.ProxyType.HTTP
    assert (p.host, p.port, p.tls, p.username, p.password) == ("proxy.example", 3128, False, None, None)
    assert p.socks_version is None and p.remote_dns is False
    assert p.is_http and str(p) == "http://proxy.example:3128"
    assert p.address == ("proxy.example", 3128)


def test_proxy_https_is_tls_to_the_proxy() -> None:
    p = fastnet.Proxy.https("10.0.0.1", 3129)
    assert p.type is fastnet.ProxyType.HTTP and p.tls
    assert str(p) == "https://10.0.0.1:3129"
    assert p != fastnet.Proxy.http("10.0.0.1", 3129)


def test_proxy_socks_defaults() -> None:
    p = fastnet.Proxy.socks("127.0.0.1", 1080)
    assert p.type is fastnet.ProxyType.SOCKS and p.socks_version == 5 and p.remote_dns
    assert str(p) == "socks5h://127.0.0.1:1080"
    assert str(fastnet.Proxy.socks("127.0.0.1", 1080, remote_dns=False)) == "socks5://127.0.0.1:1080"
    assert str(fastnet.Proxy.socks("127.0.0.1", 1080, version=4)) == "socks4a://127.0.0.1:1080"
    assert (
        str(fastnet.Proxy.socks("127.0.0.1", 1080, version=4, remote_dns=False)) == "socks4://127.0.0.1:1080"
    )


def test_proxy_ipv6_host_is_normalised_and_bracketed() -> None:
    p = fastnet.Proxy.http("[0:0::1]", 8080)
    assert p.host == "::1"
    assert str(p) == "http://[::1]:8080"
    assert p == fastnet.Proxy.http("::1", 8080)


def test_proxy_value_equality_and_hash() -> None:
    a = fastnet.Proxy.http("h", 1, "u", "p")
    b = fastnet.Proxy.http("h", 1, "u", "p")
    assert a == b and hash(a) == hash(b)
    assert a != fastnet.Proxy.http("h", 1, "u", "q")
    assert a != fastnet.Proxy.http("h", 2, "u", "p")
    assert len({a, b, fastnet.Proxy.NO_PROXY}) == 2
    assert a != "http://u:p@h:1"


def test_proxy_is_immutable() -> None:
    p = fastnet.Proxy.http("h", 1)
    with pytest.raises(AttributeError):
        p.port = 2
    with pytest.raises(AttributeError):
        del p.host


def test_proxy_pickles() -> None:
    p = fastnet.Proxy.socks("::1", 1080, username="u", password="p")
    assert pickle.loads(pickle.dumps(p)) == p
    assert pickle.loads(pickle.dumps(fastnet.Proxy.NO_PROXY)) is fastnet.Proxy.NO_PROXY


def test_proxy_authorization_basic() -> None:
    assert (
        fastnet.Proxy.http("h", 1, "Aladdin", "open sesame").authorization
        == "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ=="
    )
    assert fastnet.Proxy.http("h", 1, "bob").authorization == "Basic Ym9iOg=="
    assert fastnet.Proxy.http("h", 1, "jürgen", "pw").authorization == "Basic asO8cmdlbjpwdw=="  # UTF-8
    assert fastnet.Proxy.http("h", 1).authorization is None
    assert fastnet.Proxy.socks("h", 1, username="u", password="p").authorization is None


def test_proxy_str_and_repr_hide_the_password() -> None:
    p = fastnet.Proxy.http("h", 8080, "bob", "hunter2")
    assert str(p) == "http://bob@h:8080"
    assert "hunter2" not in repr(p) and "hunter2" not in str(p)
    assert repr(p) == "Proxy('http://bob:***@h:8080')"


@pytest.mark.parametrize(
    "make",
    [
        lambda: fastnet.Proxy(fastnet.ProxyType.DIRECT, "h", 1),
        lambda: fastnet.Proxy(fastnet.ProxyType.DIRECT, port=1),
        lambda: fastnet.Proxy(fastnet.ProxyType.DIRECT, username="u"),
        lambda: fastnet.Proxy(fastnet.ProxyType.DIRECT, tls=True),
        lambda: fastnet.Proxy.http("h", 0),
        lambda: fastnet.Proxy.http("h", 65536),
        lambda: fastnet.Proxy.http("h", -1),
        lambda: fastnet.Proxy.http("", 80),
        lambda: fastnet.Proxy.http("a b", 80),
        lambda: fastnet.Proxy.http("a/b", 80),
        lambda: fastnet.Proxy.http("[zz::1]", 80),
        lambda: fastnet.Proxy(fastnet.ProxyType.HTTP, "h"),
        lambda: fastnet.Proxy.http("h", 80, None, "pw"),
        lambda: fastnet.Proxy.http("h", 80, "a:b", "pw"),
        lambda: fastnet.Proxy.socks("h", 1080, version=6),
        lambda: fastnet.Proxy.socks("h", 1080, version=4, username="u", password="p"),
        lambda: fastnet.Proxy(fastnet.ProxyType.SOCKS, "h", 1080, tls=True),
        lambda: fastnet.Proxy.socks("h", 1080, username="x" * 256, password="p"),
        lambda: fastnet.Proxy(fastnet.ProxyType.HTTP, "h", 80, socks_version=5),
    ],
)
def test_proxy_invalid_combinations_raise_value_error(make) -> None:
    with pytest.raises(ValueError):
        make()


def test_proxy_type_errors() -> None:
    with pytest.raises(TypeError):
        fastnet.Proxy("HTTP", "h", 1)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        fastnet.Proxy.http("h", "80")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        fastnet.Proxy.http("h", True)
    with pytest.raises(ValueError):
        fastnet.Proxy.http(None, 80)  # type: ignore[arg-type]


def test_proxy_socks4_user_id() -> None:
    p = fastnet.Proxy.socks("h", 1080, version=4, username="ident")
    assert p.username == "ident" and p.password is None and p.socks_version == 4


# -- Proxy.from_url ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://h:3128", fastnet.Proxy.http("h", 3128)),
        ("h:3128", fastnet.Proxy.http("h", 3128)),
        ("h", fastnet.Proxy.http("h", 80)),
        ("http://h/", fastnet.Proxy.http("h", 80)),
        ("HTTPS://H", fastnet.Proxy.https("h", 443)),
        ("http://user:p%40ss@h:8080", fastnet.Proxy.http("h", 8080, "user", "p@ss")),
        ("http://user@h:8080", fastnet.Proxy.http("h", 8080, "user")),
        ("http://[::1]:3128", fastnet.Proxy.http("::1", 3128)),
        ("socks5://127.0.0.1", fastnet.Proxy.socks("127.0.0.1", 1080, remote_dns=False)),
        ("socks5h://127.0.0.1:9050", fastnet.Proxy.socks("127.0.0.1", 9050)),
        ("socks5h://u:p@[::1]:1", fastnet.Proxy.socks("::1", 1, username="u", password="p")),
        ("socks4://10.0.0.1", fastnet.Proxy.socks("10.0.0.1", 1080, version=4, remote_dns=False)),
        ("socks4a://id@10.0.0.1:1081", fastnet.Proxy.socks("10.0.0.1", 1081, version=4, username="id")),
    ],
)
def test_proxy_from_url(url: str, expected: fastnet.Proxy) -> None:
    assert fastnet.Proxy.from_url(url) == expected


@pytest.mark.parametrize(
    "url",
    [
        "",
        "ftp://h:21",
        "http://h:0",
        "http://h:65536",
        "http://h:80x",
        "http://h:-1",
        "http://h:80/path",
        "http://h?x",
        "http://[::1",
        "http://[::1]x",
        "http://:80",
        "socks4://u:p@h",
    ],
)
def test_proxy_from_url_rejects(url: str) -> None:
    with pytest.raises(ValueError):
        fastnet.Proxy.from_url(url)


def test_proxy_from_url_error_hides_the_password() -> None:
    with pytest.raises(ValueError) as info:
        fastnet.Proxy.from_url("http://bob:hunter2@h:99999")
    assert "hunter2" not in str(info.value)
    assert "bob" in str(info.value)


# -- selectors -------------------------------------------------------------------------------------


def test_proxy_null_selector_answers_direct() -> None:
    selector = NullProxySelector()
    assert selector.select(fastnet.URL("http://example.com/")) == []
    selector.connect_failed(fastnet.URL("http://x/"), ("h", 1), OSError())  # accepts the report
    assert isinstance(selector, fastnet.ProxySelector)


def test_proxy_env_selector_is_a_proxy_selector() -> None:
    assert isinstance(fastnet.EnvProxySelector({}), fastnet.ProxySelector)


def test_proxy_env_selector_empty_environment() -> None:
    selector = fastnet.EnvProxySelector({})
    assert selector.select(fastnet.URL("http://example.com/")) == []
    assert selector.select(fastnet.URL("https://example.com/")) == []


def test_proxy_env_selector_per_scheme() -> None:
    selector = fastnet.EnvProxySelector({"http_proxy": "http://p1:1", "https_proxy": "http://p2:2"})
    assert selector.select(fastnet.URL("http://example.com/")) == [fastnet.Proxy.http("p1", 1)]
    assert selector.select(fastnet.URL("https://example.com/")) == [fastnet.Proxy.http("p2", 2)]


def test_proxy_env_selector_all_proxy_fallback() -> None:
    selector = fastnet.EnvProxySelector(
        {"all_proxy": "socks5h://127.0.0.1:1080", "https_proxy": "http://p2:2"}
    )
    assert selector.select(fastnet.URL("http://example.com/")) == [fastnet.Proxy.socks("127.0.0.1", 1080)]
    assert selector.select(fastnet.URL("https://example.com/")) == [fastnet.Proxy.http("p2", 2)]


def test_proxy_env_selector_lowercase_wins() -> None:
    env = {"HTTPS_PROXY": "http://upper:1", "https_proxy": "http://lower:2", "HTTP_PROXY": "http://upper:3"}
    selector = fastnet.EnvProxySelector(env)
    assert selector.select(fastnet.URL("https://x.org/")) == [fastnet.Proxy.http("lower", 2)]
    assert selector.select(fastnet.URL("http://x.org/")) == [fastnet.Proxy.http("upper", 3)]


def test_proxy_env_selector_uppercase_no_proxy_used_when_lowercase_missing() -> None:
    selector = fastnet.EnvProxySelector({"http_proxy": "p:1", "NO_PROXY": "example.com"})
    assert selector.select(fastnet.URL("http://example.com/")) == []
    selector = fastnet.EnvProxySelector(
        {"http_proxy": "p:1", "NO_PROXY": "example.com", "no_proxy": "other.org"}
    )
    assert selector.select(fastnet.URL("http://example.com/")) == [fastnet.Proxy.http("p", 1)]


def test_proxy_env_selector_ignores_uppercase_http_proxy_under_cgi() -> None:
    selector = fastnet.EnvProxySelector({"HTTP_PROXY": "http://evil:1", "REQUEST_METHOD": "GET"})
    assert selector.select(fastnet.URL("http://x.org/")) == []


def test_proxy_env_selector_empty_value_means_unset() -> None:
    selector = fastnet.EnvProxySelector({"http_proxy": "  ", "HTTP_PROXY": "http://upper:1"})
    assert selector.select(fastnet.URL("http://x.org/")) == [fastnet.Proxy.http("upper", 1)]


def test_proxy_env_selector_reads_environment_once(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "http_proxy",
        "HTTP_PROXY",
        "all_proxy",
        "ALL_PROXY",
        "no_proxy",
        "NO_PROXY",
        "REQUEST_METHOD",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("http_proxy", "http://first:1")
    selector = fastnet.EnvProxySelector()
    monkeypatch.setenv("http_proxy", "http://second:2")
    monkeypatch.setenv("no_proxy", "*")
    assert selector.select(fastnet.URL("http://x.org/")) == [fastnet.Proxy.http("first", 1)]
    assert fastnet.EnvProxySelector().select(fastnet.URL("http://x.org/")) == []


def test_proxy_env_selector_bad_url_names_the_variable() -> None:
    with pytest.raises(ValueError, match=r"\$https_proxy"):
        fastnet.EnvProxySelector({"https_proxy": "http://h:99999"})


def _no_proxy(value: str) -> fastnet.EnvProxySelector:
    return fastnet.EnvProxySelector(
        {"http_proxy": "http://p:1", "https_proxy": "http://p:1", "no_proxy": value}
    )


@pytest.mark.parametrize(
    ("no_proxy", "url", "bypass"),
    [
        ("example.com", "http://example.com/", True),
        ("example.com", "http://www.example.com/", True),
        ("example.com", "http://badexample.com/", False),
        (".example.com", "http://example.com/", True),
        (".example.com", "http://a.b.example.com/", True),
        ("*.example.com", "http://a.example.com/", True),
        ("EXAMPLE.com.", "http://Example.COM/", True),
        ("example.com:8080", "http://example.com:8080/", True),
        ("example.com:8080", "http://example.com/", False),
        ("*", "http://anything.org/", True),
        ("a.org, example.com", "http://example.com/", True),
        ("a.org example.com", "http://example.com/", True),
        ("a.org,,b.org", "http://c.org/", False),
        ("127.0.0.1", "http://127.0.0.1/", True),
        ("127.0.0.1", "http://127.0.0.2/", False),
        ("127.0.0.1:80", "http://127.0.0.1:8080/", False),
        ("10.0.0.0/8", "http://10.200.3.4/", True),
        ("10.0.0.0/8", "http://11.0.0.1/", False),
        ("192.168.1.7/24", "https://192.168.1.200/", True),
        ("::1", "http://[::1]/", True),
        ("[::1]", "http://[::1]/", True),
        ("[::1]:8080", "http://[::1]:8080/", True),
        ("[::1]:8080", "http://[::1]:9090/", False),
        ("0:0::1", "http://[::1]/", True),
        ("fd00::/8", "http://[fd12:3456::1]/", True),
        ("fd00::/8", "http://[fe80::1]/", False),
        ("10.0.0.0/8", "http://[::1]/", False),
        ("0.0.1", "http://127.0.0.1/", False),
        ("localhost", "http://localhost/", True),
        ("not/a/cidr", "http://x.org/", False),
    ],
)
def test_proxy_env_selector_no_proxy(no_proxy: str, url: str, bypass: bool) -> None:
    selector = _no_proxy(no_proxy)
    assert (selector.select(fastnet.URL(url)) == []) is bypass
    assert selector.bypasses(fastnet.URL(url).host, fastnet.URL(url).port) is bypass
