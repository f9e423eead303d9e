"""EventListener: the exact event sequences of OkHttp's EventListenerTest, on real sockets.

Each test runs one call against MockServer (or a refused port, or a failing Dns) and compares the
names of the events in order. ``app.test`` resolves through a FakeDns to 127.0.0.1 so the DNS events
appear; IP-literal URLs never reach a resolver.
"""

from __future__ import annotations

import logging
import re
import socket
import threading
import time
from typing import Any

import pytest

import fastnet
from fastnet.testing import MockResponse, MockServer, SocketPolicy
from tests.support.clients import assert_pool_clean, make_fast_client
from tests.support.fakes import FakeDns, RecordingListener
from tests.support.holding import HoldingServer

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

#: As HEAD_AND_CONNECT, for an IP-literal URL: no DNS.
HEAD_AND_CONNECT_IP = [name for name in HEAD_AND_CONNECT if not name.startswith("dns_")]


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


def _challenge(_request: Any) -> MockResponse:
    return MockResponse(401, headers={"WWW-Authenticate": "Bearer"}, body=b"who are you")


def test_events_auth_follow_ups_up_to_too_many(server: MockServer) -> None:
    """OkHttp's order for an authenticator answering every 401 with fresh credentials: each 401's body
    is read (and closed) before its ``follow_up_decision``, the 21st too, whose decision is None, and
    then the call fails with "too many follow-up requests"."""
    tokens = iter(range(100))

    def fresh(route: Any, response: Any) -> Any:
        return response.request.replace(
            headers=response.request.headers.set("Authorization", f"Bearer t{next(tokens)}")
        )

    server.dispatcher = _challenge
    listener = RecordingListener()
    dns = FakeDns({"app.test": ["127.0.0.1"]})
    with make_fast_client(event_listener=listener, dns=dns, authenticator=fresh) as client:
        with pytest.raises(fastnet.ProtocolError, match="Too many follow-up requests: 21"):
            client.get(server.url("/", host="app.test"))
    hop = ["response_headers_start", "response_headers_end", "response_body_start", "response_body_end"]
    again = ["follow_up_decision", "request_headers_start", "request_headers_end"]
    assert listener.names() == [
        *HEAD_AND_CONNECT,
        *hop,
        *(again + hop) * 20,
        "follow_up_decision",
        "connection_released",
        "call_failed",
    ]
    decisions = [args[2] for name, args in listener.events if name == "follow_up_decision"]
    assert len(decisions) == 21 and None not in decisions[:20] and decisions[20] is None
    assert server.request_count == 21


def test_events_same_credentials_until_accepted(server: MockServer) -> None:
    """An authenticator that offers the same credentials again gets them sent (as OkHttp does): a 401's
    body is read before its ``follow_up_decision``; the accepted response's after it."""

    def same(route: Any, response: Any) -> Any:
        return response.request.replace(headers=response.request.headers.set("Authorization", "Bearer same"))

    server.enqueue(_challenge(None), _challenge(None), MockResponse(200, body=b"in"))
    names, r = run(server, lambda c, u: c.get(u), authenticator=same)
    assert r.text == "in" and len(r.history) == 2
    hop = ["response_headers_start", "response_headers_end", "response_body_start", "response_body_end"]
    again = ["follow_up_decision", "request_headers_start", "request_headers_end"]
    assert names == [
        *HEAD_AND_CONNECT,
        *hop,
        *again,
        *hop,
        *again,
        "response_headers_start",
        "response_headers_end",
        "follow_up_decision",
        "response_body_start",
        "response_body_end",
        "connection_released",
        "call_end",
    ]
    assert server.request_count == 3


@pytest.mark.parametrize("status", [200, 401])
def test_events_empty_body_ends_before_the_follow_up_decision(server: MockServer, status: int) -> None:
    """A returned response with ``Content-Length: 0`` has no body to read: as in OkHttp (whose body source
    completes as it is opened), its body events come before the ``follow_up_decision``."""
    server.enqueue(MockResponse(status, headers={"Content-Length": "0"}))
    names, r = run(server, lambda c, u: c.get(u))
    assert r.status_code == status and r.content == b""
    assert names == [
        *HEAD_AND_CONNECT,
        "response_headers_start",
        "response_headers_end",
        "response_body_start",
        "response_body_end",
        "follow_up_decision",
        "connection_released",
        "call_end",
    ]


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


