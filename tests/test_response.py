"""Response (content, text, json, streaming, close, raise_for_status, history), through the real client
against MockServer where I/O is involved."""

from __future__ import annotations

import array
import functools
import gzip
import io
import time
import tracemalloc
import zlib

import brotli
import pytest
import zstandard

import fastnet
from fastnet.testing import MockResponse, MockServer, SocketPolicy
from tests.support.clients import make_fast_client
from tests.support.twins import Twins

pytestmark = pytest.mark.both_clients


def test_response_built_by_hand() -> None:
    req = fastnet.Request("GET", "http://h/x")
    headers = {"Content-Type": "text/plain; charset=latin-1"}
    r = fastnet.Response(201, headers=headers, content=b"caf\xe9", request=req)
    assert r.status_code == 201 and r.reason == "Created"
    assert r.content == b"caf\xe9" and r.text == "café"
    assert r.url == req.url and r.request is req and r.history == [] and r.prior_response is None
    assert r.protocol == "HTTP/1.1"
    assert list(r.iter_bytes(2)) == [b"ca", b"f\xe9"]
    with pytest.raises(ValueError, match="status_code"):
        fastnet.Response(42)


def test_response_str_subclass_reason_protocol_and_headers(twins: Twins) -> None:
    class Plain(str):
        pass

    response = twins("fastnet.response")
    r = response.Response(
        200, headers={Plain("X-A"): Plain("1")}, reason=Plain("Fine"), protocol=Plain("HTTP/1.0")
    )
    assert (r.reason, r.protocol, r.headers.items()) == ("Fine", "HTTP/1.0", [("X-A", "1")])
    assert type(r.reason) is str and type(r.protocol) is str and r.header(Plain("x-a")) == "1"
    with pytest.raises(TypeError, match="reason must be a str"):
        response.Response(200, reason=b"OK")


def test_response_json_and_text(server: MockServer, fast_client: fastnet.Client) -> None:
    server.enqueue(MockResponse(200, headers={"Content-Type": "application/json"}, body=b'{"a": "\xc3\xa9"}'))
    r = fast_client.get(server.url("/"))
    assert r.json() == {"a": "é"} and r.text == '{"a": "é"}'
    assert r.reason == "OK" and r.protocol == "HTTP/1.1"
    assert str(r.url) == server.url("/") and r.request is not None and r.request.method == "GET"


def test_response_raise_for_status(server: MockServer, fast_client: fastnet.Client) -> None:
    server.enqueue(MockResponse(404), MockResponse(503), MockResponse(204))
    r = fast_client.get(server.url("/missing"))
    assert r.status_code == 404  # a status is not an error
    with pytest.raises(fastnet.HTTPStatusError, match="404") as info:
        r.raise_for_status()
    assert info.value.response is r
    with pytest.raises(fastnet.HTTPStatusError, match="Server error"):
        fast_client.get(server.url("/")).raise_for_status()
    ok = fast_client.get(server.url("/"))
    assert ok.raise_for_status() is ok


def test_response_stream_iter_bytes(server: MockServer, fast_client: fastnet.Client) -> None:
    body = b"x" * 100_000
    server.enqueue(MockResponse(200, body=body, chunked=True, chunk_size=7000))
    with fast_client.stream("GET", server.url("/")) as r:
        assert not r.is_closed
        got = list(r.iter_bytes(10_000))
    assert b"".join(got) == body and all(len(c) == 10_000 for c in got)
    assert fast_client.connection_pool.idle_connection_count() == 1


def test_response_iter_lines(server: MockServer, fast_client: fastnet.Client) -> None:
    server.enqueue(MockResponse(200, body=b"one\r\ntwo\nthr", chunked=True, chunk_size=3))
    server.enqueue(MockResponse(200, body=b"a\nb\n"))
    with fast_client.stream("GET", server.url("/")) as r:
        assert list(r.iter_lines()) == ["one", "two", "thr"]
    with fast_client.stream("GET", server.url("/")) as r:
        assert list(r.iter_lines()) == ["a", "b"]


