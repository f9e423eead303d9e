"""The asyncio connect path through proxies: SOCKS5 (with and without username/password) and SOCKS4 through
the testbed's dante, SOCKS4a through a scripted server, CONNECT through squid (credentials, the 407
flow, an https origin inside the tunnel), the HTTPS proxy case (TLS to the proxy, TLS to the origin
inside it) through a TLS relay in front of squid, and the CONNECT faults squid cannot produce (a 407
that closes, a 407 loop, asyncio authenticators) against ``MockServer``. Every test runs on both loops.
"""

from __future__ import annotations

import asyncio
import base64
import struct
import sys
from typing import Any

import pytest

import fastnet
from fastnet._internal.connection.tls import build_ssl_context
from fastnet.exceptions import ProxyError, TlsError
from fastnet.proxy import Proxy
from fastnet.testing import MockResponse, MockServer
from tests.support.async_support import (
    Relay,
    User,
    client_sockets,
    fetch,
    find,
    make_connector,
    serve,
)
from tests.support.fakes import FakeDns, RecordingListener
from tests.support.testbed import Testbed

PROXY_CREDS = "Basic " + base64.b64encode(b"puser:ppass").decode()


# --------------------------------------------------------------------------------------- SOCKS


@pytest.mark.testbed
@pytest.mark.parametrize("remote_dns", [True, False])
def test_async_proxies_socks5_through_dante(run: Any, testbed: Testbed, remote_dns: bool) -> None:
    async def main() -> None:
        dns = FakeDns({"origin.test": ["127.0.0.2"]})
        proxy = Proxy.socks(*testbed.socks5, remote_dns=remote_dns)
        connector = make_connector(proxy=proxy, dns=dns)
        user = User(connector.pool)
        host = "localhost" if remote_dns else "origin.test"  # dante resolves localhost from its hosts file
        url = f"http://{host}:{testbed.http_port}/whoami"
        conn = await find(connector, user, url)
        assert conn.remote_address == testbed.socks5 and not conn.http_proxy
        status, body = await fetch(conn, url)
        assert status == 200 and f"host={host}".encode() in body
        assert (b"addr=127.0.0.2" in body) == (not remote_dns)
        assert dns.lookups == ([] if remote_dns else ["origin.test"])
        user.done(False)

    run(main)


@pytest.mark.testbed
def test_async_proxies_socks5_with_auth_and_tls_origin(run: Any, testbed: Testbed) -> None:
    async def main() -> None:
        proxy = Proxy.socks(
            *testbed.socks5_auth, username=testbed.socks_user, password=testbed.socks_password
        )
        connector = make_connector(proxy=proxy, ssl_context=build_ssl_context(testbed.ca_path))
        user = User(connector.pool)
        url = testbed.url("/whoami", tls=True)
        conn = await find(connector, user, url)
        assert conn.is_tls and conn.tls_version is not None
        status, body = await fetch(conn, url)
        assert status == 200 and b"scheme=https" in body
        user.done(False)
        # wrong and missing credentials: the blocking handshake's errors
        for bad in (
            Proxy.socks(*testbed.socks5_auth),
            Proxy.socks(*testbed.socks5_auth, username="x", password="not-it"),
        ):
            connector = make_connector(proxy=bad)
            with pytest.raises(ProxyError) as info:
                await find(connector, User(connector.pool), testbed.url("/whoami"))
            assert info.value.proxy == bad
            assert "requires authentication" in str(info.value) or "rejected" in str(info.value)
            await asyncio.sleep(0)  # the aborted transport closes its socket in the next iteration
            assert client_sockets(*testbed.socks5_auth) == 0

    run(main)


@pytest.mark.testbed
def test_async_proxies_socks_proxy_given_by_name(run: Any, testbed: Testbed) -> None:
    async def main() -> None:
        dns = FakeDns({"socks.test": ["127.0.0.1"]})
        proxy = Proxy.socks("socks.test", testbed.socks5[1])
        connector = make_connector(proxy=proxy, dns=dns)
        user = User(connector.pool)
        url = testbed.url("/whoami", host="127.0.0.3")
        conn = await find(connector, user, url)
        assert conn.remote_address == ("127.0.0.1", testbed.socks5[1])
        assert dns.lookups == ["socks.test"]
        assert (await fetch(conn, url))[0] == 200
        user.done(False)
        unknown = make_connector(proxy=Proxy.socks("nowhere.test", 1080), dns=dns)
        with pytest.raises(ProxyError, match="cannot resolve SOCKS proxy"):
            await find(unknown, User(unknown.pool), url)

    run(main)


