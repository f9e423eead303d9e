"""Request (immutable, bodies of every kind, json=, one-shot bodies), through the real client against
MockServer where I/O is involved."""

from __future__ import annotations

import enum
import io
import json

import pytest

import fastnet
from fastnet.testing import MockResponse, MockServer
from tests.support.clients import make_fast_client
from tests.support.twins import Twins

pytestmark = pytest.mark.both_clients


class Plain(str):
    pass


class Method(enum.StrEnum):
    GET = "GET"
    PURGE = "PURGE"


class Field(enum.StrEnum):
    TRACE = "X-Trace"


def test_request_fields_and_defaults() -> None:
    r = fastnet.Request("get", "http://h/p")
    assert r.method == "GET" and str(r.url) == "http://h/p" and isinstance(r.url, fastnet.URL)
    assert len(r.headers) == 0 and r.body is None


def test_request_custom_method_kept_verbatim() -> None:
    assert fastnet.Request("PROPFIND", "http://h/").method == "PROPFIND"
    assert fastnet.Request("Purge", "http://h/").method == "Purge"


@pytest.mark.parametrize("method", ["", "GE T", "GET\r\n", "G(ET"])
def test_request_bad_method_rejected(method: str) -> None:
    with pytest.raises(ValueError, match="method"):
        fastnet.Request(method, "http://h/")


def test_request_is_immutable() -> None:
    r = fastnet.Request("GET", "http://h/")
    with pytest.raises(AttributeError):
        r.method = "POST"


def test_request_replace_makes_a_copy() -> None:
    r = fastnet.Request("GET", "http://h/a", headers={"A": "1"})
    r2 = r.replace(url="http://other/b", method="POST", headers={"B": "2"}, body=b"x")
    assert r.method == "GET" and str(r.url) == "http://h/a" and r.headers == {"A": "1"} and r.body is None
    assert r2.method == "POST" and str(r2.url) == "http://other/b" and r2.headers == {"B": "2"}
    assert r2.body is not None and r2.body.content == b"x"
    assert r.replace(url=fastnet.URL("http://z/")).url.host == "z"
    with pytest.raises(TypeError):
        r.replace(nope=1)


def test_request_bad_url_raises_value_error() -> None:
    with pytest.raises(ValueError, match="scheme"):
        fastnet.Request("GET", "gopher://h/")


def test_request_body_bytes_and_str() -> None:
    b = fastnet.Request("POST", "http://h/", body=b"abc").body
    assert b is not None and b.length == 3 and not b.one_shot and b.content == b"abc"
    s = fastnet.Request("POST", "http://h/", body="é").body
    assert s is not None and s.content == "é".encode() and s.length == 2
    assert s.content_type == "text/plain; charset=utf-8"


def test_request_body_seekable_file_is_replayable() -> None:
    f = io.BytesIO(b"0123456789")
    f.seek(2)
    body = fastnet.RequestBody(f)
    assert body.length == 8 and not body.one_shot
    assert b"".join(body.chunks()) == b"23456789"
    assert b"".join(body.chunks()) == b"23456789"


def test_request_body_iterator_is_one_shot() -> None:
    body = fastnet.RequestBody(iter([b"a", b"b"]))
    assert body.length == -1 and body.one_shot
    assert b"".join(body.chunks()) == b"ab"
    with pytest.raises(RuntimeError, match="one-shot"):
        body.chunks()


def test_request_body_bad_type() -> None:
    with pytest.raises(TypeError, match="body"):
        fastnet.RequestBody(12)  # type: ignore[arg-type]


def test_request_json() -> None:
    r = fastnet.Request("POST", "http://h/", json={"a": [1, 2]})
    assert r.body is not None and json.loads(r.body.content or b"") == {"a": [1, 2]}
    assert r.headers["content-type"] == "application/json"
    with pytest.raises(ValueError, match="json"):
        fastnet.Request("POST", "http://h/", body=b"x", json={"a": 1})


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf")])
def test_request_json_refuses_nan_and_infinity(value: float) -> None:
    for payload in (value, {"a": [1, value]}):
        with pytest.raises(ValueError, match="json=.*NaN and Infinity"):
            fastnet.Request("POST", "http://h/", json=payload)


def test_request_json_nan_refused_before_sending(server: MockServer, fast_client: fastnet.Client) -> None:
    with pytest.raises(ValueError, match="json="):
        fast_client.post(server.url("/"), json={"x": float("nan")})
    with pytest.raises(ValueError, match="json="):
        fast_client.request("PUT", server.url("/"), json=[float("inf")], params={"a": "1"})
    with pytest.raises(ValueError, match="json="):
        fast_client.stream("POST", server.url("/"), json=-float("inf")).close()
    assert server.request_count == 0 and server.connection_count == 0


