"""EventListener: the exact event sequences of OkHttp's EventListenerTest, on real sockets.

Each test runs one call against MockServer (or a refused port, or a failing Dns) and compares the
names of the events in order. ``app.test`` resolves through a FakeDns to 127.0.0.1 so the DNS events
appear; IP-literal URLs never reach a resolver.
"""

from __future__ import annotations

import socket
from typing import Any

import pytest
from conftest import assert_pool_clean, make_fast_client
from fakes import FakeDns, RecordingListener

import fastnet
from fastnet.testing import MockResponse, MockServer, SocketPolicy

pytestmark = pytest.mark.both_clients

HEAD_AND_CONNECT = [
    "call_start",
    "proxy_select_start",
    "proxy_select_end",
    "dns_start",
    "dns_end",
    "connect_start",
    "connect_end",
    "connection_acquired",
    "request_headers_start",
    "request_headers_end",
]


def run(server: MockServer, call: Any, **options: Any) -> tuple[list[str], Any]:
    """Run ``call(client, url)`` with a recording listener; returns (event names, the call's outcome)."""
    listener = RecordingListener()
    dns = options.pop("dns", FakeDns({"app.test": ["127.0.0.1"]}))
    with make_fast_client(event_listener=listener, dns=dns, **options) as client:
        try:
            outcome: Any = call(client, server.url("/", host="app.test"))
        except Exception as exc:  # noqa: BLE001 - the failure is part of what is checked
            outcome = exc
    return listener.names(), outcome


def test_events_successful_get_with_a_body(server: MockServer) -> None:
    server.enqueue(MockResponse(200, body=b"abc"))
    names, r = run(server, lambda c, u: c.get(u))
    assert r.content == b"abc"
    assert names == [
        *HEAD_AND_CONNECT,
        "response_headers_start",
        "response_headers_end",
        "follow_up_decision",  # before the body: the head decides
        "response_body_start",
        "response_body_end",
        "connection_released",
        "call_end",
    ]


def test_events_empty_body_ends_before_the_decision(server: MockServer) -> None:
    server.enqueue(MockResponse(204))
    names, _ = run(server, lambda c, u: c.get(u))
    assert names[len(HEAD_AND_CONNECT) :] == [
        "response_headers_start",
        "response_headers_end",
        "response_body_start",
        "response_body_end",
        "follow_up_decision",
        "connection_released",
        "call_end",
    ]


def test_events_post_reports_the_request_body(server: MockServer) -> None:
    server.enqueue(MockResponse(200))
    names, _ = run(server, lambda c, u: c.post(u, body=b"12345"))
    i = names.index("request_headers_end")
    assert names[i : i + 4] == [
        "request_headers_end",
        "request_body_start",
        "request_body_end",
        "response_headers_start",
    ]


def test_events_redirect_on_the_same_connection(server: MockServer) -> None:
    server.enqueue(
        MockResponse(302, headers={"Location": "/next"}, body=b"moved"), MockResponse(200, body=b"b")
    )
    names, r = run(server, lambda c, u: c.get(u))
    assert r.content == b"b"
    assert names == [
        *HEAD_AND_CONNECT,
        "response_headers_start",
        "response_headers_end",
        "response_body_start",
        "response_body_end",
        "follow_up_decision",  # after the redirect's body was read: it is closed before the decision
        "request_headers_start",
        "request_headers_end",
        "response_headers_start",
        "response_headers_end",
        "follow_up_decision",
        "response_body_start",
        "response_body_end",
        "connection_released",
        "call_end",
    ]
    assert names.count("connection_acquired") == 1


def test_events_redirect_to_another_server(server: MockServer) -> None:
    with MockServer() as other:
        other.enqueue(MockResponse(200, body=b"there"))
        server.enqueue(MockResponse(302, headers={"Location": other.url("/x")}))
        names, r = run(server, lambda c, u: c.get(u))
    assert r.content == b"there"
    i = names.index("follow_up_decision")
    assert names[i : i + 7] == [
        "follow_up_decision",
        "connection_released",  # the first connection goes back only when the next hop needs another
        "proxy_select_start",
        "proxy_select_end",
        "connect_start",  # an IP literal: no DNS
        "connect_end",
        "connection_acquired",
    ]
    assert names[-3:] == ["response_body_end", "connection_released", "call_end"]


def test_events_read_timeout_on_a_fresh_connection(server: MockServer) -> None:
    server.enqueue(MockResponse(200, policy=SocketPolicy.NO_RESPONSE))
    names, exc = run(server, lambda c, u: c.get(u), read_timeout=0.3)
    assert isinstance(exc, fastnet.ReadTimeout)
    assert names == [
        *HEAD_AND_CONNECT,
        "response_failed",
        "retry_decision",
        "connection_released",  # after the decision
        "call_failed",
    ]


def test_events_body_cut_off_while_reading(server: MockServer) -> None:
    server.enqueue(
        MockResponse(
            raw=b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabcde",
            policy=SocketPolicy.CLOSE_AFTER_RESPONSE,
        )
    )
    names, exc = run(server, lambda c, u: c.get(u))
    assert isinstance(exc, fastnet.ProtocolError)
    assert names[-5:] == [
        "follow_up_decision",
        "response_body_start",
        "response_failed",
        "connection_released",
        "call_failed",
    ]
    assert "call_end" not in names