def test_events_first_route_refused_then_the_next_one_connects(server: MockServer) -> None:
    server.enqueue(MockResponse(200, body=b"ok"))
    # nothing listens on 127.0.0.2 at the server's port: that route is refused, 127.0.0.1 answers
    dns = FakeDns({"app.test": ["127.0.0.2", "127.0.0.1"]})
    listener = RecordingListener()
    with make_fast_client(event_listener=listener, dns=dns) as client:
        assert client.get(server.url("/", host="app.test")).content == b"ok"
    assert listener.names() == [
        "call_start",
        "proxy_select_start",
        "proxy_select_end",
        "dns_start",
        "dns_end",
        "connect_start",
        "connect_failed",
        "connect_start",  # the next route at once: no retry decision for a route of the same plan
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
    connects = [
        (name, args[1].socket_address[0]) for name, args in listener.events if name.startswith("connect_")
    ]
    assert connects == [
        ("connect_start", "127.0.0.2"),
        ("connect_failed", "127.0.0.2"),
        ("connect_start", "127.0.0.1"),
        ("connect_end", "127.0.0.1"),
    ]


def test_events_canceled_while_running() -> None:
    listener = RecordingListener()
    with HoldingServer() as held, make_fast_client(event_listener=listener, read_timeout=30) as client:
        call = client.new_call(fastnet.Request("GET", held.url("/held")))
        outcome: list[BaseException] = []

        def run() -> None:
            try:
                call.execute()
            except fastnet.FastnetError as exc:
                outcome.append(exc)

        thread = threading.Thread(target=run)
        thread.start()
        held.wait_for(1)  # the request is on the wire, its answer held
        deadline = time.monotonic() + 10
        while "request_headers_end" not in listener.names() and time.monotonic() < deadline:
            time.sleep(0.005)  # the server can read the request before the client reports it written
        call.cancel()
        thread.join(10)
        assert len(outcome) == 1 and isinstance(outcome[0], fastnet.CanceledError)
        assert_pool_clean(client)
    assert listener.names() == [
        *HEAD_AND_CONNECT_IP,
        "canceled",
        "response_failed",  # the read the cancel cut short
        "retry_decision",
        "connection_released",
        "call_failed",
    ]
    retry = [args for name, args in listener.events if name == "retry_decision"]
    assert retry[0][2] is False


def test_events_call_timeout(server: MockServer) -> None:
    server.enqueue(MockResponse(200, policy=SocketPolicy.NO_RESPONSE))
    listener = RecordingListener()
    with make_fast_client(event_listener=listener, call_timeout=0.3) as client:
        with pytest.raises(fastnet.CallTimeout):
            client.get(server.url("/"))
        assert_pool_clean(client)
    assert listener.names() == [
        *HEAD_AND_CONNECT_IP,
        "canceled",  # the watchdog cancels the call at its deadline
        "response_failed",
        "retry_decision",
        "connection_released",
        "call_failed",
    ]
    failed = [args for name, args in listener.events if name == "call_failed"]
    assert isinstance(failed[0][1], fastnet.CallTimeout)


def test_events_enqueued_calls_that_waited_and_that_did_not() -> None:
    listeners: dict[str, Any] = {}

    def per_call(call: Any) -> Any:
        listener = listeners[call.request.url.path] = RecordingListener()
        return listener

    dispatcher = fastnet.Dispatcher(max_requests=1)
    with HoldingServer() as held:
        with make_fast_client(event_listener_factory=per_call, dispatcher=dispatcher) as client:
            first = client.new_call(fastnet.Request("GET", held.url("/first"))).enqueue()
            second = client.new_call(fastnet.Request("GET", held.url("/second"))).enqueue()
            held.wait_for(1)
            assert listeners["/second"].names() == ["dispatcher_queue_start"]  # reported at enqueue
            held.release_all()
            assert first.result(10).content == b"/first" and second.result(10).content == b"/second"
    answer = [
        "response_headers_start",
        "response_headers_end",
        "follow_up_decision",
        "response_body_start",
        "response_body_end",
        "connection_released",
        "call_end",
    ]
    assert listeners["/first"].names() == [*HEAD_AND_CONNECT_IP, *answer]  # no queue events
    assert listeners["/second"].names() == [
        "dispatcher_queue_start",
        "dispatcher_queue_end",
        "call_start",
        "connection_acquired",  # the connection the first call gave back
        "request_headers_start",
        "request_headers_end",
        *answer,
    ]


def test_events_queue_events_pair_up_under_churn(server: MockServer) -> None:
    server.default_response = MockResponse(200, body=b"ok")
    listeners: list[Any] = []
    lock = threading.Lock()

    def per_call(call: Any) -> Any:
        listener = RecordingListener()
        with lock:
            listeners.append(listener)
        return listener

    dispatcher = fastnet.Dispatcher(max_requests=2)
    with make_fast_client(event_listener_factory=per_call, dispatcher=dispatcher) as client:
        futures = [client.new_call(fastnet.Request("GET", server.url(f"/{i}"))).enqueue() for i in range(300)]
        assert all(f.result(20).content == b"ok" for f in futures)
    waited = 0
    for listener in listeners:
        names = listener.names()
        if names[0] == "dispatcher_queue_start":
            waited += 1
            assert names[1:3] == ["dispatcher_queue_end", "call_start"]
            names = names[2:]
        assert names[0] == "call_start" and names[-1] == "call_end"
        assert "dispatcher_queue_start" not in names and "dispatcher_queue_end" not in names
    assert waited > 0


def test_events_queued_call_failed_by_shutdown() -> None:
    listeners: dict[str, Any] = {}

    def per_call(call: Any) -> Any:
        listener = listeners[call.request.url.path] = RecordingListener()
        return listener

    dispatcher = fastnet.Dispatcher(max_requests=1)
    with HoldingServer() as held:
        with make_fast_client(event_listener_factory=per_call, dispatcher=dispatcher) as client:
            running = client.new_call(fastnet.Request("GET", held.url("/running"))).enqueue()
            queued = client.new_call(fastnet.Request("GET", held.url("/queued"))).enqueue()
            held.wait_for(1)
            dispatcher.shutdown(wait=False)
            assert isinstance(queued.exception(5), fastnet.CanceledError)
            held.release_all()
            assert running.result(10).content == b"/running"
    assert listeners["/queued"].names() == [
        "dispatcher_queue_start",
        "canceled",
        "dispatcher_queue_end",
        "call_start",
        "call_failed",
    ]


# -- LoggingEventListener -------------------------------------------------------------------------

LINE = re.compile(r"^ *(\d+\.\d{3}) ms <Call GET [^>]+> (.+)$")


def logged(caplog: pytest.LogCaptureFixture) -> list[tuple[float, str]]:
    """(elapsed ms, the rest) of each fastnet.events record."""
    out = []
    for record in caplog.records:
        if record.name == "fastnet.events":
            m = LINE.match(record.getMessage())
            assert m is not None, record.getMessage()
            out.append((float(m.group(1)), m.group(2)))
    return out


def test_logging_listener_writes_one_line_per_event(
    server: MockServer, caplog: pytest.LogCaptureFixture
) -> None:
    server.enqueue(MockResponse(200, body=b"abc"), MockResponse(200, body=b"abc", head_delay=0.1))
    recorded, _ = run(server, lambda c, u: c.get(u))
    with caplog.at_level(logging.DEBUG, logger="fastnet.events"):
        with make_fast_client(
            event_listener=fastnet.LoggingEventListener(), dns=FakeDns({"app.test": ["127.0.0.1"]})
        ) as client:
            assert client.get(server.url("/", host="app.test")).content == b"abc"
    lines = logged(caplog)
    assert len(lines) == len(recorded)  # one line per event, in the same order
    for (_, text), name in zip(lines, recorded, strict=True):
        assert text.startswith(name.replace("_", " ").replace("follow up", "follow-up"))
    elapsed = [ms for ms, _ in lines]
    assert elapsed == sorted(elapsed) and elapsed[0] < 50
    assert elapsed[-1] >= 100  # milliseconds: the server held the head 0.1 s
    assert all(r.levelno == logging.DEBUG for r in caplog.records if r.name == "fastnet.events")
    texts = [text for _, text in lines]
    assert "dns end app.test -> 127.0.0.1" in texts
    assert "response headers end 200 OK" in texts and "response body end (3 bytes)" in texts


def test_logging_listener_times_each_call_from_its_own_start(
    server: MockServer, caplog: pytest.LogCaptureFixture
) -> None:
    server.enqueue(MockResponse(200, body=b"one"), MockResponse(200, body=b"two"))
    with caplog.at_level(logging.DEBUG, logger="fastnet.events"):
        with make_fast_client(event_listener=fastnet.LoggingEventListener()) as client:
            client.get(server.url("/"))
            time.sleep(0.2)
            client.get(server.url("/"))
    lines = logged(caplog)
    starts = [ms for ms, text in lines if text == "call start"]
    assert len(starts) == 2 and starts[1] < 50  # the second call's clock started with it


def test_logging_listener_level_logger_and_disabled(
    server: MockServer, caplog: pytest.LogCaptureFixture
) -> None:
    server.default_response = MockResponse(200, body=b"ok")
    mine = logging.getLogger("tests.events")
    with caplog.at_level(logging.INFO, logger="tests.events"):
        with make_fast_client(event_listener=fastnet.LoggingEventListener(mine, logging.INFO)) as client:
            client.get(server.url("/"))
    records = [r for r in caplog.records if r.name == "tests.events"]
    assert records and all(r.levelno == logging.INFO for r in records)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="fastnet.events"):  # DEBUG lines are off
        with make_fast_client(event_listener=fastnet.LoggingEventListener()) as client:
            client.get(server.url("/"))
    assert [r for r in caplog.records if r.name == "fastnet.events"] == []


def test_logging_listener_hides_credentials(server: MockServer, caplog: pytest.LogCaptureFixture) -> None:
    server.enqueue(MockResponse(302, headers={"Location": "/next"}), MockResponse(200, body=b"ok"))
    url = server.url("/").replace("http://", "http://user:s3cr3t@")
    with caplog.at_level(logging.DEBUG, logger="fastnet.events"):
        with make_fast_client(event_listener=fastnet.LoggingEventListener()) as client:
            client.get(url)
    messages = [r.getMessage() for r in caplog.records if r.name == "fastnet.events"]
    assert messages and not any("s3cr3t" in m for m in messages)


def test_logging_listener_covers_every_event() -> None:
    events = {name for name in vars(fastnet.EventListener) if not name.startswith("_")}
    assert events <= set(vars(fastnet.LoggingEventListener))
