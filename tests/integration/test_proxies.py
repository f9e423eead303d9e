"""Proxies through the real client against real servers: squid (HTTP proxy, CONNECT, Basic auth),
dante (SOCKS5 with and without auth), nginx as the origin, and squid behind a TLS terminator as an
HTTPS proxy (TLS to the proxy, and TLS inside TLS for https origins).

Nothing here lets a proxy resolve a ``*.test`` name: origins are IP literals or ``localhost`` (which
squid and dante answer from their own hosts files), and the client's own ``Dns`` refuses every name
where a test must prove the client did not resolve it.
"""

from __future__ import annotations

import selectors
import socket
import ssl
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import fastnet
from fastnet.testing import MockResponse, MockServer
from tests.support.clients import assert_pool_clean, make_client, route_of
from tests.support.testbed import Testbed

pytestmark = [pytest.mark.testbed, pytest.mark.both_clients]


class RefusingDns:
    """A Dns that resolves nothing: proves the client never looked a name up itself."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def lookup(self, hostname: str) -> list[str]:
        self.asked.append(hostname)
        raise fastnet.UnknownHostError(f"RefusingDns: {hostname}")


class MapDns:
    """A Dns answering from a dict (loopback addresses only)."""

    def __init__(self, table: dict[str, list[str]]) -> None:
        self.table = table
        self.asked: list[str] = []

    def lookup(self, hostname: str) -> list[str]:
        self.asked.append(hostname)
        try:
            return list(self.table[hostname])
        except KeyError:
            raise fastnet.UnknownHostError(f"MapDns: {hostname}") from None


def squid_log(testbed: Testbed) -> Path:
    return Path(testbed.root) / "squid" / "access.log"


def squid_log_offset(testbed: Testbed) -> int | None:
    try:
        return squid_log(testbed).stat().st_size
    except OSError:
        return None


def squid_logged(
    testbed: Testbed, offset: int | None, needle: str, count: int = 1, timeout: float = 5.0
) -> list[str] | None:
    """squid's complete access-log lines written after ``offset`` that contain ``needle``, once there are
    ``count`` of them or ``timeout`` has passed (squid writes a line after it answered, so it may lag
    the response); ``None`` when the log cannot be read (not root)."""
    if offset is None:
        return None
    deadline = time.monotonic() + timeout
    while True:
        try:
            with open(squid_log(testbed), "rb") as f:
                f.seek(offset)
                text = f.read().decode("utf-8", "replace")
        except OSError:
            return None
        complete = text[: text.rfind("\n") + 1]  # a line still being written is not counted yet
        lines = [line for line in complete.splitlines() if needle in line]
        if len(lines) >= count or time.monotonic() > deadline:
            return lines
        time.sleep(0.025)


def via_squid(response: Any) -> bool:
    return "fastnet-squid" in (response.headers.get("Via") or "")


# --------------------------------------------------------------------------------------- HTTP proxy


def test_proxies_http_absolute_form_through_squid(testbed: Testbed):
    offset = squid_log_offset(testbed)
    url = testbed.url("/whoami", host="127.0.0.2")
    with make_client(trust_env=False, proxy=fastnet.Proxy.http(*testbed.squid_open)) as client:
        r = client.get(url)
        assert r.status_code == 200 and "addr=127.0.0.2" in r.text
        assert via_squid(r)
        assert route_of(r).proxy == fastnet.Proxy.http(*testbed.squid_open)
        assert route_of(r).socket_address == testbed.squid_open
        again = client.get(url)
        assert again.status_code == 200
        assert client.connection_pool.connection_count() == 1  # keep-alive to the proxy
        assert_pool_clean(client)
    lines = squid_logged(testbed, offset, f"GET {url}", count=2)
    if lines is not None:
        assert len(lines) == 2  # the request line squid saw was the absolute URL


def test_proxies_http_proxy_credentials_on_the_proxy(testbed: Testbed):
    offset = squid_log_offset(testbed)
    proxy = fastnet.Proxy.http(*testbed.squid, username=testbed.squid_user, password=testbed.squid_password)
    with MockServer(host="127.0.0.3") as origin:
        origin.enqueue(MockResponse(200, body=b"origin"))
        with make_client(trust_env=False, proxy=proxy) as client:
            r = client.get(origin.url("/creds"))
            assert r.status_code == 200 and r.text == "origin" and r.history == []
            assert via_squid(r)
        seen = origin.take_request()
        assert seen.target == "/creds"  # squid forwards origin-form
        assert seen.header("Proxy-Authorization") is None  # the proxy's credentials stop at the proxy
        assert "fastnet-squid" in (seen.header("Via") or "")
    lines = squid_logged(testbed, offset, "/creds")
    if lines is not None:
        assert lines and f" {testbed.squid_user} " in lines[0]


def test_proxies_http_proxy_credentials_from_url(testbed: Testbed):
    host, port = testbed.squid
    url = f"http://{testbed.squid_user}:{testbed.squid_password}@{host}:{port}"
    with make_client(trust_env=False, proxy=url, verify=testbed.ca_path) as client:
        r = client.get(testbed.url("/whoami"))
        assert r.status_code == 200 and r.history == [] and via_squid(r)
        assert client.get(testbed.url("/whoami", tls=True)).status_code == 200
        assert route_of(r).proxy.username == testbed.squid_user
        assert "s3cret" not in str(r.route) and "s3cret" not in repr(route_of(r).proxy)


def test_proxies_http_proxy_authenticator_reactive(testbed: Testbed):
    auth = fastnet.BasicAuthenticator(testbed.squid_user, testbed.squid_password)
    with make_client(
        trust_env=False, proxy=fastnet.Proxy.http(*testbed.squid), proxy_authenticator=auth
    ) as client:
        r = client.get(testbed.url("/whoami"))
        assert r.status_code == 200 and via_squid(r)
        assert [p.status_code for p in r.history] == [407]
        assert r.request is not None
        assert r.request.header("Proxy-Authorization") == auth.credentials


def test_proxies_origin_credentials_never_reach_the_proxy_log(testbed: Testbed):
    # Authorization belongs to the origin: squid passes it on untouched, and the origin gets no
    # Proxy-Authorization even when the caller put one on the request for an origin reached through
    # a CONNECT tunnel.
    with MockServer(host="127.0.0.2") as origin:
        origin.enqueue(MockResponse(200, body=b"ok"))
        proxy = fastnet.Proxy.http(
            *testbed.squid, username=testbed.squid_user, password=testbed.squid_password
        )
        with make_client(trust_env=False, proxy=proxy) as client:
            r = client.get(origin.url("/a"), headers={"Authorization": "Bearer origin-token"})
            assert r.status_code == 200
        seen = origin.take_request()
        assert seen.header("Authorization") == "Bearer origin-token"
        assert seen.header("Proxy-Authorization") is None


# --------------------------------------------------------------------------------------- CONNECT


def test_proxies_https_through_squid_connect(testbed: Testbed):
    offset = squid_log_offset(testbed)
    dns = RefusingDns()
    proxy = fastnet.Proxy.http(*testbed.squid_open)
    with make_client(trust_env=False, proxy=proxy, dns=dns, verify=testbed.ca_path) as client:
        # "localhost" is resolved by squid (its hosts file), never by the client
        url = f"https://localhost:{testbed.https_port}/whoami"
        r = client.get(url)
        assert r.status_code == 200 and "scheme=https" in r.text
        assert route_of(r).requires_tunnel and route_of(r).proxy == proxy
        assert client.get(url).status_code == 200
        assert client.connection_pool.connection_count() == 1
    assert dns.asked == []
    lines = squid_logged(testbed, offset, f"CONNECT localhost:{testbed.https_port}")
    if lines is not None:
        assert len(lines) == 1


def test_proxies_connect_sends_only_host_proxy_connection_and_user_agent():
    # squid does not tell what a CONNECT carried, so a scripted proxy records it
    with MockServer(tls=True) as proxy_server:
        proxy_server.enqueue(MockResponse(200, reason="Connection established", tunnel=True))
        proxy_server.enqueue(MockResponse(200, body=b"inside"))
        proxy = fastnet.Proxy.http("127.0.0.1", proxy_server.port)
        with make_client(
            trust_env=False, proxy=proxy, verify=proxy_server.client_ssl_context(), user_agent="ua-test/1"
        ) as client:
            r = client.get(
                "https://127.0.0.2:4443/secret?q=1",
                headers={"Authorization": "Bearer origin", "Cookie": "a=b", "X-Custom": "1"},
            )
            assert r.text == "inside"
        connect = proxy_server.take_request()
        assert connect.request_line == "CONNECT 127.0.0.2:4443 HTTP/1.1"
        assert connect.headers == [
            ("Host", "127.0.0.2:4443"),
            ("Proxy-Connection", "Keep-Alive"),
            ("User-Agent", "ua-test/1"),
        ]
        inner = proxy_server.take_request()
        assert inner.tls and inner.target == "/secret?q=1"
        assert inner.header("Authorization") == "Bearer origin" and inner.header("X-Custom") == "1"


class RecordingAuthenticator:
    """Answers the proxy's challenges with Basic credentials, recording what it was shown."""

    def __init__(self, user: str, password: str, *, preemptive: bool) -> None:
        self.basic = fastnet.BasicAuthenticator(user, password)
        self.preemptive = preemptive
        self.seen: list[tuple[int, str, list[str]]] = []

    def authenticate(self, route: Any, response: Any) -> Any:
        self.seen.append((response.status_code, response.reason, [c.scheme for c in response.challenges()]))
        if response.reason == "Preemptive Authenticate" and not self.preemptive:
            return None
        return self.basic.authenticate(route, response)