def test_events_stale_pooled_connection_retried_on_its_route(server: MockServer) -> None:
    listener = RecordingListener()
    dns = FakeDns({"app.test": ["127.0.0.1"]})
    server.enqueue(
        MockResponse(200, body=b"warm"), MockResponse(200, policy=SocketPolicy.DISCONNECT_AFTER_REQUEST)
    )
    server.enqueue(MockResponse(200, body=b"ok"))
    with make_fast_client(event_listener=listener, dns=dns) as client:
        url = server.url("/", host="app.test")
        assert client.get(url).content == b"warm"
        listener.events.clear()
        assert client.get(url).content == b"ok"
    assert listener.names() == [
        "call_start",
        "connection_acquired",  # the pooled one
        "request_headers_start",
        "request_headers_end",
        "response_failed",
        "retry_decision",
        "connection_released",
        "connect_start",  # the same route again: no proxy selection, no DNS
        "connect_end",
        "connection_acquired",
        "request_headers_start",
        "request_headers_end",
        "response_headers_start",
        "response_headers_end",
        "follow_up_decision",
        "response_body_start",
        "response_body_end",
        "connection_released",
        "call_end",
    ]
    assert dns.lookups == ["app.test"]
    retry = [args for name, args in listener.events if name == "retry_decision"]
    assert retry[0][2] is True


def test_events_connect_refused_on_the_only_route(server: MockServer) -> None:
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()  # nothing listens there now
    listener = RecordingListener()
    with make_fast_client(event_listener=listener) as client:
        with pytest.raises(fastnet.ConnectError):
            client.get(f"http://127.0.0.1:{port}/")
    assert listener.names() == [
        "call_start",
        "proxy_select_start",
        "proxy_select_end",
        "connect_start",
        "connect_failed",
        "retry_decision",
        "call_failed",
    ]


def test_events_dns_failure(server: MockServer) -> None:
    names, exc = run(server, lambda c, u: c.get("http://nowhere.test/"), dns=FakeDns({}))
    assert isinstance(exc, fastnet.UnknownHostError)
    assert names == [
        "call_start",
        "proxy_select_start",
        "proxy_select_end",
        "dns_start",
        "retry_decision",
        "call_failed",
    ]


def test_events_canceled_before_execute(server: MockServer) -> None:
    listener = RecordingListener()
    with make_fast_client(event_listener=listener) as client:
        call = client.new_call(fastnet.Request("GET", server.url("/")))
        call.cancel()
        call.cancel()
        with pytest.raises(fastnet.CanceledError):
            call.execute()
    assert listener.names() == ["canceled", "call_start", "call_failed"]
    assert server.request_count == 0


def test_events_application_interceptor_short_circuit(server: MockServer) -> None:
    def answer(chain: fastnet.Chain) -> fastnet.Response:
        return fastnet.Response(200, content=b"cached", request=chain.request)

    names, r = run(server, lambda c, u: c.get(u), interceptors=[answer])
    assert r.content == b"cached" and names == ["call_start", "call_end"]


def test_events_application_interceptor_proceeding_twice(server: MockServer) -> None:
    def twice(chain: fastnet.Chain) -> fastnet.Response:
        chain.proceed(chain.request).close()
        return chain.proceed(chain.request)

    server.enqueue(MockResponse(200, body=b"one"), MockResponse(200, body=b"two"))
    names, r = run(server, lambda c, u: c.get(u), interceptors=[twice])
    assert r.content == b"two"
    assert names.count("connection_acquired") == 1 and names.count("connection_released") == 1
    assert names.count("request_headers_start") == 2 and names[-2:] == ["connection_released", "call_end"]


def test_events_proceeding_again_with_the_first_response_open_is_an_error(server: MockServer) -> None:
    def leaky(chain: fastnet.Chain) -> fastnet.Response:
        first = chain.proceed(chain.request)  # held, not closed (a response dropped unread is closed)
        try:
            return chain.proceed(chain.request)
        finally:
            first.close()

    server.enqueue(MockResponse(200, body=b"x" * 100_000), MockResponse(200))
    with make_fast_client(interceptors=[leaky]) as client:
        with pytest.raises(RuntimeError, match=r"previous response is still open.*close\(\)"):
            client.get(server.url("/"))
        assert_pool_clean(client)  # nothing stranded: the first body was drained and pooled


def test_events_expect_continue_nests_the_body_in_the_response_head(server: MockServer) -> None:
    server.enqueue(MockResponse(200))
    names, r = run(server, lambda c, u: c.post(u, body=b"x" * 100, headers={"Expect": "100-continue"}))
    assert r.status_code == 200
    i = names.index("request_headers_end")
    assert names[i : i + 5] == [
        "request_headers_end",
        "response_headers_start",
        "request_body_start",
        "request_body_end",
        "response_headers_end",
    ]


def test_events_server_answers_early_during_an_upload(server: MockServer) -> None:
    server.enqueue(
        MockResponse(
            413, headers={"Connection": "close"}, body=b"no", policy=SocketPolicy.EXPECT_CONTINUE_REJECT
        )
    )
    names, r = run(server, lambda c, u: c.post(u, body=iter([b"x" * (1 << 20)] * 64)))
    assert r.status_code == 413
    i = names.index("request_body_start")
    assert names[i:] == [
        "request_body_start",
        "request_failed",
        "response_headers_start",
        "response_headers_end",
        "follow_up_decision",
        "response_body_start",
        "response_body_end",
        "connection_released",
        "call_end",
    ]