def test_response_iter_lines_splits_only_at_line_ends(
    server: MockServer, fast_client: fastnet.Client
) -> None:
    """``\\r\\n``, ``\\r`` and ``\\n`` end a line, also when a ``\\r\\n`` is cut between two pieces;
    the other characters ``str.splitlines`` splits at (``\\v``, ``\\f``, U+0085, U+2028) are data."""
    body = "a\x0bb\r\nc\rd\n\x85e\u2028f\r\n\r\ng\x0ch\r".encode()
    expected = ["a\x0bb", "c", "d", "\x85e\u2028f", "", "g\x0ch"]
    headers = {"Content-Type": "text/plain; charset=utf-8"}
    for chunk_size in (1, 2, 3, None):
        server.enqueue(MockResponse(200, headers=headers, body=body, chunked=True, chunk_size=chunk_size))
        with fast_client.stream("GET", server.url("/")) as r:
            assert list(r.iter_lines()) == expected, chunk_size


def test_response_iter_lines_long_line_is_linear(server: MockServer, fast_client: fastnet.Client) -> None:
    """A 16 MiB line in 16 KiB chunks is joined once it ends, not copied at every chunk (which took
    seconds); the bound only proves it does not hang."""
    line = b"x" * (16 << 20)
    server.enqueue(MockResponse(200, body=line + b"\r\nend", chunked=True, chunk_size=16 << 10))
    start = time.monotonic()
    with fast_client.stream("GET", server.url("/")) as r:
        lines = list(r.iter_lines())
    assert time.monotonic() - start < 4
    assert len(lines) == 2 and len(lines[0]) == len(line) and lines[1] == "end"


@pytest.mark.parametrize("chunk_size", [1000, None])
def test_response_iter_lines_longer_than_max_body_size(server: MockServer, chunk_size: int | None) -> None:
    """A line of ``max_body_size`` characters is yielded, one more is ``BodyTooLargeError``, whether it
    spans chunks or comes in one; the response is closed."""
    body = b"a" * 4000 + b"\n" + b"b" * 4001 + b"\nnever"
    server.enqueue(MockResponse(200, body=body, chunked=True, chunk_size=chunk_size))
    with make_fast_client(max_body_size=4000) as client, client.stream("GET", server.url("/")) as r:
        lines = r.iter_lines()
        assert next(lines) == "a" * 4000
        with pytest.raises(fastnet.BodyTooLargeError, match="max_body_size=4000") as info:
            next(lines)
        assert r.is_closed and info.value.phase == "read"


def test_response_iter_bytes_chunk_size_is_linear(server: MockServer, fast_client: fastnet.Client) -> None:
    """Regrouping 1 MiB decoded pieces into 16-byte ones, and 16 KiB chunks into one 32 MiB piece, costs
    a copy or two per byte (slicing what is left of a piece per chunk, or adding each piece to a bytes
    object, took many seconds); the bounds only prove it does not hang."""
    body = bytes(range(256)) * (64 << 10)
    server.enqueue(MockResponse(200, headers={"Content-Encoding": "gzip"}, body=gzip.compress(body, 1)))
    server.enqueue(MockResponse(200, body=body * 2, chunked=True, chunk_size=16 << 10))
    start = time.monotonic()
    with fast_client.stream("GET", server.url("/")) as r:
        pieces = list(r.iter_bytes(16))
    assert time.monotonic() - start < 8
    assert len(pieces) == len(body) // 16 and b"".join(pieces) == body
    start = time.monotonic()
    with fast_client.stream("GET", server.url("/")) as r:
        pieces = list(r.iter_bytes(32 << 20))
    assert time.monotonic() - start < 8
    assert len(pieces) == 1 and pieces[0] == body * 2


@functools.lru_cache
def _zeros(coding: str) -> bytes:
    """64 MiB of zeros compressed with ``coding``: a few KB that decode to 64 MiB."""
    zeros = bytes(64 << 20)
    if coding == "gzip":
        return gzip.compress(zeros, 1)
    if coding == "deflate":
        return zlib.compress(zeros, 1)
    if coding == "br":
        return bytes(brotli.compress(zeros, quality=1))
    return zstandard.ZstdCompressor(level=1).compress(zeros)


@pytest.mark.parametrize("coding", ["gzip", "deflate", "br", "zstd"])
def test_response_decoded_pieces_are_at_most_1_mib(
    server: MockServer, fast_client: fastnet.Client, coding: str
) -> None:
    """Every coding's decoder hands ``iter_bytes()`` pieces of at most 1 MiB, and a 64 MiB bomb streams
    through in bounded memory (brotli's output limit is only a hint: its pieces were 2 MiB, and the
    stream then ended short)."""
    server.enqueue(MockResponse(200, headers={"Content-Encoding": coding}, body=_zeros(coding)))
    total = largest = 0
    tracemalloc.start()
    try:
        with fast_client.stream("GET", server.url("/")) as r:
            for piece in r.iter_bytes():
                total += len(piece)
                largest = max(largest, len(piece))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert total == 64 << 20 and largest <= 1 << 20
    assert peak < 16 << 20