@pytest.mark.testbed
def test_async_proxies_socks4_through_dante(run: Any, testbed: Testbed) -> None:
    async def main() -> None:
        connector = make_connector(proxy=Proxy.socks(*testbed.socks5, version=4))
        user = User(connector.pool)
        url = testbed.url("/whoami", host="127.0.0.2")
        conn = await find(connector, user, url)
        status, body = await fetch(conn, url)
        assert status == 200 and b"addr=127.0.0.2" in body
        user.done(False)
        # dante refuses SOCKS4a names: the blocking handshake's error
        with pytest.raises(ProxyError, match=r"SOCKS4 reply 91"):
            await find(connector, User(connector.pool), f"http://localhost:{testbed.http_port}/")

    run(main)


def test_async_proxies_socks4a_sends_the_name(run: Any) -> None:
    async def main() -> None:
        seen: list[bytes] = []

        async def socks4a(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            head = await reader.readexactly(8)
            user_id = await reader.readuntil(b"\x00")
            name = await reader.readuntil(b"\x00")
            seen.extend([head, user_id, name])
            writer.write(b"\x00\x5a" + b"\x00" * 6)
            await reader.readuntil(b"\r\n\r\n")  # then, as the origin behind the proxy, an answer
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            await reader.read()

        server = await serve(socks4a)
        try:
            connector = make_connector(proxy=Proxy.socks(*server.address, version=4, username="me"))
            user = User(connector.pool)
            url = "http://named.test:8080/"
            conn = await find(connector, user, url)
            assert await fetch(conn, url) == (200, b"ok")
            user.done(False)
            assert seen == [
                b"\x04\x01" + struct.pack("!H", 8080) + b"\x00\x00\x00\x01",
                b"me\x00",
                b"named.test\x00",
            ]
        finally:
            await server.close()

    run(main)


def test_async_proxies_socks5_bytes_past_the_reply_go_to_the_parser(run: Any) -> None:
    async def main() -> None:
        async def socks5(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reader.readexactly(3)
            writer.write(b"\x05\x00")
            await reader.readexactly(10)
            # the CONNECT reply and the first bytes of the origin's answer arrive together
            writer.write(
                b"\x05\x00\x00\x01" + b"\x00" * 6 + b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfirst"
            )
            await reader.read()

        server = await serve(socks5)
        try:
            connector = make_connector(proxy=Proxy.socks(*server.address))
            user = User(connector.pool)
            conn = await find(connector, user, "http://10.0.0.1:80/")
            parser = conn.parser
            assert parser.read_head(False)[0] == 200  # already there: no request needed to read it
            assert parser.read_body() == b"first"
            user.done(False)
        finally:
            await server.close()

    run(main)


# --------------------------------------------------------------------------------------- CONNECT


@pytest.mark.testbed
def test_async_proxies_connect_through_squid_with_credentials(run: Any, testbed: Testbed) -> None:
    async def main() -> None:
        proxy = Proxy.http(*testbed.squid, testbed.squid_user, testbed.squid_password)
        events = RecordingListener()
        connector = make_connector(proxy=proxy, ssl_context=build_ssl_context(testbed.ca_path))
        user = User(connector.pool, events)
        url = testbed.url("/whoami", tls=True)
        conn = await find(connector, user, url)
        assert conn.route.requires_tunnel and conn.is_tls and not conn.http_proxy
        assert conn.remote_address == testbed.squid
        status, body = await fetch(conn, url)
        assert status == 200 and b"scheme=https" in body
        user.done(False)
        assert events.names()[:6] == [
            "proxy_select_start",
            "proxy_select_end",
            "connect_start",
            "secure_connect_start",
            "secure_connect_end",
            "connect_end",
        ]
        # plain http through the same proxy: absolute form, the proxy's credentials on the connection
        plain = User(connector.pool)
        url = testbed.url("/whoami", host="127.0.0.2")
        conn = await find(connector, plain, url)
        assert conn.http_proxy and conn.proxy_authorization == proxy.authorization
        conn.write(
            f"GET {url} HTTP/1.1\r\nHost: 127.0.0.2:{testbed.http_port}\r\n"
            f"Proxy-Authorization: {conn.proxy_authorization}\r\n\r\n".encode()
        )
        conn.set_timeouts(5.0, 5.0)
        while (head := conn.parser.read_head(False)) is None:
            assert await conn.fill()
        assert head[0] == 200 and any(n.lower() == "via" and "fastnet-squid" in v for n, v in head[3])
        plain.done(False)

    run(main)


@pytest.mark.testbed
def test_async_proxies_squid_407_then_the_authenticator(run: Any, testbed: Testbed) -> None:
    basic = fastnet.BasicAuthenticator(testbed.squid_user, testbed.squid_password)
    asked: list[str] = []

    class AsyncNotPreemptive:
        async def authenticate(self, route: Any, response: Any) -> Any:
            asked.append(response.reason)
            await asyncio.sleep(0)
            if response.reason == "Preemptive Authenticate":
                return None
            return basic.authenticate(route, response)

    async def main() -> None:
        connector = make_connector(
            proxy=Proxy.http(*testbed.squid),
            proxy_authenticator=AsyncNotPreemptive(),
            ssl_context=build_ssl_context(testbed.ca_path),
        )
        user = User(connector.pool)
        url = testbed.url("/whoami", tls=True)
        conn = await find(connector, user, url)
        status, body = await fetch(conn, url)
        assert status == 200 and b"scheme=https" in body
        user.done(False)
        assert asked[0] == "Preemptive Authenticate" and len(asked) == 2  # then squid's real 407

    run(main)


@pytest.mark.testbed
def test_async_proxies_https_proxy_tls_inside_tls(run: Any, testbed: Testbed) -> None:
    async def main() -> None:
        relay = Relay(testbed.squid_open, testbed.cert_path, testbed.key_path)
        address = await relay.start()
        try:
            events = RecordingListener()
            proxy = Proxy.https(*address)
            connector = make_connector(proxy=proxy, ssl_context=build_ssl_context(testbed.ca_path))
            user = User(connector.pool, events)
            url = testbed.url("/whoami", tls=True)
            if sys.version_info < (3, 11) and type(asyncio.get_running_loop()).__module__.startswith(
                "asyncio"
            ):
                with pytest.raises(TlsError, match="this event loop cannot run TLS inside TLS"):
                    await find(connector, user, url)
                return
            conn = await find(connector, user, url)
            assert conn.route.requires_tunnel and conn.is_tls
            status, body = await fetch(conn, url)
            assert status == 200 and b"scheme=https" in body
            big_url = testbed.url("/1m.bin", tls=True)
            status, big = await fetch(conn, big_url)
            assert status == 200 and len(big) == 1 << 20
            user.done(False)
            names = events.names()
            assert names.count("secure_connect_start") == names.count("secure_connect_end") == 2
            # an http origin through the HTTPS proxy: TLS to the proxy only, absolute form
            plain = User(connector.pool)
            url = testbed.url("/whoami", host="127.0.0.2")
            conn = await find(connector, plain, url)
            assert conn.http_proxy and conn.is_tls
            status, body = await fetch(conn, url, absolute=True)
            assert status == 200 and b"addr=127.0.0.2" in body
            plain.done(False)
        finally:
            await relay.close()

    run(main)


def tunnel_after_407(close: bool) -> tuple[list[Any], MockServer]:
    proxy_server = MockServer(tls=True)
    proxy_server.start()
    headers = [("Proxy-Authenticate", 'Basic realm="p"')]
    if close:
        headers.append(("Connection", "close"))
    proxy_server.enqueue(
        MockResponse(407, headers=headers, body=b"auth first"),
        MockResponse(200, tunnel=True),
        MockResponse(200, body=b"inside"),
    )
    return headers, proxy_server


@pytest.mark.parametrize("close", [True, False])
def test_async_proxies_407_then_200_reconnecting_when_the_proxy_closes(run: Any, close: bool) -> None:
    _, proxy_server = tunnel_after_407(close)
    basic = fastnet.BasicAuthenticator("puser", "ppass")

    def not_preemptive(route: Any, response: Any) -> Any:  # a plain function works as well
        if response.reason == "Preemptive Authenticate":
            return None
        return basic.authenticate(route, response)

    async def main() -> None:
        connector = make_connector(
            proxy=Proxy.http("127.0.0.1", proxy_server.port),
            proxy_authenticator=not_preemptive,
            ssl_context=proxy_server.client_ssl_context(),
        )
        user = User(connector.pool)
        url = "https://127.0.0.2:4443/x"
        conn = await find(connector, user, url)
        assert await fetch(conn, url) == (200, b"inside")
        user.done(False)
        await asyncio.sleep(0)
        assert client_sockets("127.0.0.1", proxy_server.port) == 0

    try:
        run(main)
        first, second, inner = (proxy_server.take_request() for _ in range(3))
        assert first.method == second.method == "CONNECT"
        assert first.header("Proxy-Authorization") is None
        assert second.header("Proxy-Authorization") == PROXY_CREDS
        assert (first.connection_index != second.connection_index) == close
        assert inner.connection_index == second.connection_index and inner.tls
    finally:
        proxy_server.shutdown()


def test_async_proxies_407_forever_stops_after_21_attempts(run: Any) -> None:
    class Counting:
        def __init__(self) -> None:
            self.calls = 0

        async def authenticate(self, route: Any, response: Any) -> Any:
            self.calls += 1
            token = base64.b64encode(f"user:try{self.calls}".encode()).decode()
            return response.request.replace(
                headers=response.request.headers.set("Proxy-Authorization", f"Basic {token}")
            )

    with MockServer() as proxy_server:
        proxy_server.default_response = MockResponse(
            407, headers={"Proxy-Authenticate": 'Basic realm="loop"'}, body=b"again"
        )
        auth = Counting()

        async def main() -> None:
            connector = make_connector(
                proxy=Proxy.http("127.0.0.1", proxy_server.port), proxy_authenticator=auth
            )
            with pytest.raises(ProxyError) as info:
                await find(connector, User(connector.pool), "https://127.0.0.2:4443/")
            assert "Too many tunnel connections attempted: 21" in str(info.value)
            assert info.value.status_code == 407
            assert connector.pool.connection_count() == 0
            await asyncio.sleep(0)
            assert client_sockets("127.0.0.1", proxy_server.port) == 0

        run(main)
        assert proxy_server.request_count == 21
        assert proxy_server.connection_count == 1
        assert auth.calls == 21


@pytest.mark.parametrize("status", [403, 502])
def test_async_proxies_refused_tunnel_is_the_blocking_error(run: Any, status: int) -> None:
    with MockServer() as proxy_server:
        proxy_server.enqueue(MockResponse(status, body=b"no tunnel"), MockResponse(status, body=b"no tunnel"))

        async def main() -> None:
            proxy = Proxy.http("127.0.0.1", proxy_server.port)
            connector = make_connector(proxy=proxy)
            with pytest.raises(ProxyError) as info:
                await find(connector, User(connector.pool), "https://127.0.0.2:4443/")
            blocking = make_connector(proxy=proxy, blocking=True)
            from tests.support.async_support import find_sync, in_thread

            def sync() -> BaseException:
                try:
                    find_sync(blocking, User(blocking.pool), "https://127.0.0.2:4443/")
                except ProxyError as exc:
                    return exc
                raise AssertionError("connected")

            assert str(info.value) == str(await in_thread(sync))
            assert info.value.status_code == status and info.value.proxy == proxy

        run(main)


def test_async_proxies_authenticator_that_raises(run: Any) -> None:
    class Broken:
        async def authenticate(self, route: Any, response: Any) -> Any:
            raise RuntimeError("authenticator bug")

    with MockServer() as proxy_server:

        async def main() -> None:
            connector = make_connector(
                proxy=Proxy.http("127.0.0.1", proxy_server.port), proxy_authenticator=Broken()
            )
            with pytest.raises(ProxyError) as info:
                await find(connector, User(connector.pool), "https://127.0.0.2:4443/")
            assert "authenticator bug" in str(info.value)
            assert isinstance(info.value.__cause__, RuntimeError)
            await asyncio.sleep(0)
            assert client_sockets("127.0.0.1", proxy_server.port) == 0

        run(main)
        assert proxy_server.request_count == 0
