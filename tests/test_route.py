from __future__ import annotations

import pickle
import types

import pytest

from fastnet.proxy import Proxy
from tests.support.twins import Twins


@pytest.fixture
def rs(twins: Twins) -> types.ModuleType:
    """The pure and the compiled twin of the ``route`` unit (Address, Route)."""
    return twins("fastnet.route")


# -- Address ---------------------------------------------------------------------------------------


def test_route_address_fields(rs: types.ModuleType) -> None:
    a = rs.Address("https", "example.com", 8443)
    assert (a.scheme, a.host, a.port, a.proxy) == ("https", "example.com", 8443, None)
    assert a.is_https
    assert str(a.url) == "https://example.com:8443/"
    assert str(rs.Address("http", "::1", 80).url) == "http://[::1]/"
    assert not rs.Address("http", "x", 80).is_https


def test_route_address_equality_by_value(rs: types.ModuleType) -> None:
    dns = object()
    a = rs.Address("http", "example.com", 80, proxy=Proxy.http("p", 1), dns=dns)
    b = rs.Address("http", "example.com", 80, proxy=Proxy.http("p", 1), dns=dns)
    assert a == b and hash(a) == hash(b) and not (a != b)
    assert a != rs.Address("https", "example.com", 80, proxy=Proxy.http("p", 1), dns=dns)
    assert a != rs.Address("http", "example.org", 80, proxy=Proxy.http("p", 1), dns=dns)
    assert a != rs.Address("http", "example.com", 81, proxy=Proxy.http("p", 1), dns=dns)
    assert a != rs.Address("http", "example.com", 80, proxy=Proxy.http("p", 2), dns=dns)
    assert a != rs.Address("http", "example.com", 80, dns=dns)
    assert a != "http://example.com/"
    assert len({a, b}) == 1


@pytest.mark.parametrize("component", ["dns", "proxy_selector", "ssl_context", "proxy_authenticator"])
def test_route_address_components_compare_by_identity(rs: types.ModuleType, component: str) -> None:
    class Equal:
        def __eq__(self, other: object) -> bool:
            return True

        def __hash__(self) -> int:
            return 1

    one, two = Equal(), Equal()
    a = rs.Address("http", "h", 80, **{component: one})
    assert a == rs.Address("http", "h", 80, **{component: one})
    assert a != rs.Address("http", "h", 80, **{component: two})
    assert a != rs.Address("http", "h", 80)


def test_route_address_equals_non_host(rs: types.ModuleType) -> None:
    a = rs.Address("http", "a.example", 80)
    assert a.equals_non_host(rs.Address("http", "b.example", 80))
    assert not a.equals_non_host(rs.Address("http", "b.example", 81))


def test_route_address_is_immutable(rs: types.ModuleType) -> None:
    a = rs.Address("http", "h", 80)
    with pytest.raises(AttributeError):
        a.host = "other"


def test_route_address_rejects_bad_input(rs: types.ModuleType) -> None:
    with pytest.raises(ValueError):
        rs.Address("ftp", "h", 21)
    with pytest.raises(ValueError):
        rs.Address("http", "", 80)
    with pytest.raises(TypeError):
        rs.Address("http", "h", 80, proxy="http://p:1")
    with pytest.raises(TypeError):
        rs.Address("http", "h", "80")


def test_route_address_pickles(rs: types.ModuleType) -> None:
    a = rs.Address("https", "h", 443, proxy=Proxy.socks("127.0.0.1", 1080))
    assert pickle.loads(pickle.dumps(a)) == a


# -- Route -----------------------------------------------------------------------------------------


def test_route_fields_and_equality(rs: types.ModuleType) -> None:
    a = rs.Address("http", "example.com", 80)
    r = rs.Route(a, Proxy.NO_PROXY, ("1.2.3.4", 80))
    assert r.address is a and r.proxy is Proxy.NO_PROXY and r.socket_address == ("1.2.3.4", 80)
    same = rs.Route(rs.Address("http", "example.com", 80), Proxy.NO_PROXY, ["1.2.3.4", 80])
    assert r == same and hash(r) == hash(same)
    assert r != rs.Route(a, Proxy.NO_PROXY, ("1.2.3.5", 80))
    assert r != rs.Route(a, Proxy.socks("1.2.3.4", 80), ("1.2.3.4", 80))
    assert r != rs.Route(rs.Address("https", "example.com", 80), Proxy.NO_PROXY, ("1.2.3.4", 80))
    assert r.is_direct
    with pytest.raises(AttributeError):
        r.proxy = Proxy.http("p", 1)
    assert pickle.loads(pickle.dumps(r)) == r


