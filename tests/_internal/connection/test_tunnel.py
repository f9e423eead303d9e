"""Proxy faults the real proxies cannot produce, through the real client, against a scripted proxy
(``fastnet.testing.MockServer``): broken handshakes, garbage, 407 loops, bad selectors, bad URLs; and
the rule that proxy credentials never reach the origin nor origin credentials the proxy.
"""

from __future__ import annotations

import base64
from typing import Any

import pytest

import fastnet
from fastnet.testing import MockResponse, MockServer, SocketPolicy
from tests.support.clients import assert_pool_clean, make_fast_client, route_of

pytestmark = pytest.mark.both_clients

PROXY_CREDS = "Basic " + base64.b64encode(b"puser:ppass").decode()


def client_for(proxy_server: MockServer, **options: Any) -> fastnet.Client:
    """``make_fast_client`` whose proxy is ``proxy_server`` (trusted when it speaks TLS)."""
    options.setdefault("proxy", fastnet.Proxy.http("127.0.0.1", proxy_server.port))
    if proxy_server.tls:
        options.setdefault("verify", proxy_server.client_ssl_context())
    return make_fast_client(**options)


class CountingAuthenticator:
    """Always answers, with a new credential each time (a proxy that refuses them all loops)."""

    def __init__(self) -> None:
        self.calls = 0

    def authenticate(self, route: Any, response: Any) -> Any:
        self.calls += 1
        token = base64.b64encode(f"user:try{self.calls}".encode()).decode()
        headers = response.request.headers.set("Proxy-Authorization", f"Basic {token}")
        return response.request.replace(headers=headers)


# --------------------------------------------------------------------------------------- CONNECT faults


def test_proxy_faults_proxy_closes_after_connect():
    with MockServer() as proxy_server:
        proxy_server.enqueue(MockResponse(policy=SocketPolicy.DISCONNECT_AFTER_REQUEST))
        with client_for(proxy_server) as client:
            with pytest.raises(fastnet.ProxyError) as info:
                client.get("https://127.0.0.2:4443/")
            assert "closed the connection during CONNECT" in str(info.value)
            assert info.value.proxy == fastnet.Proxy.http("127.0.0.1", proxy_server.port)
            assert str(proxy_server.port) in str(info.value)
            assert_pool_clean(client)


def test_proxy_faults_proxy_closes_at_accept():
    with MockServer() as proxy_server:
        proxy_server.enqueue(MockResponse(policy=SocketPolicy.DISCONNECT_AT_START))
        with client_for(proxy_server) as client:
            with pytest.raises(fastnet.ProxyError) as info:
                client.get("https://127.0.0.2:4443/")
            assert info.value.proxy == fastnet.Proxy.http("127.0.0.1", proxy_server.port)


def test_proxy_faults_socks_proxy_closes_mid_handshake():
    with MockServer() as proxy_server:
        proxy_server.enqueue(MockResponse(policy=SocketPolicy.DISCONNECT_AT_START))
        proxy = fastnet.Proxy.socks("127.0.0.1", proxy_server.port)
        with client_for(proxy_server, proxy=proxy) as client:
            with pytest.raises(fastnet.ProxyError) as info:
                client.get("http://127.0.0.2:8080/")
            assert "SOCKS5" in str(info.value) and info.value.proxy == proxy


def test_proxy_faults_socks_proxy_that_never_answers():
    with MockServer() as proxy_server:  # waits for an HTTP head that the SOCKS greeting never completes
        proxy = fastnet.Proxy.socks("127.0.0.1", proxy_server.port)
        with client_for(proxy_server, proxy=proxy, connect_timeout=0.3) as client:
            with pytest.raises(fastnet.ConnectTimeout) as info:
                client.get("http://127.0.0.2:8080/")
            assert "did not complete the handshake in time" in str(info.value)


def test_proxy_faults_garbage_answer_to_connect():
    with MockServer() as proxy_server:
        proxy_server.enqueue(MockResponse(raw=b"\x00\x01garbage that is not HTTP\r\n\r\n"))
        with client_for(proxy_server) as client:
            with pytest.raises(fastnet.ProxyError) as info:
                client.get("https://127.0.0.2:4443/")
            assert "malformed" in str(info.value)
            assert info.value.proxy == fastnet.Proxy.http("127.0.0.1", proxy_server.port)
            assert_pool_clean(client)


