"""Connect failover and Happy Eyeballs through the real client, against nginx on several loopback
addresses, a refused address, an address that drops SYNs, squid and MockServer.

A test ``Dns`` returns loopback addresses in the order each test needs; an ``EventListener`` records
when each connect attempt started. Timing assertions are loose bounds on behaviour (the 250 ms Happy
Eyeballs delay, the connect timeout), never on speed.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

import fastnet
from fastnet.testing import MockResponse, MockServer, SocketPolicy
from tests.support import clients
from tests.support.clients import route_of
from tests.support.testbed import Testbed

pytestmark = [pytest.mark.testbed, pytest.mark.both_clients]

REFUSED_V4 = ["127.0.0.4", "127.0.0.6", "127.0.0.7"]  # nginx binds only 127.0.0.1-3 and ::1


class OrderedDns:
    """Answers names from a table, in the given order; records the Dns hooks the client calls."""

    def __init__(self, table: dict[str, list[str]]) -> None:
        self.table = table
        self.failed: list[tuple[str, str, str]] = []
        self.connected_ips: list[tuple[str, str]] = []
        self.lock = threading.Lock()

    def lookup(self, hostname: str) -> list[str]:
        try:
            return list(self.table[hostname])
        except KeyError:
            raise fastnet.UnknownHostError(f"OrderedDns: {hostname}") from None

    def connect_failed(self, host: str, ip: str, error: BaseException) -> None:
        with self.lock:
            self.failed.append((host, ip, type(error).__name__))

    def connected(self, host: str, ip: str) -> None:
        with self.lock:
            self.connected_ips.append((host, ip))


class Attempts(fastnet.EventListener):
    """Records (monotonic time, route) for every connect attempt and every failure."""

    def __init__(self) -> None:
        self.started: list[tuple[float, Any]] = []
        self.failed: list[tuple[float, Any, BaseException]] = []
        self.ended: list[Any] = []

    def connect_start(self, call: Any, route: Any) -> None:
        self.started.append((time.monotonic(), route))

    def connect_failed(self, call: Any, route: Any, error: BaseException) -> None:
        self.failed.append((time.monotonic(), route, error))

    def connect_end(self, call: Any, route: Any) -> None:
        self.ended.append(route)

    def ips(self) -> list[str]:
        return [route.socket_address[0] for _, route in self.started]

    def clear(self) -> None:
        self.started.clear()
        self.failed.clear()
        self.ended.clear()


def make_client(dns: Any, listener: Attempts | None = None, **options: Any) -> fastnet.Client:
    options.setdefault("trust_env", False)
    options.setdefault("connect_timeout", 5)
    options.setdefault("read_timeout", 5)
    return clients.make_client(dns=dns, event_listener=listener, **options)


def _drops_syns(host: str, port: int) -> bool:
    """True when a connect to ``host:port`` neither succeeds nor fails within 0.3 s."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.settimeout(0.3)
        try:
            probe.connect((host, port))
        except TimeoutError:
            return True
        except OSError:
            return False
        return False


@pytest.fixture
def blackhole(testbed: Testbed) -> Iterator[str]:
    """An IP on which port ``testbed.http_port`` silently drops SYNs: the testbed's nft blackhole, else
    a listen(0) socket whose accept queue is full (Linux then drops further SYNs)."""
    if testbed.blackhole_available and _drops_syns(testbed.blackhole_host, testbed.http_port):
        yield testbed.blackhole_host
        return
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    fillers: list[socket.socket] = []
    try:
        try:
            listener.bind(("127.0.0.5", testbed.http_port))
        except OSError as exc:
            pytest.skip(f"no blackhole: nft unavailable and 127.0.0.5 unusable ({exc})")
        listener.listen(0)
        for _ in range(4):
            filler = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            filler.setblocking(False)
            filler.connect_ex(("127.0.0.5", testbed.http_port))
            fillers.append(filler)
            time.sleep(0.05)
        if not _drops_syns("127.0.0.5", testbed.http_port):
            pytest.skip("no blackhole: nft unavailable and the listen(0) trick does not drop SYNs here")
        yield "127.0.0.5"
    finally:
        for filler in fillers:
            filler.close()
        listener.close()


# --------------------------------------------------------------------------------------- refused