def test_proxies_https_connect_preemptive_auth(testbed: Testbed):
    auth = RecordingAuthenticator(testbed.squid_user, testbed.squid_password, preemptive=True)
    with make_client(
        trust_env=False,
        proxy=fastnet.Proxy.http(*testbed.squid),
        proxy_authenticator=auth,
        verify=testbed.ca_path,
    ) as client:
        r = client.get(testbed.url("/whoami", tls=True))
        assert r.status_code == 200 and r.history == []
    # one synthetic 407 before the first CONNECT, and squid never had to challenge
    assert auth.seen == [(407, "Preemptive Authenticate", ["fastnet-preemptive"])]


def test_proxies_https_connect_reactive_auth(testbed: Testbed):
    auth = RecordingAuthenticator(testbed.squid_user, testbed.squid_password, preemptive=False)
    with make_client(
        trust_env=False,
        proxy=fastnet.Proxy.http(*testbed.squid),
        proxy_authenticator=auth,
        verify=testbed.ca_path,
    ) as client:
        r = client.get(testbed.url("/whoami", tls=True))
        assert r.status_code == 200 and "scheme=https" in r.text
        assert client.get(testbed.url("/whoami", tls=True)).status_code == 200
        assert client.connection_pool.connection_count() == 1
    assert auth.seen[0][:2] == (407, "Preemptive Authenticate")
    assert auth.seen[1][0] == 407 and auth.seen[1][2] == ["Basic"]  # squid's own challenge
    assert len(auth.seen) == 2


