from __future__ import annotations

import ipaddress
import types
from typing import Any

import pytest

from fastnet._internal.connection.route_database import RouteDatabase
from fastnet.exceptions import ProxyError, RouteError, UnknownHostError
from fastnet.proxy import Proxy
from fastnet.route import Address
from tests.support.fakes import FakeDns, RecordingEventListener, RecordingProxySelector
from tests.support.twins import Twins

DIRECT = Proxy.NO_PROXY
PROXY_A = Proxy.http("proxy-a.test", 3128)
PROXY_B = Proxy.http("proxy-b.test", 3128)
SOCKS = Proxy.socks("127.0.0.1", 1080)


@pytest.fixture
def rs(twins: Twins) -> types.ModuleType:
    """The pure and the compiled twin of the route selector."""
    return twins("fastnet._internal.connection.route_selector")


@pytest.fixture
def dns() -> FakeDns:
    return FakeDns(
        {
            "example.com": ["10.0.0.1", "10.0.0.2"],
            "proxy-a.test": ["10.1.0.1"],
            "proxy-b.test": ["10.2.0.1"],
        }
    )


def selections(selector: Any) -> list[list[str]]:
    """Every selection, each as a list of socket addresses 'ip:port'."""
    out: list[list[str]] = []
    for _ in range(100):
        if not selector.has_next():
            return out
        routes = next(selector)
        out.append([f"{r.socket_address[0]}:{r.socket_address[1]}" for r in routes])
    raise AssertionError("selector did not end")


def make(
    rs: types.ModuleType,
    dns: Any,
    db: Any = None,
    *,
    scheme: str = "http",
    host: str = "example.com",
    port: int = 80,
    **kw: Any,
) -> Any:
    address_kw = {k: kw.pop(k) for k in ("proxy", "proxy_selector") if k in kw}
    address = Address(scheme, host, port, dns=dns, **address_kw)
    return rs.RouteSelector(address, db if db is not None else RouteDatabase(), dns=dns, **kw)


# -- the basics ------------------------------------------------------------------------------------


def test_route_selector_direct_without_selector(rs: types.ModuleType, dns: FakeDns) -> None:
    selector = make(rs, dns)
    assert selector.has_next()
    routes = next(selector)
    assert [r.socket_address for r in routes] == [("10.0.0.1", 80), ("10.0.0.2", 80)]
    assert all(r.proxy is DIRECT for r in routes)
    assert not selector.has_next()
    with pytest.raises(StopIteration):
        next(selector)
    assert dns.lookups == ["example.com"]


def test_route_selector_is_a_python_iterator(rs: types.ModuleType, dns: FakeDns) -> None:
    selector = make(rs, dns)
    assert iter(selector) is selector
    assert [len(s) for s in selector] == [2]


def test_route_selector_ip_literal_skips_dns(rs: types.ModuleType, dns: FakeDns) -> None:
    assert selections(make(rs, dns, host="127.0.0.7", port=8080)) == [["127.0.0.7:8080"]]
    assert selections(make(rs, dns, host="::1", port=8080)) == [["::1:8080"]]
    assert dns.lookups == []


def test_route_selector_accepts_callable_dns_and_ip_objects(rs: types.ModuleType) -> None:
    def lookup(host: str) -> list[Any]:
        return [ipaddress.ip_address("10.0.0.9"), ("10.0.0.8", 0)]

    address = Address("http", "example.com", 80)
    selector = rs.RouteSelector(address, RouteDatabase(), dns=lookup)
    assert selections(selector) == [["10.0.0.9:80", "10.0.0.8:80"]]


def test_route_selector_rejects_a_dns_that_is_not_one(rs: types.ModuleType) -> None:
    with pytest.raises(TypeError):
        rs.RouteSelector(Address("http", "h", 80), RouteDatabase(), dns=42)


def test_route_selector_empty_dns_answer(rs: types.ModuleType, dns: FakeDns) -> None:
    dns["example.com"] = []
    selector = make(rs, dns)
    with pytest.raises(UnknownHostError, match="FakeDns returned no addresses for example.com"):
        next(selector)
    assert not selector.has_next()


def test_route_selector_dns_error_propagates(rs: types.ModuleType, dns: FakeDns) -> None:
    dns.fail["example.com"] = UnknownHostError("nxdomain")
    with pytest.raises(UnknownHostError, match="nxdomain"):
        next(make(rs, dns))