def test_failover_refused_first_then_nginx(testbed: Testbed):
    dns = OrderedDns({"fo.local": ["127.0.0.4", "127.0.0.2"]})
    listener = Attempts()
    url = f"http://fo.local:{testbed.http_port}/whoami"
    with make_client(dns, listener, happy_eyeballs=False) as client:
        r = client.get(url)
        assert r.status_code == 200 and "addr=127.0.0.2" in r.text and "host=fo.local" in r.text
        assert listener.ips() == ["127.0.0.4", "127.0.0.2"]
        assert [str(route) for _, route, _ in listener.failed] == [
            f"fo.local at 127.0.0.4:{testbed.http_port}"
        ]
        failed = client.route_database.failed_routes()
        assert [route.socket_address for route in failed] == [("127.0.0.4", testbed.http_port)]
        assert ("fo.local", "127.0.0.4", "ConnectionRefusedError") in dns.failed
        assert ("fo.local", "127.0.0.2") in dns.connected_ips

        # a new connection tries the good route first; the failed one is postponed, not forgotten
        client.connection_pool.evict_all()
        listener.clear()
        r = client.get(url)
        assert "addr=127.0.0.2" in r.text
        assert listener.ips() == ["127.0.0.2"]
        assert len(client.route_database) == 1

        # a sibling made with with_options shares the route database
        sibling = client.with_options(read_timeout=3)
        assert sibling.route_database is client.route_database
        # ... unless a route-affecting option changed
        assert client.with_options(happy_eyeballs=True, dns=dns).route_database is not client.route_database


def test_failover_postponed_route_is_still_tried_last(testbed: Testbed):
    dns = OrderedDns({"fo.local": ["127.0.0.4", "127.0.0.6"]})
    listener = Attempts()
    with make_client(dns, listener, happy_eyeballs=False) as client:
        with pytest.raises(fastnet.ConnectError):
            client.get(f"http://fo.local:{testbed.http_port}/")
        assert len(client.route_database) == 2
        listener.clear()
        dns.table["fo.local"] = ["127.0.0.4", "127.0.0.6", "127.0.0.3"]
        r = client.get(f"http://fo.local:{testbed.http_port}/whoami")
        assert "addr=127.0.0.3" in r.text
        assert listener.ips() == ["127.0.0.3"]  # the postponed routes were not needed
        listener.clear()
        client.connection_pool.evict_all()
        dns.table["fo.local"] = ["127.0.0.4"]
        with pytest.raises(fastnet.ConnectError):  # only postponed routes left: they are still tried
            client.get(f"http://fo.local:{testbed.http_port}/")
        assert listener.ips() == ["127.0.0.4"]


def test_failover_connect_error_lists_every_route(testbed: Testbed):
    dns = OrderedDns({"fo.local": REFUSED_V4})
    for happy in (True, False):
        with make_client(dns, happy_eyeballs=happy) as client:
            with pytest.raises(fastnet.ConnectError) as info:
                client.get(f"http://fo.local:{testbed.http_port}/")
            error = info.value
            assert [route.socket_address[0] for route, _ in error.attempts] == REFUSED_V4
            assert all(isinstance(e, ConnectionRefusedError) for _, e in error.attempts)
            for ip in REFUSED_V4:
                assert ip in str(error)
            assert error.url is not None and error.phase == "connect"
            assert isinstance(error, OSError)


# --------------------------------------------------------------------------------------- Happy Eyeballs


def test_failover_happy_eyeballs_blackhole_first(testbed: Testbed, blackhole):
    dns = OrderedDns({"he.local": [blackhole, "127.0.0.1"]})
    listener = Attempts()
    with make_client(dns, listener, happy_eyeballs=True, connect_timeout=10) as client:
        started = time.monotonic()
        r = client.get(f"http://he.local:{testbed.http_port}/whoami")
        elapsed = time.monotonic() - started
        assert "addr=127.0.0.1" in r.text
        assert listener.ips() == [blackhole, "127.0.0.1"]
        gap = listener.started[1][0] - listener.started[0][0]
        assert 0.2 <= gap < 2.0  # the second attempt began ~250 ms after the first, not after 10 s
        assert elapsed < 5.0
        # the loser was closed, not failed: it is not in the route database
        assert listener.failed == [] and len(client.route_database) == 0


