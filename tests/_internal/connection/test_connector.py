"""``Connector`` (``fastnet._internal.connection.connector``), both twins: a client's route-affecting
settings, its cache of ``Address``es, and where each connect outcome is reported (the route database,
the ``Dns``'s ``connect_failed``/``connected`` hooks, a proxy selector's ``connect_failed``). The Dns
and the selector are recording stand-ins (policy objects); the last test connects for real, through the
client, to a refused loopback port."""

from __future__ import annotations

import socket
import ssl
import types
from collections.abc import Iterable
from typing import Any

import pytest

import fastnet
from fastnet._internal._sync.pool import RealConnectionPool
from fastnet._internal.connection.route_database import RouteDatabase
from fastnet._internal.connection.tls import default_ssl_context
from fastnet.exceptions import CanceledError, ConnectError
from fastnet.proxy import Proxy
from fastnet.route import Address, Route
from fastnet.url import URL
from tests.support.fakes import FakeDns, RecordingProxySelector
from tests.support.twins import Twins


class HookedDns(FakeDns):
    """A FakeDns with the optional hooks the connector reports to (they feed an IP blacklist)."""

    def __init__(self, answers: dict[str, Iterable[str]] | None = None) -> None:
        super().__init__(answers)
        self.failed: list[tuple[str, str, BaseException]] = []
        self.succeeded: list[tuple[str, str]] = []

    def connect_failed(self, host: str, ip: str, error: BaseException) -> None:
        self.failed.append((host, ip, error))

    def connected(self, host: str, ip: str) -> None:
        self.succeeded.append((host, ip))


@pytest.fixture
def module(twins: Twins) -> types.ModuleType:
    return twins("fastnet._internal.connection.connector")


def connector(module: types.ModuleType, **options: Any) -> Any:
    settings: dict[str, Any] = dict(
        pool=RealConnectionPool(5, 300.0, 0),
        dns=HookedDns(),
        proxy=None,
        proxy_selector=None,
        route_database=RouteDatabase(),
        ssl_context=None,
        proxy_authenticator=None,
        fallback_to_direct=False,
        happy_eyeballs=True,
        user_agent="fastnet-test",
        tls_sessions={},
    )
    settings.update(options)
    return module.Connector(**settings)


def route(
    address: Address, proxy: Proxy = Proxy.NO_PROXY, socket_address: tuple[str, int] = ("192.0.2.1", 80)
):
    return Route(address, proxy, socket_address)


ERROR = ConnectError("connection refused", phase="connect")


# -- addresses -----------------------------------------------------------------------------------------


def test_connector_address_of_is_cached_per_origin_and_proxy(module: types.ModuleType) -> None:
    c = connector(module)
    a = c.address_of(URL("http://a.test/x"), None)
    assert c.address_of(URL("http://a.test/other?q"), None) is a  # same origin: the same Address
    assert c.address_of(URL("http://a.test:8080/"), None) is not a
    via = Proxy.http("127.0.0.1", 3128)
    proxied = c.address_of(URL("http://a.test/x"), via)
    assert proxied is not a and proxied.proxy == via and c.address_of(URL("http://a.test/"), via) is proxied
    assert (a.scheme, a.host, a.port, a.proxy, a.dns) == ("http", "a.test", 80, None, c.dns)
    assert a.ssl_context is None


def test_connector_an_explicit_proxy_takes_the_place_of_the_selector(module: types.ModuleType) -> None:
    selector = RecordingProxySelector()
    c = connector(module, proxy_selector=selector)
    assert c.address_of(URL("http://a.test/"), None).proxy_selector is selector
    assert c.address_of(URL("http://a.test/"), Proxy.http("127.0.0.1", 3128)).proxy_selector is None
    fixed = connector(module, proxy=Proxy.http("127.0.0.1", 3128), proxy_selector=selector)
    assert fixed.address_of(URL("http://a.test/"), None).proxy_selector is None


def test_connector_https_addresses_share_one_tls_context_built_on_first_use(module: types.ModuleType) -> None:
    c = connector(module)
    assert c.ssl_context is None
    first = c.address_of(URL("https://a.test/"), None)
    assert isinstance(first.ssl_context, ssl.SSLContext) and c.ssl_context is first.ssl_context
    assert c.address_of(URL("https://b.test/"), None).ssl_context is first.ssl_context
    own = default_ssl_context()
    assert connector(module, ssl_context=own).address_of(URL("https://a.test/"), None).ssl_context is own


# -- outcomes ------------------------------------------------------------------------------------------