@pytest.mark.parametrize("status", [403, 404, 502, 503])
def test_proxy_faults_non_200_connect(status):
    with MockServer() as proxy_server:
        proxy_server.enqueue(MockResponse(status, body=b"no tunnel for you"))
        with client_for(proxy_server) as client:
            with pytest.raises(fastnet.ProxyError) as info:
                client.get("https://127.0.0.2:4443/")
            assert info.value.status_code == status
            assert f"Unexpected response code for CONNECT: {status}" in str(info.value)
            assert_pool_clean(client)


def test_proxy_faults_407_without_proxy_authenticate_and_no_authenticator():
    with MockServer() as proxy_server:
        proxy_server.enqueue(MockResponse(407))
        with client_for(proxy_server) as client:
            with pytest.raises(fastnet.ProxyError) as info:
                client.get("https://127.0.0.2:4443/")
            assert info.value.status_code == 407
            assert "no Proxy-Authenticate" in str(info.value)
        assert proxy_server.request_count == 1


def test_proxy_faults_407_without_proxy_authenticate_rejects_credentials():
    with MockServer() as proxy_server:
        proxy_server.enqueue(MockResponse(407))
        auth = fastnet.BasicAuthenticator("puser", "ppass")
        with client_for(proxy_server, proxy_authenticator=auth) as client:
            with pytest.raises(fastnet.ProxyError) as info:
                client.get("https://127.0.0.2:4443/")
            assert info.value.status_code == 407 and "rejected" in str(info.value)
            assert "ppass" not in str(info.value)
        connect = proxy_server.take_request()
        assert connect.header("Proxy-Authorization") == PROXY_CREDS  # sent pre-emptively, once
        assert proxy_server.request_count == 1


def test_proxy_faults_407_forever_stops_after_21_attempts():
    with MockServer() as proxy_server:
        proxy_server.default_response = MockResponse(
            407, headers={"Proxy-Authenticate": 'Basic realm="loop"'}, body=b"again"
        )
        auth = CountingAuthenticator()
        with client_for(proxy_server, proxy_authenticator=auth) as client:
            with pytest.raises(fastnet.ProxyError) as info:
                client.get("https://127.0.0.2:4443/")
            assert "Too many tunnel connections attempted: 21" in str(info.value)
            assert info.value.status_code == 407
            assert_pool_clean(client)
        assert proxy_server.request_count == 21
        assert proxy_server.connection_count == 1  # the 407s kept the connection alive
        assert auth.calls == 21  # the pre-emptive ask plus one per 407 but the last


def _tunnel_after_407(close_header: tuple[str, str] | None) -> tuple[list[Any], MockServer]:
    proxy_server = MockServer(tls=True)
    proxy_server.start()
    headers = [("Proxy-Authenticate", 'Basic realm="p"')]
    if close_header is not None:
        headers.append(close_header)
    proxy_server.enqueue(
        MockResponse(407, headers=headers, body=b"auth first"),
        MockResponse(200, tunnel=True),
        MockResponse(200, body=b"inside"),
    )
    auth = fastnet.BasicAuthenticator("puser", "ppass")

    class NotPreemptive:
        def authenticate(self, route: Any, response: Any) -> Any:
            if response.reason == "Preemptive Authenticate":
                return None
            return auth.authenticate(route, response)

    with client_for(proxy_server, proxy_authenticator=NotPreemptive()) as client:
        r = client.get("https://127.0.0.2:4443/x")
        assert r.text == "inside" and r.history == []
        assert_pool_clean(client)
    return [proxy_server.take_request() for _ in range(3)], proxy_server