def test_request_str_subclass_method_url_and_headers_become_plain_str(twins: Twins) -> None:
    request = twins("fastnet.request")
    for method, expected in ((Method.GET, "GET"), (Method.PURGE, "PURGE"), (Plain("post"), "POST")):
        r = request.Request(method, Plain("http://h/x"), headers={Field.TRACE: Plain("1")})
        assert r.method == expected and type(r.method) is str and str(r.url) == "http://h/x"
        assert r.headers.items() == [("X-Trace", "1")] and type(r.headers.items()[0][0]) is str
    replaced = request.Request("GET", "http://h/").replace(method=Method.PURGE)
    assert replaced.method == "PURGE" and type(replaced.method) is str
    assert type(request.check_method(Plain("purge"))) is str


def test_request_str_subclass_method_and_headers_on_the_wire(
    server: MockServer, fast_client: fastnet.Client
) -> None:
    for _ in range(3):
        server.enqueue(MockResponse(200))
    url = Plain(server.url("/s"))
    assert fast_client.request(Method.GET, url).request.method == "GET"  # type: ignore[union-attr]
    headers: dict[str, str] = {Field.TRACE: Plain("2")}
    fast_client.request(Method.PURGE, url, headers=headers)
    fast_client.get(url, headers=[(Plain("X-Plain"), Field.TRACE)])
    recs = [server.take_request() for _ in range(3)]
    assert [r.method for r in recs] == ["GET", "PURGE", "GET"]
    assert recs[1].header("X-Trace") == "2" and recs[2].header("X-Plain") == "X-Trace"


def test_request_header_injection_rejected_before_sending(
    server: MockServer, fast_client: fastnet.Client
) -> None:
    with pytest.raises(ValueError, match="X-Evil"):
        fast_client.get(server.url("/"), headers={"X-Evil": "a\r\nInjected: 1"})
    with pytest.raises(ValueError):
        fast_client.get(server.url("/") + "\r\nInjected: 1")
    assert server.request_count == 0 and server.connection_count == 0


def test_request_bodies_sent_on_the_wire(server: MockServer, fast_client: fastnet.Client) -> None:
    for _ in range(5):
        server.enqueue(MockResponse(200))
    fast_client.post(server.url("/b"), body=b"bytes")
    fast_client.post(server.url("/s"), body="str")
    fast_client.put(server.url("/f"), body=io.BytesIO(b"file"))
    fast_client.patch(server.url("/i"), body=iter([b"it", b"er"]))
    fast_client.post(server.url("/j"), json={"k": 1})
    recs = [server.take_request() for _ in range(5)]
    assert [r.body for r in recs] == [b"bytes", b"str", b"file", b"iter", b'{"k":1}']
    assert recs[0].header("content-length") == "5"
    assert recs[3].chunked and recs[3].header("transfer-encoding") == "chunked"
    assert recs[4].header("content-type") == "application/json"


def test_request_large_body(server: MockServer, fast_client: fastnet.Client) -> None:
    data = bytes(range(256)) * 2048  # 512 KiB: larger than the single-sendall limit
    server.enqueue(MockResponse(200))
    assert fast_client.post(server.url("/"), body=data).status_code == 200
    assert server.take_request().body == data


def test_request_reiterable_body_is_replayed_on_a_redirect_and_a_retry(server: MockServer) -> None:
    server.enqueue(
        MockResponse(307, headers={"Location": "/next"}),
        MockResponse(503, headers={"Retry-After": "0"}),
        MockResponse(200),
    )
    with make_fast_client() as client:
        r = client.post(server.url("/"), body=[b"ab", b"cd"])
    assert r.status_code == 200
    bodies = [server.take_request().body for _ in range(3)]
    assert bodies == [b"abcd", b"abcd", b"abcd"]


def test_request_iterator_body_is_one_shot_not_sent_empty(server: MockServer) -> None:
    server.enqueue(MockResponse(307, headers={"Location": "/next"}), MockResponse(200))
    with make_fast_client() as client:
        r = client.post(server.url("/"), body=iter([b"ab", b"cd"]))
    assert r.status_code == 307  # the redirect is not followed with an empty body
    assert server.take_request().body == b"abcd" and server.request_count == 1
    assert (
        fastnet.RequestBody([b"x"]).one_shot is False and fastnet.RequestBody(iter([b"x"])).one_shot is True
    )
