"""DohDns: RFC 8484 wire handling and the JSON API against canned bytes; the JSON API over MockServer.

DohDns.alookup over fastnet.AsyncClient, on both loops: MockServer (JSON API, RFC 8484 GET and POST,
bounded answers, secrets) and the testbed's dnsdist; every outcome held against the blocking lookup's."""

from __future__ import annotations

import asyncio
import base64
import gzip
import json
import socket
import threading
import tracemalloc
from urllib.parse import parse_qs

import dns.message
import dns.rcode
import dns.rdatatype
import dns.rrset
import pytest

import fastnet
from fastnet.dns import BootstrapDns, CachingDns, DohDns
from fastnet.dns._doh import (
    _CLOSING,
    build_get_url,
    build_json_url,
    parse_json_response,
    parse_message_response,
)
from fastnet.dns._wire import AnswerError, extract_addresses, make_query
from fastnet.exceptions import UnknownHostError
from fastnet.testing import MockResponse, SocketPolicy
from tests.support.aioloop import (
    aio_fixture,  # noqa: F401  (the fixture "aio")
    both,
    client_sockets,
    new_loop,
    wait_closed,
    wait_for,
)
from tests.support.testbed import Testbed

pytestmark = pytest.mark.filterwarnings("error")

MSG = "application/dns-message"


def _answer(query, *rrsets, rcode=dns.rcode.NOERROR):
    response = dns.message.make_response(query)
    for name, ttl, rdtype, values in rrsets:
        response.answer.append(dns.rrset.from_text_list(name, ttl, "IN", rdtype, values))
    response.set_rcode(rcode)
    return response.to_wire(want_shuffle=False)


def test_doh_get_url_is_base64url_without_padding():
    query = make_query("google.com", "A", zero_id=True)
    url = build_get_url("https://dns.example/dns-query", query.to_wire())
    assert url == "https://dns.example/dns-query?dns=AAABAAABAAAAAAAABmdvb2dsZQNjb20AAAEAAQ"
    assert build_get_url("https://d/q?x=1", b"\xff\xfe").endswith("?x=1&dns=__4")


def test_doh_json_url():
    assert build_json_url("https://dns.google/resolve", "app.test", "AAAA") == (
        "https://dns.google/resolve?name=app.test&type=AAAA"
    )


def test_doh_message_response_parses_and_follows_cname():
    query = make_query("www.test", "A", zero_id=True)
    body = _answer(
        query, ("www.test.", 30, "CNAME", ["app.test."]), ("app.test.", 5, "A", ["127.0.0.1", "127.0.0.2"])
    )
    message = parse_message_response(query, 200, "application/dns-message", body)
    assert extract_addresses(message, query.question[0].name, dns.rdatatype.A) == (
        ["127.0.0.1", "127.0.0.2"],
        5,
        None,
    )


def test_doh_message_content_type_with_parameters_is_accepted():
    query = make_query("app.test", "A", zero_id=True)
    body = _answer(query, ("app.test.", 5, "A", ["127.0.0.1"]))
    parse_message_response(query, 200, "Application/DNS-Message; charset=binary", body)


@pytest.mark.parametrize(
    ("status", "content_type", "reason"),
    [
        (503, MSG, "HTTP 503"),
        (200, "text/html", "content type 'text/html'"),
        (200, None, "content type None"),
    ],
)
def test_doh_message_bad_http(status, content_type, reason):
    query = make_query("app.test", "A", zero_id=True)
    body = _answer(query, ("app.test.", 5, "A", ["127.0.0.1"]))
    with pytest.raises(AnswerError, match=reason):
        parse_message_response(query, status, content_type, body)


def test_doh_message_malformed_truncated_and_huge():
    query = make_query("app.test", "A", zero_id=True)
    body = _answer(query, ("app.test.", 5, "A", ["127.0.0.1"]))
    with pytest.raises(AnswerError, match="malformed"):
        parse_message_response(query, 200, MSG, body[: len(body) - 3])
    with pytest.raises(AnswerError, match="malformed"):
        parse_message_response(query, 200, MSG, b"<html>nope</html>")
    with pytest.raises(AnswerError, match="exceeds 65535"):
        parse_message_response(query, 200, MSG, b"\0" * 70000)


