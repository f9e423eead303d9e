"""Issue 2's "bad input" list through the real client against MockServer raw responses: every case
gets a clear, typed error, is not retried, and the connection it arrived on is never reused."""

from __future__ import annotations

import contextlib
import gzip
from collections.abc import Callable, Iterator

import pytest

import fastnet
from fastnet.testing import MockResponse, MockServer, SocketPolicy
from tests.support.clients import make_fast_client

pytestmark = pytest.mark.both_clients

CLOSE = SocketPolicy.CLOSE_AFTER_RESPONSE


@pytest.fixture
def impatient_client() -> Iterator[fastnet.Client]:
    """``fast_client`` with a 2 s read timeout: a response the client wrongly waits on fails in 2 s."""
    with make_fast_client(read_timeout=2) as c:
        yield c


def _expect_error_then_fresh_connection(
    server: MockServer,
    client: fastnet.Client,
    raw: bytes,
    error: type[Exception],
    match: str,
    policy: SocketPolicy = SocketPolicy.KEEP_OPEN,
) -> Exception:
    server.enqueue(MockResponse(raw=raw, policy=policy), MockResponse(200, body=b"good"))
    with pytest.raises(error, match=match) as info:
        client.get(server.url("/bad"))
    assert client.connection_pool.connection_count() == 0
    assert client.get(server.url("/good")).content == b"good"
    bad, good = server.take_request(), server.take_request()
    assert bad.path == "/bad" and good.path == "/good"  # the bad one was not retried
    assert good.connection_index != bad.connection_index
    return info.value


@pytest.mark.parametrize(
    ("raw", "match"),
    [
        (b"HTTP/1.1 abc OK\r\nContent-Length: 0\r\n\r\n", "abc"),
        (b"HTTX/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", "HTTX"),
        (b"garbage\r\n\r\n", "garbage"),
        (b"HTTP/1.1 20 OK\r\nContent-Length: 0\r\n\r\n", "20"),
        (b"HTTP/1.1 2000 OK\r\nContent-Length: 0\r\n\r\n", "2000"),
        (b"HTTP/3.0 200 OK\r\nContent-Length: 0\r\n\r\n", "HTTP/3.0"),
    ],
)
def test_bad_status_line(
    server: MockServer, impatient_client: fastnet.Client, raw: bytes, match: str
) -> None:
    exc = _expect_error_then_fresh_connection(server, impatient_client, raw, fastnet.ProtocolError, match)
    assert str(exc.url) == server.url("/bad")  # type: ignore[attr-defined]


def test_bad_header_line_without_colon(server: MockServer, impatient_client: fastnet.Client) -> None:
    raw = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nNoColonHere\r\n\r\n"
    _expect_error_then_fresh_connection(server, impatient_client, raw, fastnet.ProtocolError, "NoColonHere")


def test_obs_fold_is_unfolded(server: MockServer, impatient_client: fastnet.Client) -> None:
    """RFC 9112 §5.2: a user agent replaces each obs-fold with SP before using the value (as h11)."""
    raw = b"HTTP/1.1 200 OK\r\nX-Long: a\r\n  folded\r\n\tline\r\nContent-Length: 2\r\n\r\nhi"
    server.enqueue(MockResponse(raw=raw), MockResponse(200, body=b"good"))
    response = impatient_client.get(server.url("/folded"))
    assert response.headers["X-Long"] == "a folded line"
    assert response.content == b"hi"
    assert impatient_client.get(server.url("/next")).content == b"good"  # the connection was kept
    first, second = server.take_request(), server.take_request()
    assert first.connection_index == second.connection_index


def test_bad_obs_fold_before_the_first_header(server: MockServer, impatient_client: fastnet.Client) -> None:
    raw = b"HTTP/1.1 200 OK\r\n  folded\r\nContent-Length: 0\r\n\r\n"
    _expect_error_then_fresh_connection(server, impatient_client, raw, fastnet.ProtocolError, "folded|fold")


def test_bad_header_name(server: MockServer, impatient_client: fastnet.Client) -> None:
    raw = b"HTTP/1.1 200 OK\r\nBad Name: x\r\nContent-Length: 0\r\n\r\n"
    _expect_error_then_fresh_connection(server, impatient_client, raw, fastnet.ProtocolError, "Bad Name")


@pytest.mark.parametrize("size", [b"zz", b"-1", b"", b"0x10", b"fffffffffffffffffffff"])
def test_bad_chunk_size(server: MockServer, impatient_client: fastnet.Client, size: bytes) -> None:
    raw = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + size + b"\r\nabc\r\n0\r\n\r\n"
    _expect_error_then_fresh_connection(server, impatient_client, raw, fastnet.ProtocolError, "(?i)chunk")