@pytest.mark.parametrize("header", [("Connection", "close"), ("Proxy-Connection", "close")])
def test_proxy_faults_close_on_407_opens_a_new_socket(header):
    requests, proxy_server = _tunnel_after_407(header)
    try:
        first, second, inner = requests
        assert first.method == second.method == "CONNECT"
        assert first.header("Proxy-Authorization") is None
        assert second.header("Proxy-Authorization") == PROXY_CREDS
        assert first.connection_index != second.connection_index
        assert inner.connection_index == second.connection_index and inner.tls
        assert inner.header("Proxy-Authorization") is None
    finally:
        proxy_server.shutdown()


def test_proxy_faults_407_keep_alive_reuses_the_socket():
    requests, proxy_server = _tunnel_after_407(None)
    try:
        first, second, inner = requests
        assert first.connection_index == second.connection_index == inner.connection_index
        assert proxy_server.connection_count == 1
    finally:
        proxy_server.shutdown()


def test_proxy_faults_authenticator_that_raises():
    class Broken:
        def authenticate(self, route: Any, response: Any) -> Any:
            raise RuntimeError("authenticator bug")

    with MockServer() as proxy_server:
        with client_for(proxy_server, proxy_authenticator=Broken()) as client:
            with pytest.raises(fastnet.ProxyError) as info:
                client.get("https://127.0.0.2:4443/")
            assert "authenticator bug" in str(info.value)
            assert isinstance(info.value.__cause__, RuntimeError)
        assert proxy_server.request_count == 0


# --------------------------------------------------------------------------------------- credentials


def test_proxy_faults_http_proxy_absolute_form_and_credentials():
    with MockServer() as proxy_server:
        proxy_server.enqueue(MockResponse(200, body=b"proxied"))
        proxy = fastnet.Proxy.http("127.0.0.1", proxy_server.port, "puser", "ppass")
        with client_for(proxy_server, proxy=proxy) as client:
            r = client.get("http://127.0.0.2:8080/path?q=1", headers={"Authorization": "Bearer origin"})
            assert r.text == "proxied"
        seen = proxy_server.take_request()
        assert seen.request_line == "GET http://127.0.0.2:8080/path?q=1 HTTP/1.1"
        assert seen.header("Host") == "127.0.0.2:8080"
        assert seen.header("Proxy-Authorization") == PROXY_CREDS


def test_proxy_faults_tunnel_keeps_credentials_apart():
    with MockServer(tls=True) as proxy_server:
        proxy_server.enqueue(MockResponse(200, tunnel=True), MockResponse(200, body=b"inside"))
        proxy = fastnet.Proxy.http("127.0.0.1", proxy_server.port, "puser", "ppass")
        with client_for(proxy_server, proxy=proxy, cookie_jar=fastnet.MemoryCookieJar()) as client:
            r = client.get(
                "https://127.0.0.2:4443/x",
                headers={
                    "Authorization": "Bearer origin",
                    "Cookie": "session=1",
                    # a caller-set Proxy-Authorization must not reach the origin through the tunnel
                    "Proxy-Authorization": "Basic c2hvdWxkOm5vdA==",
                },
            )
            assert r.text == "inside"
        connect = proxy_server.take_request()
        inner = proxy_server.take_request()
    assert connect.method == "CONNECT"
    assert connect.header("Proxy-Authorization") == PROXY_CREDS
    assert connect.header("Authorization") is None and connect.header("Cookie") is None
    assert inner.tls and inner.header("Authorization") == "Bearer origin"
    assert inner.header("Proxy-Authorization") is None


def test_proxy_faults_origin_407_inside_tunnel_is_a_response():
    # a deliberate difference from OkHttp: only the proxy's own 407s go to the proxy authenticator
    with MockServer(tls=True) as proxy_server:
        proxy_server.enqueue(
            MockResponse(200, tunnel=True),
            MockResponse(407, headers={"Proxy-Authenticate": 'Basic realm="origin"'}, body=b"origin 407"),
        )
        auth = CountingAuthenticator()
        with client_for(proxy_server, proxy_authenticator=auth) as client:
            r = client.get("https://127.0.0.2:4443/x")
            assert r.status_code == 407 and r.text == "origin 407"
        assert auth.calls == 1  # only the pre-emptive question before CONNECT
        connect, inner = proxy_server.take_request(), proxy_server.take_request()
        assert connect.header("Proxy-Authorization") is not None
        assert inner.header("Proxy-Authorization") is None