def test_doh_message_mismatched_question_or_id_rejected():
    query = make_query("app.test", "A", zero_id=True)
    other = make_query("poison.test", "A", zero_id=True)
    with pytest.raises(AnswerError, match="does not match"):
        parse_message_response(query, 200, MSG, _answer(other, ("poison.test.", 5, "A", ["10.66.66.66"])))
    wrong_id = dns.message.from_wire(_answer(query, ("app.test.", 5, "A", ["10.66.66.66"])))
    wrong_id.id = 77
    with pytest.raises(AnswerError, match="does not match"):
        parse_message_response(query, 200, MSG, wrong_id.to_wire())


def _json(**document):
    return json.dumps(document).encode()


GOOGLE_STYLE = _json(
    Status=0,
    TC=False,
    RD=True,
    RA=True,
    AD=False,
    CD=False,
    Question=[{"name": "www.test.", "type": 1}],
    Answer=[
        {"name": "www.test.", "type": 5, "TTL": 300, "data": "app.test."},
        {"name": "app.test.", "type": 1, "TTL": 60, "data": "127.0.0.1"},
        {"name": "app.test.", "type": 1, "TTL": 60, "data": "127.0.0.2"},
    ],
)


def test_doh_json_google_style_answer():
    assert parse_json_response("www.test", 1, 200, "application/json; charset=UTF-8", GOOGLE_STYLE) == (
        ["127.0.0.1", "127.0.0.2"],
        60,
        None,
    )


def test_doh_json_aaaa_and_nodata():
    body = _json(Status=0, Answer=[{"name": "v6.test", "type": 28, "TTL": 5, "data": "0:0::1"}])
    assert parse_json_response("v6.test", 28, 200, "application/dns-json", body) == (["::1"], 5, None)
    assert parse_json_response("v6.test", 1, 200, "application/dns-json", _json(Status=0)) == ([], None, None)


@pytest.mark.parametrize(
    ("status", "content_type", "body", "reason"),
    [
        (500, "application/json", _json(Status=0), "HTTP 500"),
        (200, "text/html", _json(Status=0), "content type"),
        (200, "application/json", b"{not json", "malformed JSON"),
        (200, "application/json", b"[]", "no Status"),
        (200, "application/json", _json(Status=3), "NXDOMAIN"),
        (200, "application/json", _json(Status=2), "SERVFAIL"),
        (
            200,
            "application/json",
            _json(Status=0, Question=[{"name": "poison.test.", "type": 1}]),
            "does not match",
        ),
        (
            200,
            "application/json",
            _json(Status=0, Answer=[{"name": "app.test", "type": 1, "data": "evil"}]),
            "bad address",
        ),
        (
            200,
            "application/json",
            _json(Status=0, Answer=[{"name": "app.test", "type": 1, "data": "::1"}]),
            "match the record type",
        ),
        (200, "application/json", _json(Status=0, Answer="x"), "malformed Answer"),
        (
            200,
            "application/json",
            _json(
                Status=0,
                Answer=[
                    {"name": "app.test", "type": 5, "data": "b.test"},
                    {"name": "b.test", "type": 5, "data": "app.test."},
                ],
            ),
            "CNAME loop",
        ),
    ],
)
def test_doh_json_bad_answers(status, content_type, body, reason):
    with pytest.raises(AnswerError, match=reason):
        parse_json_response("app.test", 1, status, content_type, body)


def test_doh_json_ignores_other_names():
    body = _json(Status=0, Answer=[{"name": "poison.test", "type": 1, "TTL": 5, "data": "10.66.66.66"}])
    assert parse_json_response("app.test", 1, 200, "application/json", body) == ([], None, None)


def test_doh_dns_rejects_bad_configuration():
    with pytest.raises(ValueError):
        DohDns("https://127.0.0.1/dns-query", method="PUT")
    with pytest.raises(ValueError):
        DohDns("https://127.0.0.1/dns-query", format="xml")
    with pytest.raises(ValueError):
        DohDns("https://127.0.0.1/resolve", format="json", method="POST")
    with pytest.raises(ValueError):
        DohDns("https://doh.test/dns-query", bootstrap=["doh.test"])