def test_route_selector_port_out_of_range(rs: types.ModuleType, dns: FakeDns) -> None:
    selector = make(rs, dns, port=0)
    assert selector.has_next()
    with pytest.raises(RouteError, match=r"^No route to example.com:0; port is out of range"):
        next(selector)
    with pytest.raises(RouteError, match="No route to example.com:65536; port is out of range"):
        next(make(rs, dns, port=65536))


def test_route_selector_proxy_port_out_of_range(rs: types.ModuleType, dns: FakeDns) -> None:
    # Proxy validates its port at construction; forge one the way a buggy subclass could
    bad = object.__new__(Proxy)
    good = Proxy.http("proxy-a.test", 1)
    for slot in Proxy.__slots__:
        object.__setattr__(bad, slot, getattr(good, slot))
    object.__setattr__(bad, "port", 0)
    with pytest.raises(RouteError, match="No route to proxy-a.test:0; port is out of range"):
        next(make(rs, dns, proxy=bad))


# -- postponed routes (failed routes are tried last) ----------------------------------------------------


def test_route_selector_failed_route_is_postponed(rs: types.ModuleType, dns: FakeDns) -> None:
    db = RouteDatabase()
    first = next(make(rs, dns, db))
    db.failed(first[0])
    assert selections(make(rs, dns, db)) == [["10.0.0.2:80"], ["10.0.0.1:80"]]
    db.connected(first[0])
    assert selections(make(rs, dns, db)) == [["10.0.0.1:80", "10.0.0.2:80"]]


def test_route_selector_failed_proxy_is_tried_last(rs: types.ModuleType, dns: FakeDns) -> None:
    db = RouteDatabase()
    chooser = RecordingProxySelector([PROXY_A, PROXY_B])
    first = next(make(rs, dns, db, proxy_selector=chooser))
    assert [r.proxy for r in first] == [PROXY_A]
    db.failed(first[0])
    selector = make(rs, dns, db, proxy_selector=chooser)
    b = next(selector)
    assert [(r.proxy, r.socket_address) for r in b] == [(PROXY_B, ("10.2.0.1", 3128))]
    a = next(selector)
    assert [(r.proxy, r.socket_address) for r in a] == [(PROXY_A, ("10.1.0.1", 3128))]
    assert not selector.has_next()


def test_route_selector_postponed_routes_from_every_proxy_come_last_together(
    rs: types.ModuleType, dns: FakeDns
) -> None:
    db = RouteDatabase()
    dns["proxy-a.test"] = ["10.1.0.1", "10.1.0.2"]
    chooser = RecordingProxySelector([PROXY_A, PROXY_B])
    routes = [r for s in make(rs, dns, db, proxy_selector=chooser) for r in s]
    db.failed(routes[0])  # 10.1.0.1
    db.failed(routes[2])  # 10.2.0.1
    got = selections(make(rs, dns, db, proxy_selector=chooser))
    assert got == [["10.1.0.2:3128"], ["10.1.0.1:3128", "10.2.0.1:3128"]]


# -- proxies ---------------------------------------------------------------------------------------


def test_route_selector_explicit_proxy_never_asks_the_selector(rs: types.ModuleType, dns: FakeDns) -> None:
    chooser = RecordingProxySelector([PROXY_B])
    selector = make(rs, dns, proxy=PROXY_A, proxy_selector=chooser)
    assert selector.proxies == [PROXY_A]
    assert selections(selector) == [["10.1.0.1:3128"]]
    assert chooser.requests == []


def test_route_selector_explicit_no_proxy(rs: types.ModuleType, dns: FakeDns) -> None:
    chooser = RecordingProxySelector([PROXY_B])
    assert selections(make(rs, dns, proxy=DIRECT, proxy_selector=chooser)) == [["10.0.0.1:80", "10.0.0.2:80"]]
    assert chooser.requests == []


def test_route_selector_asks_the_selector_with_the_address_url(rs: types.ModuleType, dns: FakeDns) -> None:
    chooser = RecordingProxySelector([PROXY_A])
    make(rs, dns, scheme="https", port=443, proxy_selector=chooser)
    assert [str(u) for u in chooser.requests] == ["https://example.com/"]


@pytest.mark.parametrize("answer", [None, []])
def test_route_selector_empty_selector_answer_means_direct(
    rs: types.ModuleType, dns: FakeDns, answer: Any
) -> None:
    selector = make(rs, dns, proxy_selector=RecordingProxySelector(answer))
    assert selector.proxies == [DIRECT]
    assert selections(selector) == [["10.0.0.1:80", "10.0.0.2:80"]]