def test_bad_chunk_missing_crlf_after_data(server: MockServer, impatient_client: fastnet.Client) -> None:
    raw = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcXX0\r\n\r\n"
    _expect_error_then_fresh_connection(
        server, impatient_client, raw, fastnet.ProtocolError, "chunk|CRLF|abcXX"
    )


def test_bad_content_length_shorter_body_then_eof(
    server: MockServer, impatient_client: fastnet.Client
) -> None:
    raw = b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly this"
    _expect_error_then_fresh_connection(
        server,
        impatient_client,
        raw,
        fastnet.ProtocolError,
        "end of stream",
        policy=SocketPolicy.CLOSE_AFTER_RESPONSE,
    )


def test_bad_eof_mid_large_body(server: MockServer, impatient_client: fastnet.Client) -> None:
    raw = b"HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n" + b"x" * 300_000
    _expect_error_then_fresh_connection(
        server,
        impatient_client,
        raw,
        fastnet.ProtocolError,
        "end of stream",
        policy=SocketPolicy.CLOSE_AFTER_RESPONSE,
    )


def test_bad_eof_mid_chunked_body(server: MockServer, impatient_client: fastnet.Client) -> None:
    raw = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10\r\nabc"
    _expect_error_then_fresh_connection(
        server,
        impatient_client,
        raw,
        fastnet.ProtocolError,
        "end of stream",
        policy=SocketPolicy.CLOSE_AFTER_RESPONSE,
    )


def test_bad_eof_mid_body_streaming(server: MockServer, impatient_client: fastnet.Client) -> None:
    raw = b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial"
    server.enqueue(MockResponse(raw=raw, policy=SocketPolicy.CLOSE_AFTER_RESPONSE))
    with impatient_client.stream("GET", server.url("/")) as r:
        with pytest.raises(fastnet.ProtocolError, match="end of stream"):
            list(r.iter_bytes())
    assert impatient_client.connection_pool.connection_count() == 0


def test_bad_eof_in_head(server: MockServer, impatient_client: fastnet.Client) -> None:
    raw = b"HTTP/1.1 200 OK\r\nContent-Len"
    _expect_error_then_fresh_connection(
        server,
        impatient_client,
        raw,
        fastnet.ProtocolError,
        "end of stream",
        policy=SocketPolicy.CLOSE_AFTER_RESPONSE,
    )


def test_bad_content_length_twice_different(server: MockServer, impatient_client: fastnet.Client) -> None:
    raw = b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd"
    _expect_error_then_fresh_connection(
        server, impatient_client, raw, fastnet.ProtocolError, "Content-Length"
    )


def test_bad_content_length_not_a_number(server: MockServer, impatient_client: fastnet.Client) -> None:
    raw = b"HTTP/1.1 200 OK\r\nContent-Length: 3x\r\n\r\nabc"
    _expect_error_then_fresh_connection(
        server, impatient_client, raw, fastnet.ProtocolError, "Content-Length"
    )


def test_bad_content_length_and_transfer_encoding(
    server: MockServer, impatient_client: fastnet.Client
) -> None:
    raw = b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"
    _expect_error_then_fresh_connection(
        server, impatient_client, raw, fastnet.ProtocolError, "Content-Length|Transfer-Encoding"
    )


def test_bad_body_longer_than_promised(server: MockServer, impatient_client: fastnet.Client) -> None:
    # the promised bytes are the body; the extra bytes make the connection unusable, so it is closed
    raw = b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabcEXTRA"
    server.enqueue(MockResponse(raw=raw), MockResponse(200, body=b"good"))
    assert impatient_client.get(server.url("/")).content == b"abc"
    assert impatient_client.connection_pool.connection_count() == 0
    assert impatient_client.get(server.url("/")).content == b"good"
    assert server.take_request().connection_index != server.take_request().connection_index


def test_bad_nonzero_content_length_on_204(server: MockServer, impatient_client: fastnet.Client) -> None:
    raw = b"HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\nhello"
    _expect_error_then_fresh_connection(server, impatient_client, raw, fastnet.ProtocolError, "204")


def test_bad_oversized_header_block(server: MockServer, impatient_client: fastnet.Client) -> None:
    headers = b"".join(b"X-Filler-%d: %s\r\n" % (i, b"v" * 1000) for i in range(300))  # ~300 KiB
    raw = b"HTTP/1.1 200 OK\r\n" + headers + b"Content-Length: 0\r\n\r\n"
    _expect_error_then_fresh_connection(
        server, impatient_client, raw, fastnet.ProtocolError, "header|line|large|long"
    )