def test_doh_dns_ip_literals_and_bad_names_need_no_client():
    dns = DohDns("https://127.0.0.1:1/dns-query")
    assert dns.lookup("::1") == ["::1"]
    with pytest.raises(ValueError):
        dns.lookup("a..test")
    dns.close()


# -- over fastnet's Client and MockServer (JSON API) ----------------------------------------------


def _google_json(name, rtype, ttl, *data):
    code = 1 if rtype == "A" else 28
    return _json(
        Status=0,
        Question=[{"name": name + ".", "type": code}],
        Answer=[{"name": name + ".", "type": code, "TTL": ttl, "data": d} for d in data],
    )


def test_doh_json_over_mock_server(server):
    headers = {"Content-Type": "application/dns-json"}
    # A and AAAA go out in parallel and may arrive in either order: one body answers both
    body = _json(
        Status=0,
        Answer=[
            {"name": "dual.test.", "type": 1, "TTL": 30, "data": "127.0.0.1"},
            {"name": "dual.test.", "type": 28, "TTL": 20, "data": "::1"},
        ],
    )
    server.enqueue(MockResponse(200, headers=headers, body=body))
    server.enqueue(MockResponse(200, headers=headers, body=body))
    with DohDns(server.url("/resolve"), format="json") as dns:
        addresses, ttl = dns.lookup_with_ttl("dual.test")
    assert addresses == ["127.0.0.1", "::1"]
    assert ttl == 20
    requests = [server.take_request(timeout=5) for _ in range(2)]
    queries = sorted(parse_qs(r.query)["type"][0] for r in requests)
    assert queries == ["A", "AAAA"]
    assert all(parse_qs(r.query)["name"] == ["dual.test"] for r in requests)
    assert all(r.header("accept") == "application/dns-json" for r in requests)


def test_doh_json_over_mock_server_wrong_content_type(server):
    for _ in range(2):
        server.enqueue(MockResponse(200, headers={"Content-Type": "text/html"}, body=b"<html></html>"))
    dns = CachingDns(DohDns(server.url("/resolve"), format="json"), negative_ttl=0)
    with pytest.raises(UnknownHostError, match="content type"):
        dns.lookup("app.test")
    assert dns.cache.get("app.test") is None
    assert isinstance(dns.inner, DohDns)
    dns.inner.close()


def test_doh_message_get_and_post_over_mock_server(server):
    query = make_query("app.test", "A", zero_id=True)
    body = _answer(query, ("app.test.", 5, "A", ["127.0.0.1", "127.0.0.2"]))
    for method in ("GET", "POST"):
        server.enqueue(MockResponse(200, headers={"Content-Type": MSG}, body=body))
        with DohDns(server.url("/dns-query"), method=method, ipv6=False) as doh:
            assert doh.lookup_with_ttl("app.test") == (["127.0.0.1", "127.0.0.2"], 5)
        request = server.take_request(timeout=5)
        assert request.method == method
        assert request.header("accept") == MSG
        if method == "GET":
            encoded = parse_qs(request.query)["dns"][0]
            wire = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4))
        else:
            assert request.header("content-type") == MSG
            wire = request.body
        sent = dns.message.from_wire(wire)
        assert sent.id == 0 and sent.question[0].name.to_text() == "app.test."


def test_doh_message_http_error_is_unknown_host(server):
    server.enqueue(MockResponse(502, headers={"Content-Type": "text/plain"}, body=b"bad gateway"))
    with DohDns(server.url("/dns-query"), ipv6=False) as doh:
        with pytest.raises(UnknownHostError, match="HTTP 502"):
            doh.lookup("app.test")


# -- bounded answers and secrets (over MockServer) ------------------------------------------------


def _peak_during(fn):
    """``fn()``'s outcome and the peak of traced memory while it ran (bytes)."""
    tracemalloc.start()
    try:
        try:
            outcome = fn()
        except Exception as exc:  # noqa: BLE001 - the caller inspects it
            outcome = exc
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return outcome, peak


def _raw(head: bytes, body: bytes) -> MockResponse:
    """A response sent as these bytes: built before memory is traced, and written without a copy."""
    return MockResponse(raw=head + body)