def test_response_content_after_stream_read(server: MockServer, fast_client: fastnet.Client) -> None:
    server.enqueue(MockResponse(200, body=b"hello"))
    r = fast_client.stream("GET", server.url("/"))
    try:
        assert r.content == b"hello" and r.content == b"hello"
    finally:
        r.close()
    assert r.is_closed


def test_response_head_has_no_body(server: MockServer, fast_client: fastnet.Client) -> None:
    server.enqueue(MockResponse(200, body=b"12345"))
    r = fast_client.head(server.url("/"))
    assert r.status_code == 200 and r.content == b"" and r.headers["content-length"] == "5"
    assert fast_client.connection_pool.idle_connection_count() == 1


@pytest.mark.parametrize("status", [204, 304])
def test_response_bodiless_statuses(server: MockServer, fast_client: fastnet.Client, status: int) -> None:
    server.enqueue(MockResponse(status), MockResponse(200, body=b"next"))
    assert fast_client.get(server.url("/")).content == b""
    assert fast_client.get(server.url("/")).content == b"next"
    assert server.take_request().connection_index == server.take_request().connection_index


def test_response_informational_skipped(server: MockServer, fast_client: fastnet.Client) -> None:
    server.enqueue(MockResponse(200, body=b"final", informational=[(103, {"Link": "</s>"})]))
    r = fast_client.get(server.url("/"))
    assert r.status_code == 200 and r.content == b"final"


def test_response_http10_read_until_close(server: MockServer, fast_client: fastnet.Client) -> None:
    raw = b"HTTP/1.0 200 OK\r\nX: y\r\n\r\nall of it"
    server.enqueue(MockResponse(raw=raw, policy=SocketPolicy.CLOSE_AFTER_RESPONSE))
    r = fast_client.get(server.url("/"))
    assert r.protocol == "HTTP/1.0" and r.content == b"all of it"
    assert fast_client.connection_pool.connection_count() == 0


def test_response_trailers_and_chunk_extensions(server: MockServer, fast_client: fastnet.Client) -> None:
    raw = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;ext=1\r\nabc\r\n0\r\nX-T: 1\r\n\r\n"
    server.enqueue(MockResponse(raw=raw), MockResponse(200, body=b"again"))
    assert fast_client.get(server.url("/")).content == b"abc"
    assert fast_client.get(server.url("/")).content == b"again"
    assert server.take_request().connection_index == server.take_request().connection_index


def test_response_expect_continue(server: MockServer, fast_client: fastnet.Client) -> None:
    server.enqueue(MockResponse(200, body=b"ok"))
    r = fast_client.post(server.url("/"), headers={"Expect": "100-continue"}, body=b"x" * 70_000)
    assert r.content == b"ok"
    assert len(server.take_request().body) == 70_000


# -- reading into the caller's buffer: readinto, iter_into, write_to ---------------------------------


def _read_all_into(r: fastnet.Response, size: int) -> bytes:
    buffer = bytearray(size)
    out = bytearray()
    while n := r.readinto(buffer):
        out += buffer[:n]
    assert r.readinto(buffer) == 0  # the end stays the end
    return bytes(out)


@pytest.mark.parametrize("size", [7, 1000, 65536, 1 << 20])
def test_response_readinto_content_length(server: MockServer, fast_client: fastnet.Client, size: int) -> None:
    """A Content-Length body, with buffers smaller than what came with the head (the rest is given back
    to the parser) and larger than the whole body; the connection is pooled at the end."""
    body = bytes(range(256)) * 1200
    server.enqueue(MockResponse(200, body=body), MockResponse(200, body=b"next"))
    with fast_client.stream("GET", server.url("/")) as r:
        assert _read_all_into(r, size) == body
    assert fast_client.get(server.url("/")).content == b"next"
    assert server.take_request().connection_index == server.take_request().connection_index


@pytest.mark.parametrize("coding", ["chunked", "gzip"])
def test_response_readinto_decoded_pieces(
    server: MockServer, fast_client: fastnet.Client, coding: str
) -> None:
    """Chunked and gzip bodies are copied in from their decoded pieces; a piece larger than the buffer is
    handed out over several calls."""
    body = b"".join(b"%06d," % i for i in range(20_000))
    if coding == "gzip":
        response = MockResponse(200, body=gzip.compress(body), headers={"Content-Encoding": "gzip"})
    else:
        response = MockResponse(200, body=body, chunked=True, chunk_size=9000)
    server.enqueue(response)
    with fast_client.stream("GET", server.url("/")) as r:
        assert _read_all_into(r, 1000) == body
    assert fast_client.connection_pool.idle_connection_count() == 1