def test_bad_oversized_header_line(server: MockServer, impatient_client: fastnet.Client) -> None:
    raw = b"HTTP/1.1 200 OK\r\nX-Huge: " + b"h" * 200_000 + b"\r\nContent-Length: 0\r\n\r\n"
    exc = _expect_error_then_fresh_connection(server, impatient_client, raw, fastnet.ProtocolError, "X-Huge")
    assert len(str(exc)) < 2000  # the offending line is quoted, truncated


def test_bad_peer_closes_without_answer(server: MockServer) -> None:
    server.enqueue(MockResponse(policy=SocketPolicy.DISCONNECT_AFTER_REQUEST))
    with fastnet.Client(trust_env=False, retry_on_connection_failure=False) as client:
        with pytest.raises(fastnet.ConnectionClosedError) as info:
            client.get(server.url("/"))
        assert client.connection_pool.connection_count() == 0
    assert str(info.value.url) == server.url("/")


def test_bad_server_never_answers(server: MockServer) -> None:
    server.enqueue(MockResponse(policy=SocketPolicy.NO_RESPONSE), MockResponse(200, body=b"good"))
    with fastnet.Client(trust_env=False, read_timeout=0.3) as client:
        with pytest.raises(fastnet.ReadTimeout):
            client.get(server.url("/"))
        assert client.connection_pool.connection_count() == 0
        assert client.get(server.url("/")).content == b"good"
    assert server.take_request().connection_index != server.take_request().connection_index


@pytest.mark.parametrize(
    "headers",
    [
        {"X-A": "v\r\nInjected: 1"},
        {"X-A": "v\nInjected: 1"},
        {"X-A": "v\rInjected: 1"},
        {"X-A": "v\x00"},
        {"X-A\r\nInjected": "v"},
        {"X-A: b": "v"},
    ],
)
def test_bad_crlf_injection_in_headers_rejected_before_sending(
    server: MockServer, impatient_client: fastnet.Client, headers: dict[str, str]
) -> None:
    with pytest.raises(ValueError, match="X-A"):
        impatient_client.get(server.url("/"), headers=headers)
    assert server.connection_count == 0 and server.request_count == 0


@pytest.mark.parametrize("suffix", ["/p\r\nInjected: 1", "/p HTTP/1.1\r\nX: y", "/?q=\n", "/\x00", "/#\r\n"])
def test_bad_crlf_injection_in_url_rejected_before_sending(
    server: MockServer, impatient_client: fastnet.Client, suffix: str
) -> None:
    with pytest.raises(ValueError, match="control character"):
        impatient_client.get(f"http://127.0.0.1:{server.port}{suffix}")
    assert server.connection_count == 0


def test_bad_injection_via_interceptor_rejected(server: MockServer) -> None:
    def evil(chain: fastnet.Chain) -> fastnet.Response:
        return chain.proceed(chain.request.replace(headers={"X-A": "1\r\nInjected: 2"}))

    with fastnet.Client(trust_env=False, network_interceptors=[evil]) as client:
        with pytest.raises(ValueError, match="X-A"):
            client.get(server.url("/"))
    assert server.request_count == 0


@pytest.mark.parametrize(
    "url", ["ftp://127.0.0.1/", "file:///etc/passwd", "gopher://h/", "mailto:a@b", "h:80"]
)
def test_bad_unknown_url_scheme(impatient_client: fastnet.Client, url: str) -> None:
    with pytest.raises(ValueError, match="scheme"):
        impatient_client.get(url)


# -- bounds on what a peer declares or compresses ---------------------------------------------------


def _peak_bytes(action: Callable[[], object]) -> int:
    """The peak of Python-level allocations while ``action`` runs (bytes objects included)."""
    import tracemalloc

    tracemalloc.start()
    try:
        with contextlib.suppress(Exception):
            action()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("declared", [99_999_999_999, 9_223_372_036_854_775_807, 3_000_000_000])