def test_doh_huge_answer_is_not_read_past_the_limit(server):
    size = 32 * 1024 * 1024  # declared and sent: 32 MiB
    head = f"HTTP/1.1 200 OK\r\nContent-Type: {MSG}\r\nContent-Length: {size}\r\n\r\n".encode()
    server.enqueue(_raw(head, b"\0" * size))
    with DohDns(server.url("/dns-query"), ipv6=False) as doh:
        outcome, peak = _peak_during(lambda: doh.lookup("app.test"))
    assert isinstance(outcome, UnknownHostError) and "exceeds 65535" in str(outcome)
    assert peak < 4 * 1024 * 1024  # reading it all would hold 32 MiB
    assert server.take_request(timeout=5).header("accept-encoding") == "identity"


def test_doh_huge_chunked_answer_is_not_read_past_the_limit(server):
    head = f"HTTP/1.1 200 OK\r\nContent-Type: {MSG}\r\nTransfer-Encoding: chunked\r\n\r\n".encode()
    chunk = b"%x\r\n%s\r\n" % (65536, b"\0" * 65536)
    server.enqueue(_raw(head, chunk * 512 + b"0\r\n\r\n"))  # 32 MiB in 64 KiB chunks
    with DohDns(server.url("/dns-query"), ipv6=False) as doh:
        outcome, peak = _peak_during(lambda: doh.lookup("app.test"))
    assert isinstance(outcome, UnknownHostError) and "exceeds 65535" in str(outcome)
    assert peak < 4 * 1024 * 1024


def test_doh_gzip_bomb_is_not_inflated_past_the_limit(server):
    bomb = gzip.compress(b"\0" * (64 * 1024 * 1024))  # about 64 KiB that inflate to 64 MiB
    assert len(bomb) < 65535
    headers = {"Content-Type": MSG, "Content-Encoding": "gzip"}  # sent though identity was asked
    server.enqueue(MockResponse(200, headers=headers, body=bomb))
    with DohDns(server.url("/dns-query"), ipv6=False) as doh:
        outcome, peak = _peak_during(lambda: doh.lookup("app.test"))
    assert isinstance(outcome, UnknownHostError) and "exceeds 65535" in str(outcome)
    assert peak < 4 * 1024 * 1024
    assert server.take_request(timeout=5).header("accept-encoding") == "identity"


def test_doh_small_gzip_answer_is_inflated(server):
    query = make_query("app.test", "A", zero_id=True)
    answer = gzip.compress(_answer(query, ("app.test.", 5, "A", ["127.0.0.1"])))
    server.enqueue(MockResponse(200, headers={"Content-Type": MSG, "Content-Encoding": "gzip"}, body=answer))
    with DohDns(server.url("/dns-query"), ipv6=False) as doh:
        assert doh.lookup("app.test") == ["127.0.0.1"]


def test_doh_truncated_or_unknown_encoding_is_a_bad_answer(server):
    query = make_query("app.test", "A", zero_id=True)
    answer = gzip.compress(_answer(query, ("app.test.", 5, "A", ["127.0.0.1"])))
    server.enqueue(
        MockResponse(200, headers={"Content-Type": MSG, "Content-Encoding": "gzip"}, body=answer[:-8]),
        MockResponse(200, headers={"Content-Type": MSG, "Content-Encoding": "br"}, body=b"\x0b\x00"),
    )
    with DohDns(server.url("/dns-query"), ipv6=False) as doh:
        with pytest.raises(UnknownHostError, match="truncated gzip"):
            doh.lookup("app.test")
        with pytest.raises(UnknownHostError, match="Content-Encoding 'br'"):
            doh.lookup("app.test")


def test_doh_userinfo_never_shows(server):
    secret_url = server.url("/dns-query").replace("://", "://alice:s3cret@")
    server.enqueue(MockResponse(502, headers={"Content-Type": "text/plain"}, body=b"bad gateway"))
    with DohDns(secret_url, ipv6=False) as doh:
        assert "s3cret" not in repr(doh) and "dns-query" in repr(doh)
        with pytest.raises(UnknownHostError) as info:
            doh.lookup("app.test")
    assert "s3cret" not in str(info.value) and "HTTP 502" in str(info.value)
    assert "dns-query" in str(info.value)
    closed = DohDns(secret_url)
    closed.close()
    with pytest.raises(UnknownHostError) as info:
        closed.lookup("app.test")
    assert "s3cret" not in str(info.value)


