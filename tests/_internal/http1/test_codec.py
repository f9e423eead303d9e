"""The HTTP/1.1 codec's decisions apart from any socket (``fastnet._internal.http1.codec``), both twins:
the request head (origin and absolute form, proxy credentials only ever to an HTTP proxy, the Bridge's
cached heads matching the bytes the server received), the body's framing, chunks, ``Expect:
100-continue``, what a parsed response head means (``open_response``) and the typed error for a failed
socket operation (``map_io_error``)."""

from __future__ import annotations

import ssl
import types
from typing import Any

import pytest

import fastnet
from fastnet._internal.http1.parser import BODY_CHUNKED, BODY_LENGTH, BODY_NONE, BODY_UNTIL_CLOSE
from fastnet.exceptions import (
    CallTimeout,
    CanceledError,
    ConnectionClosedError,
    NetworkError,
    ProtocolError,
    ReadTimeout,
    WriteTimeout,
)
from fastnet.testing import MockResponse, MockServer
from tests.support.clients import make_fast_client
from tests.support.twins import Twins


@pytest.fixture
def codec(twins: Twins) -> types.ModuleType:
    return twins("fastnet._internal.http1.codec")


def request(
    method: str = "GET", url: str = "http://h.test:8080/p?q=1", headers: Any = None, body: Any = None
):
    return fastnet.Request(method, url, headers=headers, body=body)


# -- request_head -------------------------------------------------------------------------------------


def test_codec_request_head_origin_form(codec: types.ModuleType) -> None:
    head = codec.request_head(request(headers=[("Host", "h.test:8080"), ("X-A", "1")]), False, None)
    assert head == b"GET /p?q=1 HTTP/1.1\r\nHost: h.test:8080\r\nX-A: 1\r\n\r\n"


def test_codec_request_head_through_an_http_proxy_is_absolute_with_the_proxys_credentials(
    codec: types.ModuleType,
) -> None:
    head = codec.request_head(request(headers={"Host": "h.test:8080"}), True, "Basic cHJveHk=")
    assert head == (
        b"GET http://h.test:8080/p?q=1 HTTP/1.1\r\n"
        b"Host: h.test:8080\r\nProxy-Authorization: Basic cHJveHk=\r\n\r\n"
    )
    own = request(headers={"Proxy-Authorization": "Basic b3du"})  # an interceptor's own is kept
    assert codec.request_head(own, True, "Basic cHJveHk=").count(b"Proxy-Authorization") == 1


def test_codec_request_head_never_gives_proxy_credentials_to_an_origin(codec: types.ModuleType) -> None:
    leaky = request(headers={"Proxy-Authorization": "Basic c2VjcmV0", "X": "1"})
    assert b"Proxy-Authorization" not in codec.request_head(leaky, False, "Basic c2VjcmV0")
    tunneled = request(url="https://h.test/p", headers={"Proxy-Authorization": "Basic c2VjcmV0"})
    head = codec.request_head(tunneled, True, "Basic c2VjcmV0")  # https through a proxy: a tunnel
    assert head.startswith(b"GET /p HTTP/1.1\r\n") and b"Proxy-Authorization" not in head


def test_codec_request_head_of_the_bridge_is_the_head_the_server_received(
    codec: types.ModuleType, server: MockServer
) -> None:
    seen: list[fastnet.Request] = []

    def record(chain: fastnet.Chain) -> fastnet.Response:
        seen.append(chain.request)
        return chain.proceed(chain.request)

    server.default_response = MockResponse(200, body=b"ok")
    with make_fast_client(network_interceptors=[record]) as client:
        for path in ("/a", "/a", "/b?x=1"):  # the second /a comes from the Bridge's cache of heads
            client.get(server.url(path)).close()
    for sent in seen:
        assert codec.request_head(sent, False, None) == server.take_request().raw_head


# -- framing -------------------------------------------------------------------------------------------


def test_codec_request_framing(codec: types.ModuleType) -> None:
    assert codec.request_framing(request()) == codec.NO_BODY
    assert codec.request_framing(request("POST", headers={"Content-Length": "3"}, body=b"abc")) == 3
    assert codec.request_framing(request("POST", headers={"Content-Length": "0"})) == 0
    chunked = request("POST", headers={"Transfer-Encoding": "Chunked"}, body=iter([b"a"]))
    assert codec.request_framing(chunked) == codec.CHUNKED
    assert (codec.NO_BODY, codec.CHUNKED) == (-2, -1)


