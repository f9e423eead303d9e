"""BridgeInterceptor: the headers it adds to requests (Host, framing, Content-Type, Connection,
Accept-Encoding, User-Agent, Cookie) and what it does to responses (transparent gunzip only when it
asked for gzip, Set-Cookie into the jar)."""

from __future__ import annotations

import gzip
import io
from collections.abc import Iterator
from typing import Any

import pytest

import fastnet
from fastnet._internal.http1.decoders import ACCEPT_ENCODING
from fastnet.testing import MockResponse, MockServer, SocketPolicy
from tests.support.clients import assert_pool_clean, make_fast_client
from tests.support.fakes import FakeDns

pytestmark = pytest.mark.both_clients


def test_bridge_default_headers(server: MockServer) -> None:
    server.enqueue(MockResponse(200))
    with make_fast_client() as client:
        client.get(server.url("/"))
    rec = server.take_request()
    assert rec.headers[0] == ("Host", f"127.0.0.1:{server.port}")
    assert rec.header("user-agent") == f"fastnet/{fastnet.__version__}"
    assert rec.header("accept-encoding") == ACCEPT_ENCODING
    assert rec.header("connection") == "keep-alive"
    assert rec.header("content-length") is None and rec.header("transfer-encoding") is None


def test_bridge_user_headers_kept_and_defaults_added(server: MockServer) -> None:
    server.enqueue(MockResponse(200))
    with make_fast_client() as client:
        client.get(server.url("/"), headers=[("X-A", "1"), ("X-A", "2"), ("Host", "virtual.test")])
    rec = server.take_request()
    assert rec.header_values("x-a") == ["1", "2"]
    assert rec.header_values("host") == ["virtual.test"]
    assert (
        rec.header(
            "user-agent",
        )
        is not None
        and rec.header("accept-encoding") == ACCEPT_ENCODING
    )


def test_bridge_host_for_a_name(server: MockServer) -> None:
    server.enqueue(MockResponse(200))
    with make_fast_client(dns=FakeDns({"app.test": ["127.0.0.1"]})) as client:
        client.get(server.url("/", host="app.test"))
    assert server.take_request().header("host") == f"app.test:{server.port}"


def test_bridge_content_length_for_known_bodies(server: MockServer) -> None:
    server.enqueue(MockResponse(200), MockResponse(200))
    with make_fast_client() as client:
        client.post(server.url("/"), body=b"12345")
        client.put(server.url("/"), body=io.BytesIO(b"abc"))
    assert server.take_request().header("content-length") == "5"
    rec = server.take_request()
    assert rec.header("content-length") == "3" and rec.body == b"abc" and not rec.chunked


def test_bridge_wrong_user_content_length_replaced(server: MockServer) -> None:
    server.enqueue(MockResponse(200))
    with make_fast_client() as client:
        client.post(server.url("/"), body=b"12345", headers={"Content-Length": "99"})
    rec = server.take_request()
    assert rec.header_values("content-length") == ["5"] and rec.body == b"12345"


def test_bridge_chunked_for_unknown_length(server: MockServer) -> None:
    def gen() -> Iterator[bytes]:
        yield b"a"
        yield b""
        yield b"bc"

    server.enqueue(MockResponse(200))
    with make_fast_client() as client:
        client.post(server.url("/"), body=gen())
    rec = server.take_request()
    assert rec.chunked and rec.header("transfer-encoding") == "chunked"
    assert rec.header("content-length") is None
    assert rec.body == b"abc"


def test_bridge_user_content_length_on_an_unknown_length_body_is_sent_unframed(server: MockServer) -> None:
    server.enqueue(MockResponse(200), MockResponse(200))
    with make_fast_client() as client:
        client.post(server.url("/"), headers={"Content-Length": "5"}, body=iter([b"hel", b"lo"]))
        # the same on a reused connection: the next request's bytes must not run into this body
        client.post(server.url("/"), headers={"Content-Length": "2"}, body=iter([b"ok"]))
    first, second = server.take_request(), server.take_request()
    assert first.header_values("content-length") == ["5"] and first.header("transfer-encoding") is None
    assert first.body == b"hello" and not first.chunked
    assert second.body == b"ok" and second.connection_index == first.connection_index


@pytest.mark.parametrize(("chunks", "says"), [([b"hel"], "was 3 bytes"), ([b"hello", b"!"], "is longer")])
def test_bridge_body_that_disagrees_with_its_content_length_fails(
    server: MockServer, chunks: list[bytes], says: str
) -> None:
    server.enqueue(MockResponse(200, policy=SocketPolicy.NO_RESPONSE), MockResponse(200))
    with make_fast_client() as client:
        with pytest.raises(fastnet.ProtocolError, match=says):
            client.post(server.url("/"), headers={"Content-Length": "5"}, body=iter(chunks))
        assert client.connection_pool.connection_count() == 0  # a half-sent request never reuses a socket