def test_doh_userinfo_never_shows_when_the_server_is_down():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, not listening: refused
        with DohDns(f"http://alice:s3cret@127.0.0.1:{port}/dns-query", ipv6=False) as doh:
            with pytest.raises(UnknownHostError) as info:
                doh.lookup("app.test")
    assert "s3cret" not in str(info.value) and "Connection refused" in str(info.value)


# --------------------------------------------------------------------------- asyncio: alookup


async def aoutcome(call, *args):
    try:
        return ("ok", await call(*args))
    except Exception as exc:  # noqa: BLE001 - compared
        return (type(exc).__name__, str(exc))


def outcome(call, *args):
    try:
        return ("ok", call(*args))
    except Exception as exc:  # noqa: BLE001
        return (type(exc).__name__, str(exc))


def test_async_doh_ip_literals_and_bad_names_need_no_client(aio):
    async def main():
        async with DohDns("https://127.0.0.1:1/dns-query") as doh:
            assert await doh.alookup("::1") == ["::1"]
            with pytest.raises(ValueError):
                await doh.alookup("a..test")

    aio.run(main())


def test_async_doh_json_over_mock_server(aio, server):
    headers = {"Content-Type": "application/dns-json"}
    body = _json(
        Status=0,
        Answer=[
            {"name": "dual.test.", "type": 1, "TTL": 30, "data": "127.0.0.1"},
            {"name": "dual.test.", "type": 28, "TTL": 20, "data": "::1"},
        ],
    )

    async def main():
        for _ in range(2):
            server.enqueue(MockResponse(200, headers=headers, body=body))
        async with DohDns(server.url("/resolve"), format="json") as doh:
            assert await doh.alookup_with_ttl("dual.test") == (["127.0.0.1", "::1"], 20)

    aio.run(main())
    requests = [server.take_request(timeout=5) for _ in range(2)]
    assert sorted(parse_qs(r.query)["type"][0] for r in requests) == ["A", "AAAA"]
    assert all(parse_qs(r.query)["name"] == ["dual.test"] for r in requests)
    assert all(r.header("accept") == "application/dns-json" for r in requests)
    assert all(r.header("accept-encoding") == "identity" for r in requests)


def test_async_doh_message_get_and_post_over_mock_server(aio, server):
    query = make_query("app.test", "A", zero_id=True)
    body = _answer(query, ("app.test.", 5, "A", ["127.0.0.1", "127.0.0.2"]))

    async def main():
        for method in ("GET", "POST"):
            server.enqueue(MockResponse(200, headers={"Content-Type": MSG}, body=body))
            async with DohDns(server.url("/dns-query"), method=method, ipv6=False) as doh:
                assert await doh.alookup_with_ttl("app.test") == (["127.0.0.1", "127.0.0.2"], 5)
            request = server.take_request(timeout=5)
            assert request.method == method and request.header("accept") == MSG
            if method == "GET":
                encoded = parse_qs(request.query)["dns"][0]
                wire = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4))
            else:
                assert request.header("content-type") == MSG
                wire = request.body
            sent = dns.message.from_wire(wire)
            assert sent.id == 0 and sent.question[0].name.to_text() == "app.test."

    aio.run(main())


@pytest.mark.parametrize(
    ("response", "reason"),
    [
        (MockResponse(502, headers={"Content-Type": "text/plain"}, body=b"bad gateway"), "HTTP 502"),
        (MockResponse(200, headers={"Content-Type": "text/html"}, body=b"<html></html>"), "content type"),
        (MockResponse(200, headers={"Content-Type": MSG}, body=b"<html>nope</html>"), "malformed"),
        (
            MockResponse(200, headers={"Content-Type": MSG, "Content-Encoding": "br"}, body=b"\x0b\x00"),
            "Content-Encoding 'br'",
        ),
    ],
)
def test_async_doh_bad_answers_read_like_the_blocking_ones(aio, server, response, reason):
    async def main():
        server.enqueue(response, response)
        with DohDns(server.url("/dns-query"), ipv6=False) as blocking:
            expected = outcome(blocking.lookup, "app.test")
        async with DohDns(server.url("/dns-query"), ipv6=False) as doh:
            assert await aoutcome(doh.alookup, "app.test") == expected
        assert expected[0] == "UnknownHostError" and reason in expected[1]

    aio.run(main())