def test_route_selector_keeps_direct_where_the_selector_put_it(rs: types.ModuleType, dns: FakeDns) -> None:
    selector = make(rs, dns, proxy_selector=RecordingProxySelector([DIRECT, PROXY_A]))
    assert selector.proxies == [DIRECT, PROXY_A]
    assert selections(selector) == [["10.0.0.1:80", "10.0.0.2:80"], ["10.1.0.1:3128"]]


def test_route_selector_no_direct_fallback_by_default(rs: types.ModuleType, dns: FakeDns) -> None:
    selector = make(rs, dns, proxy_selector=RecordingProxySelector([PROXY_A, PROXY_B]))
    assert selector.proxies == [PROXY_A, PROXY_B]
    assert selections(selector) == [["10.1.0.1:3128"], ["10.2.0.1:3128"]]


def test_route_selector_fallback_to_direct_appends_one_direct(rs: types.ModuleType, dns: FakeDns) -> None:
    selector = make(
        rs, dns, proxy_selector=RecordingProxySelector([PROXY_A, DIRECT, PROXY_B]), fallback_to_direct=True
    )
    assert selector.proxies == [PROXY_A, PROXY_B, DIRECT]
    assert selections(selector) == [["10.1.0.1:3128"], ["10.2.0.1:3128"], ["10.0.0.1:80", "10.0.0.2:80"]]


@pytest.mark.parametrize("answer", [None, [], [DIRECT]])
def test_route_selector_fallback_to_direct_never_twice(
    rs: types.ModuleType, dns: FakeDns, answer: Any
) -> None:
    selector = make(rs, dns, proxy_selector=RecordingProxySelector(answer), fallback_to_direct=True)
    assert selector.proxies == [DIRECT]


def test_route_selector_fallback_to_direct_ignored_for_explicit_proxy(
    rs: types.ModuleType, dns: FakeDns
) -> None:
    assert make(rs, dns, proxy=PROXY_A, fallback_to_direct=True).proxies == [PROXY_A]


def test_route_selector_selector_that_raises(rs: types.ModuleType, dns: FakeDns) -> None:
    chooser = RecordingProxySelector(error=RuntimeError("boom"))
    selector = make(rs, dns, proxy_selector=chooser)  # the constructor never raises
    assert selector.has_next()
    with pytest.raises(ProxyError, match="RecordingProxySelector") as info:
        next(selector)
    assert isinstance(info.value.__cause__, RuntimeError)
    assert not selector.has_next()


@pytest.mark.parametrize("junk", ["http://p:1", PROXY_A, 42, [PROXY_A, "socks5://x:1"], [None], {"a": 1}])
def test_route_selector_selector_returning_junk(rs: types.ModuleType, dns: FakeDns, junk: Any) -> None:
    selector = make(rs, dns, proxy_selector=RecordingProxySelector(junk))
    with pytest.raises(ProxyError, match="RecordingProxySelector"):
        next(selector)


def test_route_selector_http_proxy_resolves_the_proxy_host(rs: types.ModuleType, dns: FakeDns) -> None:
    selector = make(rs, dns, scheme="https", port=443, proxy=PROXY_A)
    routes = next(selector)
    assert [r.socket_address for r in routes] == [("10.1.0.1", 3128)]
    assert routes[0].requires_tunnel
    assert dns.lookups == ["proxy-a.test"]


def test_route_selector_http_proxy_ip_literal_skips_dns(rs: types.ModuleType, dns: FakeDns) -> None:
    assert selections(make(rs, dns, proxy=Proxy.http("::1", 3128))) == [["::1:3128"]]
    assert dns.lookups == []


def test_route_selector_socks_remote_dns_keeps_the_host_unresolved(
    rs: types.ModuleType, dns: FakeDns
) -> None:
    selector = make(rs, dns, scheme="https", port=443, proxy=SOCKS)
    routes = next(selector)
    assert [r.socket_address for r in routes] == [("example.com", 443)]
    assert not routes[0].requires_tunnel
    assert dns.lookups == []


def test_route_selector_socks_local_dns_resolves_the_origin(rs: types.ModuleType, dns: FakeDns) -> None:
    proxy = Proxy.socks("127.0.0.1", 1080, remote_dns=False)
    assert selections(make(rs, dns, proxy=proxy)) == [["10.0.0.1:80", "10.0.0.2:80"]]
    assert dns.lookups == ["example.com"]