def test_proxies_https_connect_wrong_password(testbed: Testbed):
    auth = fastnet.BasicAuthenticator(testbed.squid_user, "wrong")
    with make_client(
        trust_env=False,
        proxy=fastnet.Proxy.http(*testbed.squid),
        proxy_authenticator=auth,
        verify=testbed.ca_path,
    ) as client:
        with pytest.raises(fastnet.ProxyError) as info:
            client.get(testbed.url("/whoami", tls=True))
        assert info.value.status_code == 407
        assert info.value.proxy == fastnet.Proxy.http(*testbed.squid)
        assert "wrong" not in str(info.value)
        assert_pool_clean(client)


# --------------------------------------------------------------------------------------- SOCKS5


def test_proxies_socks5_without_auth(testbed: Testbed):
    proxy = fastnet.Proxy.socks(*testbed.socks5)
    with make_client(trust_env=False, proxy=proxy, verify=testbed.ca_path) as client:
        r = client.get(testbed.url("/whoami", host="127.0.0.3"))
        assert r.status_code == 200 and "addr=127.0.0.3" in r.text
        assert route_of(r).proxy is proxy and route_of(r).proxy.type is fastnet.ProxyType.SOCKS
        r = client.get(testbed.url("/whoami", host="127.0.0.3", tls=True))
        assert r.status_code == 200 and "scheme=https" in r.text
        assert client.get(testbed.url("/whoami", host="127.0.0.3")).status_code == 200
        assert client.connection_pool.connection_count() == 2  # one http, one https; reused