def test_async_doh_wrong_content_type_is_not_cached(aio, server):
    async def main():
        for _ in range(2):
            server.enqueue(MockResponse(200, headers={"Content-Type": "text/html"}, body=b"<html></html>"))
        doh = DohDns(server.url("/resolve"), format="json")
        dns_ = CachingDns(doh, negative_ttl=0)
        with pytest.raises(UnknownHostError, match="content type"):
            await dns_.alookup("app.test")
        assert dns_.cache.get("app.test") is None
        await doh.aclose()

    aio.run(main())


def _peak_during_async(coro):
    async def run():
        tracemalloc.start()
        try:
            try:
                outcome_ = await coro
            except Exception as exc:  # noqa: BLE001 - inspected by the caller
                outcome_ = exc
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        return outcome_, peak

    return run()


def test_async_doh_huge_answers_are_not_read_past_the_limit(aio, server):
    size = 32 * 1024 * 1024
    declared = f"HTTP/1.1 200 OK\r\nContent-Type: {MSG}\r\nContent-Length: {size}\r\n\r\n".encode()
    chunked_head = f"HTTP/1.1 200 OK\r\nContent-Type: {MSG}\r\nTransfer-Encoding: chunked\r\n\r\n".encode()
    chunk = b"%x\r\n%s\r\n" % (65536, b"\0" * 65536)
    bomb = gzip.compress(b"\0" * (64 * 1024 * 1024))

    async def main():
        responses = [
            MockResponse(raw=declared + b"\0" * size),
            MockResponse(raw=chunked_head + chunk * 512 + b"0\r\n\r\n"),
            MockResponse(200, headers={"Content-Type": MSG, "Content-Encoding": "gzip"}, body=bomb),
        ]
        for response in responses:
            server.enqueue(response)
            async with DohDns(server.url("/dns-query"), ipv6=False) as doh:
                got, peak = await _peak_during_async(doh.alookup("app.test"))
            assert isinstance(got, UnknownHostError) and "exceeds 65535" in str(got)
            assert peak < 4 * 1024 * 1024
            assert server.take_request(timeout=5).header("accept-encoding") == "identity"

    aio.run(main())


def test_async_doh_small_gzip_answer_is_inflated_and_truncated_one_refused(aio, server):
    query = make_query("app.test", "A", zero_id=True)
    answer = gzip.compress(_answer(query, ("app.test.", 5, "A", ["127.0.0.1"])))
    headers = {"Content-Type": MSG, "Content-Encoding": "gzip"}

    async def main():
        server.enqueue(MockResponse(200, headers=headers, body=answer))
        server.enqueue(MockResponse(200, headers=headers, body=answer[:-8]))
        async with DohDns(server.url("/dns-query"), ipv6=False) as doh:
            assert await doh.alookup("app.test") == ["127.0.0.1"]
            with pytest.raises(UnknownHostError, match="truncated gzip"):
                await doh.alookup("app.test")

    aio.run(main())


def test_async_doh_userinfo_never_shows(aio, server):
    secret_url = server.url("/dns-query").replace("://", "://alice:s3cret@")

    async def main():
        server.enqueue(MockResponse(502, headers={"Content-Type": "text/plain"}, body=b"bad gateway"))
        async with DohDns(secret_url, ipv6=False) as doh:
            with pytest.raises(UnknownHostError) as info:
                await doh.alookup("app.test")
        assert "s3cret" not in str(info.value) and "HTTP 502" in str(info.value)
        with pytest.raises(UnknownHostError) as info:
            await doh.alookup("app.test")  # closed
        assert "is closed" in str(info.value) and "s3cret" not in str(info.value)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]  # bound, not listening: refused
            async with DohDns(f"http://alice:s3cret@127.0.0.1:{port}/dns-query", ipv6=False) as down:
                with pytest.raises(UnknownHostError) as info:
                    await down.alookup("app.test")
        # (the wording of the refusal is AsyncClient's: "Connect call failed", where Client says "Connection
        # refused"; what matters here is that the URL's secret is not in it)
        assert "s3cret" not in str(info.value) and "Failed to connect to 127.0.0.1" in str(info.value)

    aio.run(main())