def test_failover_sequential_without_happy_eyeballs(testbed: Testbed, blackhole):
    dns = OrderedDns({"he.local": [blackhole, "127.0.0.1"]})
    listener = Attempts()
    with make_client(dns, listener, happy_eyeballs=False, connect_timeout=0.5) as client:
        r = client.get(f"http://he.local:{testbed.http_port}/whoami")
        assert "addr=127.0.0.1" in r.text
        assert listener.ips() == [blackhole, "127.0.0.1"]
        gap = listener.started[1][0] - listener.started[0][0]
        assert gap >= 0.45  # the second attempt waited for the first to time out
        assert isinstance(listener.failed[0][2], fastnet.ConnectTimeout)
        assert [route.socket_address[0] for route in client.route_database.failed_routes()] == [blackhole]


def test_failover_every_route_times_out(testbed: Testbed, blackhole):
    dns = OrderedDns({"he.local": [blackhole]})
    with make_client(dns, happy_eyeballs=True, connect_timeout=0.3) as client:
        with pytest.raises(fastnet.ConnectTimeout) as info:
            client.get(f"http://he.local:{testbed.http_port}/")
        assert info.value.phase == "connect"


def test_failover_interleaves_families_starting_with_the_first(testbed: Testbed):
    listener = Attempts()
    dns = OrderedDns({"dual.local": ["127.0.0.4", "127.0.0.6", "::1", "127.0.0.2"]})
    with make_client(dns, listener, happy_eyeballs=True) as client:
        r = client.get(f"http://dual.local:{testbed.http_port}/whoami")
        assert "addr=::1" in r.text
        assert listener.ips() == ["127.0.0.4", "::1"]  # v4, v6, v4, v4 (RFC 8305 §4)
    listener = Attempts()
    dns = OrderedDns({"dual.local": ["::1", "127.0.0.3"]})
    with make_client(dns, listener, happy_eyeballs=True) as client:
        assert "addr=::1" in client.get(f"http://dual.local:{testbed.http_port}/whoami").text
        assert listener.ips() == ["::1"]


def test_failover_sequential_keeps_dns_order(testbed: Testbed):
    listener = Attempts()
    dns = OrderedDns({"dual.local": ["127.0.0.4", "127.0.0.6", "::1", "127.0.0.2"]})
    with make_client(dns, listener, happy_eyeballs=False) as client:
        r = client.get(f"http://dual.local:{testbed.http_port}/whoami")
        assert "addr=::1" in r.text
        assert listener.ips() == ["127.0.0.4", "127.0.0.6", "::1"]


def test_failover_https_handshake_with_failover(testbed: Testbed):
    dns = OrderedDns({"localhost": ["127.0.0.4", "::1"]})
    with make_client(dns, verify=testbed.ca_path) as client:
        r = client.get(f"https://localhost:{testbed.https_port}/whoami")
        assert r.status_code == 200 and "addr=::1" in r.text and "scheme=https" in r.text


# --------------------------------------------------------------------------------------- first exchange


def test_failover_first_exchange_failure_moves_to_next_route():
    with MockServer(host="127.0.0.1") as bad:
        try:
            good = MockServer(host="127.0.0.2", port=bad.port)
            good.start()
        except OSError as exc:
            pytest.skip(f"port {bad.port} taken on 127.0.0.2: {exc}")
        try:
            bad.enqueue(MockResponse(policy=SocketPolicy.DISCONNECT_AT_START))
            good.enqueue(MockResponse(200, body=b"second route"))
            dns = OrderedDns({"svc.local": ["127.0.0.1", "127.0.0.2"]})
            listener = Attempts()
            with make_client(dns, listener) as client:
                r = client.get(f"http://svc.local:{bad.port}/x")
                assert r.text == "second route"
                assert route_of(r).socket_address == ("127.0.0.2", bad.port)
                assert listener.ips() == ["127.0.0.1", "127.0.0.2"]
                failed = client.route_database.failed_routes()
                assert [route.socket_address for route in failed] == [("127.0.0.1", bad.port)]
                assert good.take_request().target == "/x"
                assert bad.request_count == 0
                assert ("svc.local", "127.0.0.1", "ConnectionClosedError") in dns.failed
        finally:
            good.shutdown()