def test_proxies_socks5_with_auth(testbed: Testbed):
    proxy = fastnet.Proxy.socks(
        *testbed.socks5_auth, username=testbed.socks_user, password=testbed.socks_password
    )
    with make_client(trust_env=False, proxy=proxy, verify=testbed.ca_path) as client:
        assert client.get(testbed.url("/whoami", tls=True)).status_code == 200
    url = f"socks5h://{testbed.socks_user}:{testbed.socks_password}@127.0.0.1:{testbed.socks5_auth[1]}"
    with make_client(trust_env=False, proxy=url) as client:
        assert client.get(testbed.url("/whoami")).status_code == 200


def test_proxies_socks5_auth_missing_or_wrong(testbed: Testbed):
    with make_client(trust_env=False, proxy=fastnet.Proxy.socks(*testbed.socks5_auth)) as client:
        with pytest.raises(fastnet.ProxyError) as info:
            client.get(testbed.url("/whoami"))
        assert "requires authentication" in str(info.value)
        assert info.value.proxy == fastnet.Proxy.socks(*testbed.socks5_auth)
    wrong = fastnet.Proxy.socks(*testbed.socks5_auth, username=testbed.socks_user, password="not-it")
    with make_client(trust_env=False, proxy=wrong) as client:
        with pytest.raises(fastnet.ProxyError) as info:
            client.get(testbed.url("/whoami"))
        assert "rejected" in str(info.value) and "not-it" not in str(info.value)


def test_proxies_socks5_remote_dns(testbed: Testbed):
    dns = RefusingDns()
    with make_client(trust_env=False, proxy=fastnet.Proxy.socks(*testbed.socks5), dns=dns) as client:
        r = client.get(f"http://localhost:{testbed.http_port}/whoami")
        assert r.status_code == 200 and "host=localhost" in r.text
        assert "<unresolved>" in str(r.route)
    assert dns.asked == []  # dante resolved "localhost"


def test_proxies_socks5_local_dns(testbed: Testbed):
    # socks5:// (not socks5h://): the client resolves, with its own Dns, and sends the IP
    dns = MapDns({"origin.test": ["127.0.0.2"]})
    proxy = fastnet.Proxy.from_url(f"socks5://127.0.0.1:{testbed.socks5[1]}")
    assert not proxy.remote_dns
    with make_client(trust_env=False, proxy=proxy, dns=dns) as client:
        r = client.get(f"http://origin.test:{testbed.http_port}/whoami")
        assert r.status_code == 200 and "addr=127.0.0.2" in r.text and "host=origin.test" in r.text
        assert route_of(r).socket_address == ("127.0.0.2", testbed.http_port)
    assert dns.asked == ["origin.test"]