def test_exchange_declared_length_beyond_max_body_size_is_refused_unread(
    server: MockServer, declared: int
) -> None:
    server.enqueue(MockResponse(raw=b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\nab" % declared))
    with make_fast_client(read_timeout=2) as client:
        with pytest.raises(fastnet.BodyTooLargeError, match="max_body_size") as info:
            client.get(server.url("/"))
        assert isinstance(info.value, fastnet.NetworkError) and info.value.phase == "read"
        assert client.connection_pool.connection_count() == 0


@pytest.mark.parametrize("declared", [99_999_999_999, 3_000_000_000])
def test_exchange_declared_length_without_a_limit_allocates_as_bytes_arrive(
    server: MockServer, declared: int
) -> None:
    from fastnet._internal.http1.parser import PREALLOCATE

    server.enqueue(
        MockResponse(raw=b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\nab" % declared, policy=CLOSE)
    )
    with make_fast_client(read_timeout=2, max_body_size=None) as client:

        def fetch() -> None:
            with pytest.raises(fastnet.ProtocolError, match="body bytes missing"):
                client.get(server.url("/"))

        assert _peak_bytes(fetch) < PREALLOCATE + (1 << 20)


def test_exchange_large_body_grows_past_the_preallocation(server: MockServer) -> None:
    from fastnet._internal.http1.parser import PREALLOCATE

    body = bytes(range(256)) * ((PREALLOCATE * 2 + 12345) // 256)
    server.enqueue(MockResponse(200, body=body))
    with make_fast_client() as client:
        assert client.get(server.url("/")).content == body
        assert client.connection_pool.idle_connection_count() == 1  # complete: reused next time


def test_exchange_gzip_bomb_stops_at_max_body_size(server: MockServer) -> None:
    bomb = gzip.compress(bytes(64 << 20), compresslevel=9)  # 64 MiB of zeros in about 64 KiB
    server.enqueue(MockResponse(200, headers={"Content-Encoding": "gzip"}, body=bomb))
    with make_fast_client(max_body_size=8 << 20) as client:

        def fetch() -> None:
            with pytest.raises(fastnet.BodyTooLargeError, match="decoded body"):
                client.get(server.url("/"))

        assert _peak_bytes(fetch) < 24 << 20  # the limit plus one decoded piece, not 64 MiB
        assert client.connection_pool.connection_count() == 0


def test_exchange_gzip_stream_pieces_are_bounded(server: MockServer) -> None:
    from fastnet._internal._sync.exchange import DECODED_CHUNK

    bomb = gzip.compress(bytes(16 << 20), compresslevel=9)
    server.enqueue(MockResponse(200, headers={"Content-Encoding": "gzip"}, body=bomb))
    with make_fast_client() as client, client.stream("GET", server.url("/")) as r:
        sizes = [len(piece) for piece in r.iter_bytes()]
    assert sum(sizes) == 16 << 20 and max(sizes) <= DECODED_CHUNK


def test_exchange_truncated_gzip_with_matching_length_is_a_protocol_error(server: MockServer) -> None:
    whole = gzip.compress(b"hello world " * 500)
    cut = whole[:-12]  # loses the end of the deflate stream and the trailer
    server.enqueue(MockResponse(200, headers={"Content-Encoding": "gzip"}, body=cut))
    with make_fast_client() as client:
        with pytest.raises(fastnet.ProtocolError, match="truncated gzip"):
            client.get(server.url("/"))
        assert client.connection_pool.connection_count() == 0


def test_exchange_interim_responses_are_capped(server: MockServer) -> None:
    from fastnet._internal.http1.codec import MAX_INTERIM_RESPONSES

    final = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
    server.enqueue(MockResponse(raw=b"HTTP/1.1 102 Processing\r\n\r\n" * MAX_INTERIM_RESPONSES + final))
    flood = b"HTTP/1.1 102 Processing\r\n\r\n" * (MAX_INTERIM_RESPONSES + 1) + final
    server.enqueue(MockResponse(raw=flood))
    with make_fast_client() as client:
        assert client.get(server.url("/")).content == b"ok"
        with pytest.raises(fastnet.ProtocolError, match="interim"):
            client.get(server.url("/"))


def test_exchange_unsolicited_101_is_a_protocol_error(server: MockServer) -> None:
    switch = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\n"
    server.enqueue(MockResponse(raw=switch), MockResponse(raw=switch, policy=CLOSE))
    with make_fast_client() as client:
        with pytest.raises(fastnet.ProtocolError, match="unsolicited 101"):
            client.get(server.url("/"))
        asked = client.get(server.url("/"), headers={"Connection": "upgrade", "Upgrade": "websocket"})
        assert asked.status_code == 101
        assert client.connection_pool.idle_connection_count() == 0  # an upgraded socket is never reused


def test_exchange_response_sent_during_an_upload_is_returned(server: MockServer) -> None:
    """The server answers 413 without reading a large body and closes: the response, not a write error."""
    server.enqueue(
        MockResponse(
            413, headers={"Connection": "close"}, body=b"too big", policy=SocketPolicy.EXPECT_CONTINUE_REJECT
        )
    )
    chunk = b"x" * (1 << 20)
    with make_fast_client() as client:
        r = client.post(server.url("/upload"), body=iter([chunk] * 64))
        assert r.status_code == 413 and r.content == b"too big"
        assert client.connection_pool.connection_count() == 0