def test_response_readinto_small_buffer_is_linear(server: MockServer, fast_client: fastnet.Client) -> None:
    """A 1 MiB decoded piece read into a 64-byte buffer is handed out from one view of it, not by copying
    what is left of it at every call (which made a 16 MiB gzip body take many seconds); the bound only
    proves it does not hang."""
    body = bytes(16 << 20)  # zeros: every decoded piece is a full 1 MiB
    server.enqueue(MockResponse(200, body=gzip.compress(body, 1), headers={"Content-Encoding": "gzip"}))
    start = time.monotonic()
    with fast_client.stream("GET", server.url("/")) as r:
        got = _read_all_into(r, 64)
    assert time.monotonic() - start < 6
    assert got == body


def test_response_iter_into_and_write_to(server: MockServer, fast_client: fastnet.Client) -> None:
    body = b"abcdefghij" * 30_000
    server.enqueue(*[MockResponse(200, body=body)] * 3)
    buffer = bytearray(4096)
    with fast_client.stream("GET", server.url("/")) as r:
        pieces = [bytes(view) for view in r.iter_into(buffer)]
    assert b"".join(pieces) == body and max(map(len, pieces)) <= 4096
    with fast_client.stream("GET", server.url("/")) as r:
        for view in r.iter_into(buffer):
            assert view.obj is buffer  # the caller's memory, not a copy
    sink = io.BytesIO()
    with fast_client.stream("GET", server.url("/")) as r:
        assert r.write_to(sink, buffer_size=10_000) == len(body)
    assert sink.getvalue() == body
    assert fast_client.connection_pool.idle_connection_count() == 1


def test_response_write_to_and_iter_into_a_body_in_memory(
    server: MockServer, fast_client: fastnet.Client
) -> None:
    """A body already read (client.get) is written out and iterated from memory; readinto refuses it
    with a message that says what to do instead."""
    server.enqueue(MockResponse(200, body=b"in memory"))
    r = fast_client.get(server.url("/"))
    sink = io.BytesIO()
    assert r.write_to(sink) == 9 and sink.getvalue() == b"in memory"
    assert [bytes(v) for v in r.iter_into(bytearray(4))] == [b"in m", b"emor", b"y"]
    with pytest.raises(RuntimeError, match=r"client\.stream"):
        r.readinto(bytearray(10))


def test_response_readinto_buffers(server: MockServer, fast_client: fastnet.Client) -> None:
    """Any writable bytes-like object (an int array is filled byte-wise); read-only or empty ones are
    refused with a typed error before anything is read."""
    body = bytes(range(200))
    server.enqueue(MockResponse(200, body=body))
    with fast_client.stream("GET", server.url("/")) as r:
        with pytest.raises(TypeError, match="writable"):
            r.readinto(b"read-only")
        with pytest.raises(TypeError):
            r.readinto("text")  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="at least one byte"):
            next(iter(r.iter_into(bytearray(0))))
        with pytest.raises(ValueError, match="buffer_size"):
            r.write_to(io.BytesIO(), buffer_size=0)
        ints = array.array("i", [0] * 100)  # 400 bytes
        assert r.readinto(ints) == 200
        assert ints.tobytes()[:200] == body
        assert r.readinto(ints) == 0


def test_response_readinto_truncated_body(server: MockServer, fast_client: fastnet.Client) -> None:
    raw = b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" + b"x" * 70_000
    server.enqueue(MockResponse(raw=raw, policy=SocketPolicy.CLOSE_AFTER_RESPONSE))
    with fast_client.stream("GET", server.url("/")) as r:
        with pytest.raises(fastnet.ProtocolError, match="missing"):
            _read_all_into(r, 16384)
    assert fast_client.connection_pool.connection_count() == 0


def test_response_readinto_read_timeout(server: MockServer) -> None:
    server.enqueue(MockResponse(200, body=b"x" * 100_000, policy=SocketPolicy.STALL_BODY))
    with make_fast_client(read_timeout=0.3) as client:
        with client.stream("GET", server.url("/")) as r:
            with pytest.raises(fastnet.ReadTimeout):
                _read_all_into(r, 8192)
        assert client.connection_pool.connection_count() == 0