def test_proxies_socks5_ipv6(testbed: Testbed):
    proxy = fastnet.Proxy.socks("::1", testbed.socks5[1])
    with make_client(trust_env=False, proxy=proxy, verify=testbed.ca_path) as client:
        r = client.get(testbed.url("/whoami", host="::1"))
        assert r.status_code == 200 and "addr=::1" in r.text
        r = client.get(testbed.url("/whoami", host="::1", tls=True))
        assert r.status_code == 200 and "scheme=https" in r.text


def test_proxies_http_proxy_over_ipv6(testbed: Testbed):
    proxy = fastnet.Proxy.http("::1", testbed.squid_open[1])
    with make_client(trust_env=False, proxy=proxy, verify=testbed.ca_path) as client:
        assert via_squid(client.get(testbed.url("/whoami", host="::1")))
        assert "scheme=https" in client.get(testbed.url("/whoami", host="::1", tls=True)).text


def test_proxies_socks4_through_dante(testbed: Testbed):
    # dante speaks SOCKS4 as well (IPv4 targets; it rejects SOCKS4a names, which is a clear ProxyError)
    dns = RefusingDns()
    with make_client(
        trust_env=False, proxy=fastnet.Proxy.socks(*testbed.socks5, version=4), dns=dns
    ) as client:
        r = client.get(testbed.url("/whoami", host="127.0.0.2"))
        assert r.status_code == 200 and "addr=127.0.0.2" in r.text
        with pytest.raises(fastnet.ProxyError) as info:
            client.get(f"http://localhost:{testbed.http_port}/whoami")
        assert "SOCKS4 reply 91" in str(info.value)
    assert dns.asked == []


# --------------------------------------------------------------------------------------- overrides


def test_proxies_per_request_override_shares_the_pool(testbed: Testbed):
    squid = fastnet.Proxy.http(*testbed.squid_open)
    socks = fastnet.Proxy.socks(*testbed.socks5)
    url = testbed.url("/whoami")
    with make_client(trust_env=False) as client:
        direct = client.get(url)
        assert route_of(direct).proxy.is_direct and not via_squid(direct)
        through_squid = client.get(url, proxy=squid)
        assert via_squid(through_squid) and route_of(through_squid).proxy == squid
        through_socks = client.get(url, proxy=socks)
        assert route_of(through_socks).proxy == socks
        assert client.connection_pool.connection_count() == 3
        # the same three connections are reused, whichever order the proxies come in
        for proxy in (socks, None, squid, socks):
            r = client.get(url, proxy=proxy)
            assert r.status_code == 200
        call = client.new_call(fastnet.Request("GET", url, proxy=squid))
        with call.execute() as r:
            assert via_squid(r)
        assert client.connection_pool.connection_count() == 3
        # a sibling shares the pool too
        sibling = client.with_options(read_timeout=5)
        assert via_squid(sibling.get(url, proxy=squid))
        assert client.connection_pool.connection_count() == 3


def test_proxies_no_proxy_disables_the_client_proxy(testbed: Testbed, monkeypatch):
    refused = fastnet.Proxy.http(*testbed.refused)  # nothing listens there
    with make_client(trust_env=False, proxy=refused) as client:
        r = client.get(testbed.url("/whoami"), proxy=fastnet.Proxy.NO_PROXY)
        assert r.status_code == 200 and route_of(r).proxy.is_direct
        with pytest.raises(fastnet.ConnectError):
            client.get(testbed.url("/whoami"))
    monkeypatch.setenv("http_proxy", f"http://{testbed.refused[0]}:{testbed.refused[1]}")
    with make_client(trust_env=True, proxy=fastnet.Proxy.NO_PROXY) as client:
        r = client.get(testbed.url("/whoami"))
        assert r.status_code == 200 and route_of(r).proxy.is_direct


def _clear_proxy_env(monkeypatch: Any) -> None:
    for name in ("http_proxy", "https_proxy", "all_proxy", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)
    monkeypatch.delenv("REQUEST_METHOD", raising=False)