def test_async_doh_one_client_per_loop_kept_alive(aio, server):
    query = make_query("app.test", "A", zero_id=True)
    body = _answer(query, ("app.test.", 5, "A", ["127.0.0.1"]))

    async def main():
        async with DohDns(server.url("/dns-query"), ipv6=False) as doh:
            for _ in range(3):
                server.enqueue(MockResponse(200, headers={"Content-Type": MSG}, body=body))
                assert await doh.alookup("app.test") == ["127.0.0.1"]
            loop = asyncio.get_running_loop()
            assert doh._get_async_client(loop) is doh._get_async_client(loop)

    aio.run(main())
    assert server.request_count == 3 and server.connection_count == 1


def test_async_doh_clients_of_two_running_loops_close_with_it(aio, server):
    """A second loop in another thread gets a client of its own; aclose() on the first closes both."""
    query = make_query("app.test", "A", zero_id=True)
    body = _answer(query, ("app.test.", 5, "A", ["127.0.0.1"]))
    for _ in range(2):
        server.enqueue(MockResponse(200, headers={"Content-Type": MSG}, body=body))
    doh = DohDns(server.url("/dns-query"), ipv6=False)
    other_loop = new_loop(aio.kind)
    thread = threading.Thread(target=other_loop.run_forever)
    thread.start()
    try:

        async def main():
            assert await doh.alookup("app.test") == ["127.0.0.1"]
            there = asyncio.run_coroutine_threadsafe(doh.alookup("app.test"), other_loop)
            assert await asyncio.wrap_future(there) == ["127.0.0.1"]
            assert len(doh._aclients) == 2
            await doh.aclose()
            assert len(doh._aclients) == 0
            with pytest.raises(UnknownHostError, match="is closed"):
                await doh.alookup("app.test")

        aio.run(main())
        assert server.connection_count == 2
    finally:
        other_loop.call_soon_threadsafe(other_loop.stop)
        thread.join(10)
        other_loop.close()


def test_async_doh_cancelled_lookup_leaves_nothing_running(aio, server):
    """The server never answers: the lookup is cancelled; its AAAA task and its calls are gone with it."""

    async def main():
        server.enqueue(
            MockResponse(policy=SocketPolicy.NO_RESPONSE), MockResponse(policy=SocketPolicy.NO_RESPONSE)
        )
        async with DohDns(server.url("/dns-query"), timeout=30) as doh:
            task = asyncio.ensure_future(doh.alookup("app.test"))
            await wait_for(lambda: server.request_count >= 2, what="both requests at the server")
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            await wait_closed(server.port)  # both calls abandoned: their connections are closed

    aio.run(main())


def test_async_doh_follows_cname_across_requests_like_the_blocking_lookup(aio, server):
    """A CNAME answer without the target's records: the target is asked next (RFC 8484 and JSON)."""
    www = _answer(make_query("www.test", "A", zero_id=True), ("www.test.", 30, "CNAME", ["app.test."]))
    app = _answer(make_query("app.test", "A", zero_id=True), ("app.test.", 5, "A", ["127.0.0.1"]))
    www_json = _json(Status=0, Answer=[{"name": "www.test.", "type": 5, "TTL": 30, "data": "app.test."}])
    app_json = _json(Status=0, Answer=[{"name": "app.test.", "type": 1, "TTL": 5, "data": "127.0.0.1"}])
    cases = [
        ("/dns-query", "dns-message", MSG, www, app),
        ("/resolve", "json", "application/dns-json", www_json, app_json),
    ]

    async def main():
        for path, format_, content_type, first, second in cases:
            with DohDns(server.url(path), format=format_, ipv6=False) as blocking:
                for body in (first, second):
                    server.enqueue(MockResponse(200, headers={"Content-Type": content_type}, body=body))
                expected = outcome(blocking.lookup_with_ttl, "www.test")
            async with DohDns(server.url(path), format=format_, ipv6=False) as doh:
                for body in (first, second):
                    server.enqueue(MockResponse(200, headers={"Content-Type": content_type}, body=body))
                assert (
                    await aoutcome(doh.alookup_with_ttl, "www.test") == expected == ("ok", (["127.0.0.1"], 5))
                )

    aio.run(main())
    requests = [server.take_request(timeout=5) for _ in range(8)]
    json_names = [parse_qs(r.query)["name"][0] for r in requests if r.path.startswith("/resolve")]
    assert json_names == ["www.test", "app.test", "www.test", "app.test"]