@pytest.mark.parametrize(
    "headers, body, message",
    [
        ({"Content-Length": "3", "Transfer-Encoding": "chunked"}, b"abc", "both"),
        ({"Transfer-Encoding": "gzip"}, b"abc", "only chunked"),
        ({"Content-Length": "three"}, b"abc", "not a number"),
        ({"Content-Length": "-3"}, b"abc", "not a number"),
        ({"Content-Length": "3"}, None, "no body"),
        ({}, b"abc", "needs Content-Length"),
    ],
)
def test_codec_request_framing_refuses_headers_that_do_not_describe_the_body(
    codec: types.ModuleType, headers: dict[str, str], body: bytes | None, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        codec.request_framing(request("POST", headers=headers, body=body))


def test_codec_frame_chunk_and_the_last_chunk(codec: types.ModuleType) -> None:
    assert codec.frame_chunk(b"hello") == b"5\r\nhello\r\n"
    assert codec.frame_chunk(b"x" * 300) == b"12c\r\n" + b"x" * 300 + b"\r\n"
    assert codec.LAST_CHUNK == b"0\r\n\r\n"


def test_codec_expects_continue(codec: types.ModuleType) -> None:
    assert codec.expects_continue(request("POST", headers={"Expect": "100-Continue"}, body=b"x"))
    assert not codec.expects_continue(request("POST", headers={"Expect": "100-continue"}))  # no body
    assert not codec.expects_continue(request("POST", body=b"x"))
    assert not codec.expects_continue(request("POST", headers={"Expect": "something"}, body=b"x"))


# -- open_response -------------------------------------------------------------------------------------


def head(
    status: int = 200, headers: Any = (), mode: int = BODY_LENGTH, length: int = 2, keep_alive: bool = True
):
    return (status, "Reason", "1.1", list(headers), mode, length, keep_alive, "")


def test_codec_open_response_makes_the_response(codec: types.ModuleType) -> None:
    req = request()
    response, reusable = codec.open_response(head(headers=[("X-A", "1"), ("x-a", "2")]), req, None)
    assert (response.status_code, response.reason, response.http_version) == (200, "Reason", "HTTP/1.1")
    assert response.headers.get_all("x-a") == ["1", "2"] and response.request is req and reusable
    old: tuple[Any, ...] = (200, "OK", "1.0", [], BODY_UNTIL_CLOSE, -1, False, "")
    response, reusable = codec.open_response(old, req, None)
    assert response.http_version == "HTTP/1.0" and not reusable


def test_codec_open_response_a_request_asking_to_close_ends_the_connection(codec: types.ModuleType) -> None:
    for value in ("close", "Keep-Alive, Close"):
        _, reusable = codec.open_response(head(), request(headers={"Connection": value}), None)
        assert not reusable
    _, reusable = codec.open_response(head(), request(headers={"Connection": "keep-alive"}), None)
    assert reusable


@pytest.mark.parametrize("status", [204, 205])
def test_codec_open_response_refuses_a_body_on_204_and_205(codec: types.ModuleType, status: int) -> None:
    with pytest.raises(ProtocolError, match="non-zero Content-Length"):
        codec.open_response(head(status, length=5), request(), None)
    response, _ = codec.open_response(head(status, mode=BODY_NONE, length=0), request(), None)
    assert response.status_code == status


def test_codec_open_response_refuses_an_unsolicited_101(codec: types.ModuleType) -> None:
    switching = head(101, [("Upgrade", "websocket")], BODY_UNTIL_CLOSE, -1)
    with pytest.raises(ProtocolError, match="unsolicited 101") as raised:
        codec.open_response(switching, request(), None)
    assert raised.value.url == request().url
    asked = request(headers={"Upgrade": "websocket", "Connection": "Upgrade"})
    assert codec.open_response(switching, asked, None)[0].status_code == 101
    assert codec.open_response(head(mode=BODY_CHUNKED, length=-1), asked, None)[0].status_code == 200


# -- map_io_error --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "exc, phase, expected",
    [
        (TimeoutError("timed out"), "read", ReadTimeout),
        (TimeoutError("timed out"), "write", WriteTimeout),
        (BlockingIOError(), "read", ReadTimeout),
        (ssl.SSLWantReadError(), "read", ReadTimeout),
        (ssl.SSLWantWriteError(), "write", WriteTimeout),
        (ConnectionResetError(104, "reset"), "read", ConnectionClosedError),
        (BrokenPipeError(32, "broken pipe"), "write", ConnectionClosedError),
        (ValueError("odd"), "read", ConnectionClosedError),
    ],
)
def test_codec_map_io_error_types_the_failure(
    codec: types.ModuleType, exc: BaseException, phase: str, expected: type[NetworkError]
) -> None:
    url = request().url
    error = codec.map_io_error(exc, phase, url, False, False)
    assert type(error) is expected and error.phase == phase and error.url == url


def test_codec_map_io_error_a_canceled_call_reports_its_cancellation(codec: types.ModuleType) -> None:
    reset = ConnectionResetError(104, "reset")
    assert type(codec.map_io_error(reset, "read", None, True, False)) is CanceledError
    assert type(codec.map_io_error(reset, "write", None, True, True)) is CallTimeout
    already = ReadTimeout("read timed out", phase="read")
    assert codec.map_io_error(already, "read", None, False, False) is already  # typed already: as it is