def test_proxy_faults_tunnel_to_origin_through_ipv6_proxy():
    with MockServer(tls=True, host="::1") as proxy_server:
        proxy_server.enqueue(MockResponse(200, tunnel=True), MockResponse(200, body=b"v6"))
        proxy = fastnet.Proxy.http("::1", proxy_server.port)
        with client_for(proxy_server, proxy=proxy) as client:
            assert client.get("https://[::1]:4443/").text == "v6"
        connect = proxy_server.take_request()
        assert connect.target == "[::1]:4443" and connect.header("Host") == "[::1]:4443"


# --------------------------------------------------------------------------------------- selectors


class RaisingSelector:
    def select(self, url: Any) -> Any:
        raise RuntimeError("selector exploded")

    def connect_failed(self, url: Any, address: Any, error: BaseException) -> None:
        pass


class JunkSelector:
    def __init__(self, answer: Any) -> None:
        self.answer = answer

    def select(self, url: Any) -> Any:
        return self.answer

    def connect_failed(self, url: Any, address: Any, error: BaseException) -> None:
        pass


def test_proxy_faults_selector_that_raises():
    with MockServer() as origin:
        with fastnet.Client(proxy_selector=RaisingSelector()) as client:
            with pytest.raises(fastnet.ProxyError) as info:
                client.get(origin.url("/"))
            assert "selector exploded" in str(info.value) and "RaisingSelector" in str(info.value)
        assert origin.request_count == 0


@pytest.mark.parametrize(
    "junk", ["http://127.0.0.1:1", [None], ["http://127.0.0.1:1"], 42, fastnet.Proxy.NO_PROXY]
)
def test_proxy_faults_selector_returning_junk(junk):
    with MockServer() as origin:
        with fastnet.Client(proxy_selector=JunkSelector(junk)) as client:
            with pytest.raises(fastnet.ProxyError) as info:
                client.get(origin.url("/"))
            assert "expected" in str(info.value)
        assert origin.request_count == 0


@pytest.mark.parametrize("answer", [None, [], [fastnet.Proxy.NO_PROXY]])
def test_proxy_faults_selector_empty_means_direct(answer):
    with MockServer() as origin:
        origin.enqueue(MockResponse(200, body=b"direct"))
        with fastnet.Client(proxy_selector=JunkSelector(answer)) as client:
            r = client.get(origin.url("/"))
            assert r.text == "direct" and route_of(r).proxy.is_direct


def test_proxy_faults_selector_proxy_that_is_refused_names_it():
    with MockServer() as dead:
        port = dead.port
    proxy = fastnet.Proxy.http("127.0.0.1", port)
    with fastnet.Client(proxy_selector=JunkSelector([proxy])) as client:
        with pytest.raises(fastnet.ConnectError) as info:
            client.get("http://127.0.0.2:8080/")
        route, error = info.value.attempts[0]
        assert route.proxy == proxy and str(port) in str(info.value)


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:0",
        "http://127.0.0.1:65536",
        "http://127.0.0.1:99999",
        "http://127.0.0.1:port",
        "socks5://127.0.0.1:-1",
        "ftp://127.0.0.1:21",
    ],
)
def test_proxy_faults_bad_proxy_url(url):
    with pytest.raises(ValueError):
        fastnet.Client(proxy=url)
    with pytest.raises(ValueError):
        fastnet.Proxy.from_url(url)


def test_proxy_faults_bad_proxy_url_in_environment(monkeypatch):
    for name in ("http_proxy", "https_proxy", "all_proxy", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)
    monkeypatch.setenv("http_proxy", "http://127.0.0.1:70000")
    with pytest.raises(ValueError) as info:
        fastnet.Client()
    assert "http_proxy" in str(info.value)
    with fastnet.Client(trust_env=False):
        pass


def test_proxy_faults_bad_port_in_constructor():
    for port in (0, 65536, -5):
        with pytest.raises(ValueError):
            fastnet.Proxy.http("127.0.0.1", port)
    with pytest.raises(ValueError):
        fastnet.Proxy(fastnet.ProxyType.DIRECT, "127.0.0.1", 80)