def test_proxies_env_selector_read_once_per_client(testbed: Testbed, monkeypatch):
    _clear_proxy_env(monkeypatch)
    squid = f"http://{testbed.squid_open[0]}:{testbed.squid_open[1]}"
    monkeypatch.setenv("http_proxy", squid)
    monkeypatch.setenv("https_proxy", squid)
    monkeypatch.setenv("no_proxy", "127.0.0.2,127.0.0.3/32")
    with make_client(trust_env=True, verify=testbed.ca_path) as client:
        # change the environment after the client was built: it must not notice
        monkeypatch.setenv("http_proxy", f"http://{testbed.refused[0]}:{testbed.refused[1]}")
        monkeypatch.setenv("no_proxy", "")
        r = client.get(testbed.url("/whoami"))
        assert via_squid(r)
        r = client.get(testbed.url("/whoami", tls=True))
        assert route_of(r).requires_tunnel
        for host in ("127.0.0.2", "127.0.0.3"):  # a host and a CIDR range in no_proxy
            r = client.get(testbed.url("/whoami", host=host))
            assert route_of(r).proxy.is_direct and not via_squid(r)
        # a sibling keeps the selector (and so the environment it read)
        assert via_squid(client.with_options(read_timeout=3).get(testbed.url("/whoami")))
    with make_client(trust_env=True) as fresh:  # a new client reads the new environment
        with pytest.raises(fastnet.ConnectError):
            fresh.get(testbed.url("/whoami"))
        assert fresh.get(testbed.url("/whoami"), proxy=fastnet.Proxy.NO_PROXY).status_code == 200
    with make_client(trust_env=False) as ignoring:
        assert route_of(ignoring.get(testbed.url("/whoami"))).proxy.is_direct


def test_proxies_env_lowercase_wins(testbed: Testbed, monkeypatch):
    _clear_proxy_env(monkeypatch)
    monkeypatch.setenv("HTTP_PROXY", f"http://{testbed.refused[0]}:{testbed.refused[1]}")
    monkeypatch.setenv("http_proxy", f"http://{testbed.squid_open[0]}:{testbed.squid_open[1]}")
    with make_client(trust_env=True) as client:
        assert via_squid(client.get(testbed.url("/whoami")))
    _clear_proxy_env(monkeypatch)
    monkeypatch.setenv("all_proxy", f"socks5h://{testbed.socks5[0]}:{testbed.socks5[1]}")
    with make_client(trust_env=True) as client:
        r = client.get(testbed.url("/whoami"))
        assert route_of(r).proxy == fastnet.Proxy.socks(*testbed.socks5)


# --------------------------------------------------------------------------------------- HTTPS proxy