def test_connector_a_direct_failure_goes_to_the_route_database_and_the_dns(module: types.ModuleType) -> None:
    c = connector(module)
    failed = route(c.address_of(URL("http://a.test/"), None))
    c.record_failure(failed, ERROR)
    assert c.route_database.failed_routes() == [failed] and c.route_database.should_postpone(failed)
    assert c.dns.failed == [("a.test", "192.0.2.1", ERROR)]
    c.record_success(failed)
    assert not c.route_database.should_postpone(failed)
    assert c.dns.succeeded == [("a.test", "192.0.2.1")]


def test_connector_a_canceled_connect_is_no_failure(module: types.ModuleType) -> None:
    c = connector(module)
    canceled = route(c.address_of(URL("http://a.test/"), None))
    c.record_failure(canceled, CanceledError("canceled", phase="connect"))
    assert c.route_database.failed_routes() == [] and c.dns.failed == []


def test_connector_an_http_proxy_failure_names_the_proxy(module: types.ModuleType) -> None:
    selector = RecordingProxySelector()
    c = connector(module, proxy_selector=selector)
    proxy = Proxy.http("proxy.test", 3128)
    address = Address("http", "a.test", 80, proxy_selector=selector, dns=c.dns)
    failed = route(address, proxy, ("192.0.2.9", 3128))
    c.record_failure(failed, ERROR)
    assert c.dns.failed == [("proxy.test", "192.0.2.9", ERROR)]  # the proxy's name was resolved
    assert selector.failures == [(address.url, ("proxy.test", 3128), ERROR)]
    c.record_success(failed)
    assert c.dns.succeeded == [("proxy.test", "192.0.2.9")]


def test_connector_a_selector_that_raises_does_not_break_the_call(module: types.ModuleType) -> None:
    class Raising(RecordingProxySelector):
        def connect_failed(self, url: Any, address: tuple[str, int], error: BaseException) -> None:
            raise RuntimeError("the selector's own bug")

    selector = Raising()
    c = connector(module)
    address = Address("http", "a.test", 80, proxy_selector=selector, dns=c.dns)
    c.record_failure(route(address, Proxy.http("proxy.test", 3128)), ERROR)
    assert len(c.route_database.failed_routes()) == 1


def test_connector_socks_reports_to_the_dns_only_when_the_client_resolved(module: types.ModuleType) -> None:
    c = connector(module)
    address = c.address_of(URL("http://a.test/"), None)
    remote = Proxy.socks("127.0.0.1", 1080)  # the proxy resolves a.test: no IP of ours to blame
    c.record_failure(route(address, remote, ("a.test", 80)), ERROR)
    local = Proxy.socks("127.0.0.1", 1080, remote_dns=False)
    c.record_failure(route(address, local, ("192.0.2.5", 80)), ERROR)
    assert c.dns.failed == [("a.test", "192.0.2.5", ERROR)]
    assert len(c.route_database.failed_routes()) == 2


def test_connector_an_overtaken_attempt_is_told_to_the_dns_only(module: types.ModuleType) -> None:
    c = connector(module)
    slow = route(c.address_of(URL("http://a.test/"), None))
    c.record_overtaken(slow, ERROR)
    assert c.dns.failed == [("a.test", "192.0.2.1", ERROR)]
    assert c.route_database.failed_routes() == []  # the route itself did not fail
    c.record_overtaken(route(slow.address, Proxy.http("proxy.test", 3128)), ERROR)
    assert len(c.dns.failed) == 1


def test_connector_a_dns_without_hooks_is_fine(module: types.ModuleType) -> None:
    c = connector(module, dns=FakeDns())
    r = route(c.address_of(URL("http://a.test/"), None))
    c.record_failure(r, ERROR)
    c.record_overtaken(r, ERROR)
    c.record_success(r)
    assert c.route_database.failed_routes() == []


def test_connector_a_refused_connect_through_the_client_is_recorded() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # bound, never listening: connects are refused
        dns = HookedDns({"refused.test": ["127.0.0.1"]})
        with fastnet.Client(dns=dns, trust_env=False, retry_on_connection_failure=False) as client:
            with pytest.raises(fastnet.ConnectError):
                client.get(f"http://refused.test:{port}/")
            (failed,) = client.route_database.failed_routes()
    assert failed.socket_address == ("127.0.0.1", port) and failed.address.host == "refused.test"
    assert [(host, ip) for host, ip, _ in dns.failed] == [("refused.test", "127.0.0.1")]