def test_route_rejects_bad_input(rs: types.ModuleType) -> None:
    a = rs.Address("http", "h", 80)
    with pytest.raises(TypeError):
        rs.Route("h", Proxy.NO_PROXY, ("1.2.3.4", 80))
    with pytest.raises(TypeError):
        rs.Route(a, None, ("1.2.3.4", 80))
    with pytest.raises(ValueError):
        rs.Route(a, Proxy.NO_PROXY, ("1.2.3.4", 80, 0))


def test_route_requires_tunnel(rs: types.ModuleType) -> None:
    https = rs.Address("https", "h", 443)
    http = rs.Address("http", "h", 80)
    assert rs.Route(https, Proxy.http("p", 3128), ("10.0.0.1", 3128)).requires_tunnel
    assert rs.Route(https, Proxy.https("p", 3128), ("10.0.0.1", 3128)).requires_tunnel
    assert not rs.Route(http, Proxy.http("p", 3128), ("10.0.0.1", 3128)).requires_tunnel
    assert not rs.Route(https, Proxy.NO_PROXY, ("10.0.0.1", 443)).requires_tunnel
    assert not rs.Route(https, Proxy.socks("p", 1080), ("h", 443)).requires_tunnel


@pytest.mark.parametrize(
    ("host", "url_port", "proxy", "socket_address", "text"),
    [
        ("1.2.3.4", 1003, Proxy.NO_PROXY, ("1.2.3.4", 1003), "1.2.3.4:1003"),
        ("example.com", 1003, Proxy.NO_PROXY, ("1.2.3.4", 1003), "example.com at 1.2.3.4:1003"),
        (
            "example.com",
            1003,
            Proxy.http("1.2.3.4", 5678),
            ("1.2.3.4", 5678),
            "example.com:1003 via proxy 1.2.3.4:5678",
        ),
        ("example.com", 1003, Proxy.NO_PROXY, ("::1", 1003), "example.com at [::1]:1003"),
        ("::1", 80, Proxy.NO_PROXY, ("::1", 80), "[::1]:80"),
        (
            "example.com",
            443,
            Proxy.socks("127.0.0.1", 1080),
            ("example.com", 443),
            "example.com via proxy <unresolved>:443 (socks5h://127.0.0.1:1080)",
        ),
        (
            "example.com",
            443,
            Proxy.socks("127.0.0.1", 1080, remote_dns=False),
            ("9.9.9.9", 443),
            "example.com via proxy 9.9.9.9:443 (socks5://127.0.0.1:1080)",
        ),
    ],
)
def test_route_string_form(
    rs: types.ModuleType, host: str, url_port: int, proxy: Proxy, socket_address: tuple[str, int], text: str
) -> None:
    route = rs.Route(rs.Address("https", host, url_port), proxy, socket_address)
    assert str(route) == text


def test_route_string_form_never_shows_proxy_password(rs: types.ModuleType) -> None:
    proxy = Proxy.socks("127.0.0.1", 1080, username="u", password="hunter2")
    route = rs.Route(rs.Address("https", "h", 443), proxy, ("h", 443))
    assert "hunter2" not in str(route) and "hunter2" not in repr(route)


@pytest.mark.parametrize(
    ("host", "literal"),
    [
        ("1.2.3.4", True),
        ("::1", True),
        ("255.255.255.255", True),
        ("256.1.1.1", False),
        ("1.2.3", False),
        ("example.com", False),
        ("1.2.3.4.5", False),
        ("a.b.c.d", False),
        ("", False),
        ("1.2.3.", False),
        (".1.2.3", False),
        ("1..2.3", False),
        ("1.2.3.1000", False),
        ("01.002.3.4", True),
        ("1.2.3.4 ", False),
        ("\u0661.2.3.4", False),  # a non-ASCII digit
        ("0.0.0.0", True),
    ],
)
def test_route_is_ip_literal(rs: types.ModuleType, host: str, literal: bool) -> None:
    assert rs.is_ip_literal(host) is literal


def test_route_str_names_a_proxy_on_the_origin_ip(rs: types.ModuleType) -> None:
    address = rs.Address("http", "127.0.0.1", 19080)
    via = rs.Route(address, Proxy.http("127.0.0.1", 3128), ("127.0.0.1", 3128))
    assert str(via) == "127.0.0.1:19080 via proxy 127.0.0.1:3128"
    assert str(rs.Route(address, Proxy.NO_PROXY, ("127.0.0.1", 19080))) == "127.0.0.1:19080"