class TlsTerminator:
    """An HTTPS proxy for the tests: TLS from the client is terminated here (the testbed's certificate)
    and the plain bytes relayed to squid, so squid does the proxying. One thread per connection, each
    bounded in time; every socket is closed on ``close()``."""

    def __init__(self, testbed: Testbed, upstream: tuple[str, int], host: str = "127.0.0.1") -> None:
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(testbed.cert_path, testbed.key_path)
        self.upstream = upstream
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.listener = socket.socket(family, socket.SOCK_STREAM)
        self.listener.bind((host, 0))
        self.listener.listen(16)
        self.listener.settimeout(0.05)
        self.address = self.listener.getsockname()[:2]
        self.stop = threading.Event()
        self.connections = 0
        self.resumed: list[bool | None] = []  # per handshake: whether it resumed a TLS session
        self.threads: list[threading.Thread] = []
        self.accepter = threading.Thread(target=self._accept, daemon=True)
        self.accepter.start()

    def _accept(self) -> None:
        deadline = time.monotonic() + 60
        while not self.stop.is_set() and time.monotonic() < deadline:
            try:
                conn, _ = self.listener.accept()
            except (TimeoutError, OSError):
                continue
            self.connections += 1
            thread = threading.Thread(target=self._relay, args=(conn,), daemon=True)
            self.threads.append(thread)
            thread.start()

    def _relay(self, raw: socket.socket) -> None:
        tls = upstream = None
        try:
            raw.settimeout(5)
            tls = self.context.wrap_socket(raw, server_side=True)
            self.resumed.append(tls.session_reused)
            upstream = socket.create_connection(self.upstream, timeout=5)
            with selectors.DefaultSelector() as sel:
                sel.register(tls, selectors.EVENT_READ, "down")
                sel.register(upstream, selectors.EVENT_READ, "up")
                deadline = time.monotonic() + 30
                while not self.stop.is_set() and time.monotonic() < deadline:
                    ready = [key.data for key, _ in sel.select(0.05)]
                    if tls.pending():
                        ready.append("down")
                    if "down" in ready:
                        data = tls.recv(65536)
                        if not data:
                            return
                        upstream.sendall(data)
                    if "up" in ready:
                        data = upstream.recv(65536)
                        if not data:
                            return
                        tls.sendall(data)
        except (OSError, ssl.SSLError):
            return
        finally:
            for sock in (upstream, tls, raw):
                if sock is not None:
                    sock.close()

    def close(self) -> None:
        self.stop.set()
        self.accepter.join(2)
        for thread in self.threads:
            thread.join(2)
        self.listener.close()

    def __enter__(self) -> TlsTerminator:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def test_proxies_https_proxy_http_origin(testbed: Testbed):
    with TlsTerminator(testbed, testbed.squid_open) as terminator:
        proxy = fastnet.Proxy.https(*terminator.address)
        assert proxy.tls and proxy.scheme == "https"
        with make_client(trust_env=False, proxy=proxy, verify=testbed.ca_path) as client:
            for _ in range(3):
                r = client.get(testbed.url("/whoami", host="127.0.0.2"))
                assert r.status_code == 200 and "addr=127.0.0.2" in r.text and via_squid(r)
            assert client.connection_pool.connection_count() == 1
            r = client.get(testbed.url("/whoami"))  # another origin is another Address (and connection)
            assert r.status_code == 200 and "addr=127.0.0.1" in r.text
            assert client.connection_pool.connection_count() == 2
        assert terminator.connections == 2


def test_proxies_https_proxy_https_origin_tls_inside_tls(testbed: Testbed):
    with TlsTerminator(testbed, testbed.squid_open) as terminator:
        proxy = fastnet.Proxy.https(*terminator.address)
        with make_client(trust_env=False, proxy=proxy, verify=testbed.ca_path) as client:
            r = client.get(testbed.url("/whoami", tls=True))
            assert r.status_code == 200 and "scheme=https" in r.text
            assert route_of(r).requires_tunnel
            big = client.get(testbed.url("/1m.bin", tls=True))
            assert big.content == (Path(testbed.www) / "1m.bin").read_bytes()
            for _ in range(3):
                assert client.get(testbed.url("/whoami", tls=True)).status_code == 200
            assert client.connection_pool.connection_count() == 1
            with client.stream("GET", testbed.url("/1m.bin", tls=True)) as streamed:
                assert sum(len(chunk) for chunk in streamed.iter_bytes()) == 1 << 20
        assert terminator.connections == 1


def test_proxies_tls_inside_tls_resumes_both_sessions(testbed: Testbed):
    # a new connection through an HTTPS proxy resumes the proxy's session and, inside it, the origin's
    seen: list[tuple[bool, bool]] = []

    def network(chain: fastnet.Chain) -> fastnet.Response:
        assert chain.connection is not None
        sock = chain.connection.sock
        seen.append((bool(sock.session_reused), bool(sock.outer.session_reused)))
        return chain.proceed(chain.request)

    with TlsTerminator(testbed, testbed.squid_open) as terminator:
        proxy = fastnet.Proxy.https(*terminator.address)
        pool = fastnet.ConnectionPool(max_idle_connections=0)  # every request on a new connection
        with make_client(
            trust_env=False,
            proxy=proxy,
            verify=testbed.ca_path,
            connection_pool=pool,
            network_interceptors=[network],
        ) as client:
            for _ in range(3):
                assert client.get(testbed.url("/whoami", tls=True)).status_code == 200
            origin = fastnet.URL(testbed.url("/", tls=True))
            assert set(client._core.connector.tls_sessions) == {
                (str(terminator.address[0]), int(terminator.address[1])),
                (origin.host, origin.port),
            }
        assert terminator.connections == 3
    assert terminator.resumed == [False, True, True]
    assert seen == [(False, False), (True, True), (True, True)]