def test_bridge_transfer_encoding_without_a_body_is_dropped(server: MockServer) -> None:
    server.enqueue(MockResponse(200))
    with make_fast_client(read_timeout=2) as client:
        assert client.post(server.url("/"), headers={"Transfer-Encoding": "chunked"}).status_code == 200
    rec = server.take_request()
    assert rec.header("transfer-encoding") is None and rec.header_values("content-length") == ["0"]


def test_bridge_network_interceptor_cannot_send_two_framings(server: MockServer) -> None:
    def both(chain: fastnet.Chain) -> fastnet.Response:
        request = chain.request
        return chain.proceed(request.replace(headers=request.headers.add("Transfer-Encoding", "chunked")))

    server.enqueue(MockResponse(200))
    with make_fast_client(network_interceptors=[both]) as client:
        with pytest.raises(ValueError, match="both Content-Length and Transfer-Encoding"):
            client.post(server.url("/"), body=b"abc")
    assert server.request_count == 0


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH"])
def test_bridge_empty_body_methods_send_content_length_zero(server: MockServer, method: str) -> None:
    server.enqueue(MockResponse(200))
    with make_fast_client() as client:
        client.request(method, server.url("/"))
    assert server.take_request().header("content-length") == "0"


def test_bridge_content_type(server: MockServer) -> None:
    server.enqueue(MockResponse(200), MockResponse(200), MockResponse(200), MockResponse(200))
    with make_fast_client() as client:
        client.post(server.url("/"), body="text")
        client.post(server.url("/"), body="text", headers={"Content-Type": "text/csv"})
        client.post(server.url("/"), json={})
        client.post(server.url("/"), body=b"bytes")
    assert server.take_request().header("content-type") == "text/plain; charset=utf-8"
    assert server.take_request().header_values("content-type") == ["text/csv"]
    assert server.take_request().header_values("content-type") == ["application/json"]
    assert server.take_request().header("content-type") is None


def test_bridge_connection_header_respected(server: MockServer) -> None:
    server.enqueue(MockResponse(200))
    with make_fast_client() as client:
        client.get(server.url("/"), headers={"Connection": "close"})
        assert server.take_request().header_values("connection") == ["close"]
        assert client.connection_pool.connection_count() == 0


def test_bridge_gzip_transparently_decoded(server: MockServer) -> None:
    payload = b"hello gzip " * 1000
    server.enqueue(MockResponse(200, headers={"Content-Encoding": "gzip"}, body=gzip.compress(payload)))
    with make_fast_client() as client:
        r = client.get(server.url("/"))
        assert r.content == payload
        assert "content-encoding" not in r.headers and "content-length" not in r.headers
        assert client.connection_pool.idle_connection_count() == 1


def test_bridge_gzip_streamed_and_chunked(server: MockServer) -> None:
    payload = bytes(range(256)) * 400
    server.enqueue(
        MockResponse(
            200,
            headers={"Content-Encoding": "gzip"},
            body=gzip.compress(payload),
            chunked=True,
            chunk_size=1000,
        )
    )
    with make_fast_client() as client:
        with client.stream("GET", server.url("/")) as r:
            assert b"".join(r.iter_bytes()) == payload


def test_bridge_gzip_not_decoded_when_user_asked_for_it(server: MockServer) -> None:
    compressed = gzip.compress(b"raw please")
    server.enqueue(MockResponse(200, headers={"Content-Encoding": "gzip"}, body=compressed))
    with make_fast_client() as client:
        r = client.get(server.url("/"), headers={"Accept-Encoding": "gzip"})
        assert r.content == compressed and r.headers["content-encoding"] == "gzip"
    assert server.take_request().header_values("accept-encoding") == ["gzip"]


def test_bridge_no_gzip_for_range_requests(server: MockServer) -> None:
    server.enqueue(MockResponse(206, body=b"part"))
    with make_fast_client() as client:
        client.get(server.url("/"), headers={"Range": "bytes=0-3"})
    assert server.take_request().header("accept-encoding") is None


def test_bridge_gzip_head_response(server: MockServer) -> None:
    server.enqueue(MockResponse(200, headers={"Content-Encoding": "gzip", "Content-Length": "40"}))
    with make_fast_client() as client:
        r = client.head(server.url("/"))
        assert r.content == b"" and client.connection_pool.idle_connection_count() == 1


def test_bridge_invalid_gzip_is_protocol_error(server: MockServer) -> None:
    server.enqueue(MockResponse(200, headers={"Content-Encoding": "gzip"}, body=b"not gzip at all"))
    with make_fast_client() as client:
        with pytest.raises(fastnet.ProtocolError, match="gzip"):
            client.get(server.url("/"))
        assert client.connection_pool.connection_count() == 0