def test_failover_first_exchange_failure_not_retried_when_disabled():
    with MockServer(host="127.0.0.1") as bad:
        try:
            good = MockServer(host="127.0.0.2", port=bad.port)
            good.start()
        except OSError as exc:
            pytest.skip(f"port {bad.port} taken on 127.0.0.2: {exc}")
        try:
            bad.enqueue(MockResponse(policy=SocketPolicy.DISCONNECT_AT_START))
            dns = OrderedDns({"svc.local": ["127.0.0.1", "127.0.0.2"]})
            with make_client(dns, retry_on_connection_failure=False) as client:
                with pytest.raises(fastnet.ConnectionClosedError):
                    client.get(f"http://svc.local:{bad.port}/x")
                assert len(client.route_database) == 1  # still recorded
            assert good.request_count == 0
        finally:
            good.shutdown()


# --------------------------------------------------------------------------------------- proxies


class ListSelector:
    def __init__(self, proxies: list[fastnet.Proxy]) -> None:
        self.proxies = proxies
        self.failures: list[tuple[str, tuple[str, int], str]] = []

    def select(self, url: Any) -> list[fastnet.Proxy]:
        return list(self.proxies)

    def connect_failed(self, url: Any, address: tuple[str, int], error: BaseException) -> None:
        self.failures.append((str(url), address, type(error).__name__))


def test_failover_next_proxy_and_connect_failed(testbed: Testbed):
    dead = fastnet.Proxy.http(*testbed.refused)
    squid = fastnet.Proxy.http(*testbed.squid_open)
    selector = ListSelector([dead, squid])
    listener = Attempts()
    with fastnet.Client(proxy_selector=selector, event_listener=listener, verify=testbed.ca_path) as client:
        r = client.get(testbed.url("/whoami"))
        assert r.status_code == 200 and route_of(r).proxy == squid
        assert "fastnet-squid" in (r.headers.get("Via") or "")
        assert selector.failures == [
            (f"http://127.0.0.1:{testbed.http_port}/", testbed.refused, "ConnectionRefusedError")
        ]
        assert [route.proxy for route in client.route_database.failed_routes()] == [dead]
        # next time the dead proxy is postponed: squid is tried first
        client.connection_pool.evict_all()
        listener.clear()
        assert route_of(client.get(testbed.url("/whoami"))).proxy == squid
        assert [route.proxy for _, route in listener.started] == [squid]
        # https through the same selector: the tunnel goes through squid
        r = client.get(testbed.url("/whoami", tls=True))
        assert route_of(r).proxy == squid and route_of(r).requires_tunnel


def test_failover_fallback_to_direct(testbed: Testbed):
    dead = fastnet.Proxy.http(*testbed.refused)
    selector = ListSelector([dead])
    with fastnet.Client(proxy_selector=selector) as client:
        with pytest.raises(fastnet.ConnectError) as info:
            client.get(testbed.url("/whoami"))
        assert [route.proxy for route, _ in info.value.attempts] == [dead]
    with fastnet.Client(proxy_selector=selector, fallback_to_direct=True) as client:
        r = client.get(testbed.url("/whoami"))
        assert r.status_code == 200 and route_of(r).proxy.is_direct
        assert "fastnet-squid" not in (r.headers.get("Via") or "")
    assert len(selector.failures) == 2  # once per client; DIRECT failures are never reported


def test_failover_fallback_to_direct_after_socks_failure(testbed: Testbed):
    # dante with auth, no credentials given: a ProxyError, then the single DIRECT attempt
    selector = ListSelector([fastnet.Proxy.socks(*testbed.socks5_auth)])
    with fastnet.Client(proxy_selector=selector, fallback_to_direct=True) as client:
        r = client.get(testbed.url("/whoami"))
        assert r.status_code == 200 and route_of(r).proxy.is_direct
    assert selector.failures and selector.failures[0][2] == "ProxyError"


def test_failover_proxy_host_resolved_with_client_dns(testbed: Testbed):
    # an HTTP proxy named by host: the client's Dns resolves it, failover across its addresses
    dns = OrderedDns({"proxy.local": ["127.0.0.4", testbed.squid_open[0]]})
    proxy = fastnet.Proxy.http("proxy.local", testbed.squid_open[1])
    listener = Attempts()
    with make_client(dns, listener, proxy=proxy) as client:
        r = client.get(testbed.url("/whoami"))
        assert "fastnet-squid" in (r.headers.get("Via") or "")
        assert listener.ips() == ["127.0.0.4", testbed.squid_open[0]]
    assert ("proxy.local", "127.0.0.4", "ConnectionRefusedError") in dns.failed