def test_proxies_tls_inside_tls_survives_the_idle_health_check(testbed: Testbed):
    with TlsTerminator(testbed, testbed.squid_open) as terminator:
        with make_client(
            trust_env=False, proxy=fastnet.Proxy.https(*terminator.address), verify=testbed.ca_path
        ) as client:
            assert client.get(testbed.url("/whoami", tls=True)).status_code == 200
            time.sleep(1.2)  # idle longer than the pool's probe threshold: the socket is checked
            assert client.get(testbed.url("/whoami", tls=True)).status_code == 200
            assert client.connection_pool.connection_count() == 1
        assert terminator.connections == 1


def test_proxies_https_proxy_with_auth_through_tls(testbed: Testbed):
    with TlsTerminator(testbed, testbed.squid) as terminator:
        auth = fastnet.BasicAuthenticator(testbed.squid_user, testbed.squid_password)
        proxy = fastnet.Proxy.https(*terminator.address)
        with make_client(
            trust_env=False, proxy=proxy, proxy_authenticator=auth, verify=testbed.ca_path
        ) as client:
            assert client.get(testbed.url("/whoami", tls=True)).status_code == 200
            r = client.get(testbed.url("/whoami"))
            assert r.status_code == 200 and via_squid(r)


def test_proxies_https_proxy_untrusted_certificate(testbed: Testbed):
    with TlsTerminator(testbed, testbed.squid_open) as terminator:
        with make_client(trust_env=False, proxy=fastnet.Proxy.https(*terminator.address)) as client:
            with pytest.raises(fastnet.TlsVerificationError):
                client.get(testbed.url("/whoami", tls=True))
            assert_pool_clean(client)


def test_proxies_https_proxy_407_close_reconnects_over_tls(testbed: Testbed):
    # terminator (TLS to the proxy) in front of a scripted proxy: 407 + Connection: close, so the
    # second CONNECT needs a new socket, and TLS to the proxy again, before TLS inside TLS to the origin
    with MockServer(tls=True) as scripted:
        scripted.enqueue(
            MockResponse(407, headers={"Proxy-Authenticate": 'Basic realm="p"', "Connection": "close"}),
            MockResponse(200, tunnel=True),
            MockResponse(200, body=b"inside"),
        )

        class Reactive:
            def authenticate(self, route: Any, response: Any) -> Any:
                if response.reason == "Preemptive Authenticate":
                    return None
                return fastnet.BasicAuthenticator("puser", "ppass").authenticate(route, response)

        # the terminator's certificate comes from the testbed CA, the origin's from the mock's: trust both
        context = scripted.client_ssl_context()
        context.load_verify_locations(testbed.ca_path)
        with TlsTerminator(testbed, ("127.0.0.1", scripted.port)) as terminator:
            with make_client(
                trust_env=False,
                proxy=fastnet.Proxy.https(*terminator.address),
                proxy_authenticator=Reactive(),
                verify=context,
            ) as client:
                r = client.get("https://127.0.0.2:4443/x")
                assert r.text == "inside"
            assert terminator.connections == 2
        first, second, inner = (scripted.take_request() for _ in range(3))
        assert first.header("Proxy-Authorization") is None and second.header("Proxy-Authorization")
        assert first.connection_index != second.connection_index
        assert inner.tls and inner.target == "/x"