def test_bridge_user_agent(server: MockServer) -> None:
    server.enqueue(MockResponse(200), MockResponse(200))
    with make_fast_client(user_agent="crawler/2.0") as client:
        client.get(server.url("/"))
        client.get(server.url("/"), headers={"User-Agent": "mine"})
    assert server.take_request().header("user-agent") == "crawler/2.0"
    assert server.take_request().header_values("user-agent") == ["mine"]


def test_bridge_cookies_saved_and_sent(server: MockServer) -> None:
    jar = fastnet.MemoryCookieJar()
    dns = FakeDns({"app.test": ["127.0.0.1"], "origin.test": ["127.0.0.1"]})
    server.enqueue(
        MockResponse(200, headers=[("Set-Cookie", "sid=abc; Path=/"), ("Set-Cookie", "deep=1; Path=/deep")]),
        MockResponse(200),
        MockResponse(200),
        MockResponse(200),
    )
    with make_fast_client(cookie_jar=jar, dns=dns) as client:
        client.get(server.url("/login", host="app.test"))
        assert server.take_request().header("cookie") is None
        client.get(server.url("/deep/x", host="app.test"))
        assert server.take_request().header("cookie") == "deep=1; sid=abc"
        client.get(server.url("/other", host="app.test"))
        assert server.take_request().header("cookie") == "sid=abc"
        client.get(server.url("/", host="origin.test"))  # another host: no cookies
        assert server.take_request().header("cookie") is None
    assert len(jar) == 2


def test_bridge_cookie_expiry_deletes(server: MockServer) -> None:
    jar = fastnet.MemoryCookieJar()
    server.enqueue(
        MockResponse(200, headers={"Set-Cookie": "a=1"}),
        MockResponse(200, headers={"Set-Cookie": "a=; Max-Age=0"}),
        MockResponse(200),
    )
    with make_fast_client(cookie_jar=jar) as client:
        client.get(server.url("/"))
        client.get(server.url("/"))
        client.get(server.url("/"))
    assert [server.take_request().header("cookie") for _ in range(3)] == [None, "a=1", None]


def test_bridge_custom_cookie_jar_protocol(server: MockServer) -> None:
    class Jar:
        def __init__(self) -> None:
            self.saved: list[tuple[str, list[str]]] = []

        def load_for(self, url: fastnet.URL) -> list[fastnet.Cookie]:
            from fastnet.cookies import parse_set_cookie

            cookie = parse_set_cookie("k=v", url)
            assert cookie is not None
            return [cookie]

        def save_from_response(self, url: fastnet.URL, cookies: list[fastnet.Cookie]) -> None:
            self.saved.append((str(url), [c.name for c in cookies]))

    jar = Jar()
    server.enqueue(MockResponse(200, headers={"Set-Cookie": "new=1"}))
    with make_fast_client(cookie_jar=jar) as client:
        client.get(server.url("/p"))
    assert server.take_request().header("cookie") == "k=v"
    assert jar.saved == [(server.url("/p"), ["new"])]


class _HostileJar:
    """A jar that hands back a cookie whose value would add a header line on the wire."""

    def __init__(self, value: str) -> None:
        self.value = value

    def load_for(self, url: fastnet.URL) -> list[Any]:
        cookie = fastnet.Cookie("sid", "1", url.host)
        object.__setattr__(cookie, "value", self.value)  # past the constructor's checks
        return [cookie]

    def save_from_response(self, url: fastnet.URL, cookies: list[fastnet.Cookie]) -> None:
        pass


@pytest.mark.parametrize("value", ["1\r\nX-Injected: yes", "1\nX-Injected: yes", "x\u2028y", "\x00"])
def test_bridge_cookie_from_a_jar_is_checked_before_the_wire(server: MockServer, value: str) -> None:
    server.enqueue(MockResponse(200, body=b"should not be asked"), MockResponse(200, body=b"next"))
    with make_fast_client(cookie_jar=_HostileJar(value)) as client:
        with pytest.raises(ValueError, match="sid") as info:
            client.get(server.url("/p"))
        assert "X-Injected" not in str(info.value)
        assert_pool_clean(client)
    with make_fast_client() as clean:
        assert clean.get(server.url("/next")).text == "should not be asked"
    recorded = server.take_request()  # the first request on the wire is the clean client's
    assert recorded.target == "/next" and recorded.header("cookie") is None
    assert b"X-Injected" not in recorded.raw_head


def test_bridge_no_cookies_default(server: MockServer) -> None:
    server.enqueue(MockResponse(200, headers={"Set-Cookie": "a=1"}), MockResponse(200))
    with make_fast_client(cookie_jar=fastnet.NO_COOKIES) as client:
        client.get(server.url("/"))
        client.get(server.url("/"))
    server.take_request()
    assert server.take_request().header("cookie") is None