def test_route_selector_dns_failure_for_one_proxy_continues(rs: types.ModuleType, dns: FakeDns) -> None:
    dns.fail["proxy-a.test"] = UnknownHostError("no proxy-a")
    selector = make(rs, dns, proxy_selector=RecordingProxySelector([PROXY_A, PROXY_B]))
    with pytest.raises(UnknownHostError):
        next(selector)
    assert selector.has_next()
    assert [r.proxy for r in next(selector)] == [PROXY_B]


# -- Happy Eyeballs order --------------------------------------------------------------------------


def test_route_selector_happy_eyeballs_interleaves_from_the_first_family(
    rs: types.ModuleType, dns: FakeDns
) -> None:
    dns["example.com"] = ["10.0.0.1", "10.0.0.2", "10.0.0.3", "fd00::1", "fd00::2"]
    assert selections(make(rs, dns)) == [
        ["10.0.0.1:80", "fd00::1:80", "10.0.0.2:80", "fd00::2:80", "10.0.0.3:80"]
    ]
    dns["example.com"] = ["fd00::1", "fd00::2", "fd00::3", "10.0.0.1", "10.0.0.2"]
    assert selections(make(rs, dns)) == [
        ["fd00::1:80", "10.0.0.1:80", "fd00::2:80", "10.0.0.2:80", "fd00::3:80"]
    ]


def test_route_selector_without_happy_eyeballs_keeps_dns_order(rs: types.ModuleType, dns: FakeDns) -> None:
    dns["example.com"] = ["10.0.0.1", "10.0.0.2", "fd00::1"]
    assert selections(make(rs, dns, happy_eyeballs=False)) == [["10.0.0.1:80", "10.0.0.2:80", "fd00::1:80"]]


@pytest.mark.parametrize(
    ("ips", "expected"),
    [
        ([], []),
        (["1.1.1.1"], ["1.1.1.1"]),
        (["1.1.1.1", "2.2.2.2"], ["1.1.1.1", "2.2.2.2"]),
        (["::1", "::2"], ["::1", "::2"]),
        (["4a", "4b", "4c", "6:a", "6:b"], ["4a", "6:a", "4b", "6:b", "4c"]),
        (["6:a", "4a", "4b", "4c"], ["6:a", "4a", "4b", "4c"]),
        (["4a", "6:a", "6:b", "6:c"], ["4a", "6:a", "6:b", "6:c"]),
        (["4a", "4a", "6:a"], ["4a", "6:a", "4a"]),
    ],
)
def test_route_selector_reorder_for_happy_eyeballs(
    rs: types.ModuleType, ips: list[str], expected: list[str]
) -> None:
    assert rs.reorder_for_happy_eyeballs(list(ips)) == expected


# -- events ----------------------------------------------------------------------------------------


def test_route_selector_events(rs: types.ModuleType, dns: FakeDns) -> None:
    events = RecordingEventListener()
    selector = make(rs, dns, proxy_selector=RecordingProxySelector([PROXY_A]), events=events)
    assert events.names() == ["proxy_select_start", "proxy_select_end"]
    assert str(events.events[0][1][0]) == "http://example.com/"
    assert events.events[1][1][1] == [PROXY_A]
    next(selector)
    assert events.events[2:] == [
        ("dns_start", ("proxy-a.test",)),
        ("dns_end", ("proxy-a.test", ["10.1.0.1"])),
    ]


def test_route_selector_events_for_explicit_proxy_and_no_dns(rs: types.ModuleType, dns: FakeDns) -> None:
    events = RecordingEventListener()
    next(make(rs, dns, proxy=SOCKS, events=events))
    assert events.names() == ["proxy_select_start", "proxy_select_end"]


def test_route_selector_no_dns_end_on_empty_answer(rs: types.ModuleType, dns: FakeDns) -> None:
    events = RecordingEventListener()
    dns["example.com"] = []
    with pytest.raises(UnknownHostError):
        next(make(rs, dns, events=events))
    assert events.names() == ["proxy_select_start", "proxy_select_end", "dns_start"]


def test_route_selector_events_object_may_lack_methods(rs: types.ModuleType, dns: FakeDns) -> None:
    class OnlyDns:
        def __init__(self) -> None:
            self.hosts: list[str] = []

        def dns_start(self, host: str) -> None:
            self.hosts.append(host)

    events = OnlyDns()
    next(make(rs, dns, events=events))
    assert events.hosts == ["example.com"]
