"""DohDns: RFC 8484 wire handling and the JSON API against canned bytes; the JSON API over MockServer."""

from __future__ import annotations

import base64
import gzip
import json
import socket
import tracemalloc
from urllib.parse import parse_qs

import dns.message
import dns.rcode
import dns.rrset
import pytest

from fastnet.dns import CachingDns, DohDns
from fastnet.dns._doh import build_get_url, build_json_url, parse_json_response, parse_message_response
from fastnet.dns._wire import AnswerError, extract_addresses, make_query
from fastnet.exceptions import UnknownHostError
from fastnet.testing import MockResponse

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
    assert extract_addresses(message, query.question[0].name, 1) == (["127.0.0.1", "127.0.0.2"], 5, None)


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


def test_doh_message_ignores_records_for_other_names():
    query = make_query("app.test", "A", zero_id=True)
    body = _answer(query, ("poison.test.", 5, "A", ["10.66.66.66"]), ("app.test.", 5, "A", ["127.0.0.1"]))
    message = parse_message_response(query, 200, MSG, body)
    assert extract_addresses(message, query.question[0].name, 1)[0] == ["127.0.0.1"]


@pytest.mark.parametrize(
    ("rcode", "reason"), [(dns.rcode.NXDOMAIN, "NXDOMAIN"), (dns.rcode.SERVFAIL, "SERVFAIL")]
)
def test_doh_message_rcodes(rcode, reason):
    query = make_query("app.test", "A", zero_id=True)
    message = parse_message_response(query, 200, MSG, _answer(query, rcode=rcode))
    with pytest.raises(AnswerError, match=reason):
        extract_addresses(message, query.question[0].name, 1)


def test_doh_message_cname_loop():
    query = make_query("a.test", "A", zero_id=True)
    body = _answer(query, ("a.test.", 5, "CNAME", ["b.test."]), ("b.test.", 5, "CNAME", ["a.test."]))
    message = parse_message_response(query, 200, MSG, body)
    with pytest.raises(AnswerError, match="CNAME loop"):
        extract_addresses(message, query.question[0].name, 1)


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