def test_async_doh_uses_a_given_async_client_and_leaves_it_open(aio, server):
    query = make_query("app.test", "A", zero_id=True)
    body = _answer(query, ("app.test.", 5, "A", ["127.0.0.1"]))

    async def main():
        async with fastnet.AsyncClient(trust_env=False) as client:
            for _ in range(2):
                server.enqueue(MockResponse(200, headers={"Content-Type": MSG}, body=body))
            async with DohDns(server.url("/dns-query"), ipv6=False, client=client) as doh:
                assert await doh.alookup("app.test") == ["127.0.0.1"]
                assert doh._get_async_client(asyncio.get_running_loop()) is client
                assert not doh._aclients
            response = await client.get(server.url("/dns-query"))  # still open after the resolver closed
            assert response.status_code == 200
            await response.aclose()

    aio.run(main())
    assert server.connection_count == 1


def test_async_doh_blocking_close_on_the_loop_closes_its_async_client(aio, server):
    """close() (not aclose()) called on the loop's thread: a task of the loop closes the AsyncClient."""
    query = make_query("app.test", "A", zero_id=True)
    body = _answer(query, ("app.test.", 5, "A", ["127.0.0.1"]))

    async def main():
        server.enqueue(MockResponse(200, headers={"Content-Type": MSG}, body=body))
        doh = DohDns(server.url("/dns-query"), ipv6=False)
        assert await doh.alookup("app.test") == ["127.0.0.1"]
        assert client_sockets(server.port)  # kept alive
        doh.close()
        await wait_closed(server.port)
        await wait_for(lambda: not _CLOSING, what="the closing task to end")
        with pytest.raises(UnknownHostError, match="is closed"):
            await doh.alookup("app.test")

    aio.run(main())


@pytest.mark.testbed
@pytest.mark.parametrize("method", ["GET", "POST"])
def test_async_doh_dnsdist_parity(aio, testbed: Testbed, method):
    url = testbed.doh_url.replace("127.0.0.1", "doh.test")

    async def main():
        with DohDns(
            url, bootstrap=["127.0.0.1"], method=method, verify=testbed.ca_path, timeout=5
        ) as blocking:
            async with DohDns(
                url, bootstrap=["127.0.0.1"], method=method, verify=testbed.ca_path, timeout=5
            ) as doh:
                for name in ("app.test", "multi.test", "dual.test", "v6.test", "nope.test"):
                    expected = outcome(blocking.lookup_with_ttl, name)
                    assert await aoutcome(doh.alookup_with_ttl, name) == expected
                assert await doh.alookup("multi.test") == ["127.0.0.3", "127.0.0.1"]

    aio.run(main())


@pytest.mark.testbed
def test_async_doh_untrusted_certificate_is_unknown_host(aio, testbed: Testbed):
    async def main():
        async with DohDns(testbed.doh_url, timeout=5) as doh:
            with pytest.raises(UnknownHostError, match="DoH request failed"):
                await doh.alookup("app.test")

    aio.run(main())


def test_bootstrap_dns_answers_only_for_its_host():
    dns = BootstrapDns("DoH.Test", ["127.0.0.1", "[::1]"])
    assert dns.lookup("doh.test") == ["127.0.0.1", "::1"]
    with pytest.raises(UnknownHostError, match="instead of doh.test"):
        dns.lookup("app.test")
    with pytest.raises(ValueError):
        BootstrapDns("doh.test", ["doh.test"])
    with pytest.raises(ValueError):
        BootstrapDns("doh.test", [])


def test_async_bootstrap_dns_parity(aio):
    async def main():
        dns = BootstrapDns("DoH.Test", ["127.0.0.1", "[::1]"])
        assert await both(dns.lookup, dns.alookup, "doh.test") == ("ok", ["127.0.0.1", "::1"])
        assert await both(dns.lookup, dns.alookup, "127.0.0.9") == ("ok", ["127.0.0.9"])
        kind, message = await both(dns.lookup, dns.alookup, "app.test")
        assert kind == "UnknownHostError" and "instead of doh.test" in message

    aio.run(main())
