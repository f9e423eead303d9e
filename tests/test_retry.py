"""``fastnet.Retry``: the immutable policy, backoff, Retry-After, and its use as an interceptor."""

from __future__ import annotations

import email.utils
import socket
import threading
import time

import pytest

import fastnet
from fastnet.retry import RequestHistory, parse_retry_after
from fastnet.testing import MockResponse, SocketPolicy
from tests.support.clients import assert_pool_clean, make_client

pytestmark = pytest.mark.both_clients


def retrying_client(retry: fastnet.Retry, **options):
    """``make_client`` with ``retry`` as its one application interceptor."""
    return make_client(interceptors=[retry], **options)


# ------------------------------------------------------------------------------------------------ policy


def test_retry_policy_defaults():
    r = fastnet.Retry()
    assert r.total == 3 and r.backoff_factor == 0 and r.backoff_max == 120 and r.jitter == 0
    assert r.status_forcelist == frozenset()
    assert r.allowed_methods == frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS", "TRACE"})
    assert r.respect_retry_after is True and r.retry_on_timeout is False and r.history == ()


def test_retry_policy_is_immutable():
    r = fastnet.Retry(total=2)
    with pytest.raises(AttributeError):
        r.total = 5
    with pytest.raises(AttributeError):
        del r.total
    nxt = r.increment("GET", "http://x/", error=fastnet.ConnectError("down"))
    assert r.total == 2 and r.history == ()
    assert nxt.total == 1 and len(nxt.history) == 1
    assert isinstance(nxt.history[0], RequestHistory) and nxt.history[0].method == "GET"
    assert nxt.history[0].status is None and isinstance(nxt.history[0].error, fastnet.ConnectError)
    assert nxt.increment().increment().is_exhausted() and not nxt.increment().is_exhausted()
    assert r.replace(total=7).total == 7 and r.total == 2
    with pytest.raises(TypeError):
        r.replace(bogus=1)  # type: ignore[call-arg]


@pytest.mark.parametrize(
    "kwargs, error",
    [
        ({"total": "3"}, TypeError),
        ({"total": True}, TypeError),
        ({"total": -5}, ValueError),
        ({"total": 10**9}, ValueError),
        ({"backoff_factor": -1}, ValueError),
        ({"backoff_factor": float("nan")}, ValueError),
        ({"backoff_max": float("inf")}, ValueError),
        ({"jitter": "x"}, TypeError),
        ({"status_forcelist": "503"}, TypeError),
        ({"status_forcelist": [503, "x"]}, TypeError),
        ({"status_forcelist": [42]}, TypeError),
        ({"allowed_methods": "GET"}, TypeError),
        ({"respect_retry_after": 1}, TypeError),
        ({"retry_on_timeout": None}, TypeError),
    ],
)
def test_retry_policy_rejects_bad_arguments(kwargs, error):
    with pytest.raises(error):
        fastnet.Retry(**kwargs)


def test_retry_policy_backoff_is_exponential_and_capped():
    r = fastnet.Retry(total=10, backoff_factor=0.5, backoff_max=3.0)
    assert r.get_backoff_time() == 0
    waits = []
    for _ in range(5):
        r = r.increment("GET", None)
        waits.append(r.get_backoff_time())
    assert waits == [0.5, 1.0, 2.0, 3.0, 3.0]


def test_retry_policy_jitter_stays_in_range():
    r = fastnet.Retry(backoff_factor=1.0, jitter=0.25).increment("GET")
    for _ in range(50):
        assert 1.0 <= r.get_backoff_time() <= 1.25


def test_retry_policy_backoff_never_overflows():
    r = fastnet.Retry(total=10_000, backoff_factor=1.0, backoff_max=5.0)
    for _ in range(2000):
        r = r.increment()
    assert r.get_backoff_time() == 5.0


def test_retry_policy_decisions():
    r = fastnet.Retry(status_forcelist={500, 502})
    assert r.is_retry_status("GET", 500) and not r.is_retry_status("GET", 404)
    assert not r.is_retry_status("POST", 500)
    assert r.is_retry_status("get", 502)
    assert r.is_retry_status("GET", 503, has_retry_after=True)
    assert r.is_retry_status("GET", 429, has_retry_after=True)
    assert not r.is_retry_status("GET", 429)
    assert not r.replace(respect_retry_after=False).is_retry_status("GET", 503, has_retry_after=True)
    assert r.is_retry_error("GET", fastnet.ConnectionClosedError("x"))
    assert not r.is_retry_error("POST", fastnet.ConnectionClosedError("x"))
    assert not r.is_retry_error("GET", fastnet.ReadTimeout("x"))
    assert r.replace(retry_on_timeout=True).is_retry_error("GET", fastnet.ReadTimeout("x"))
    assert not r.replace(retry_on_timeout=True).is_retry_error("GET", fastnet.CallTimeout("x"))
    for never in (
        fastnet.CanceledError("x"),
        fastnet.ProtocolError("x"),
        fastnet.TlsVerificationError("x"),
        fastnet.RouteError("x"),
        fastnet.ProxyError("x", status_code=407),
        ValueError("x"),
    ):
        assert not r.is_retry_error("GET", never)
    assert r.replace(allowed_methods={"post"}).is_retry_error("POST", fastnet.ConnectionClosedError("x"))


def test_retry_policy_parse_retry_after():
    assert parse_retry_after("120") == 120.0
    assert parse_retry_after(" 7 ") == 7.0
    assert parse_retry_after("0") == 0.0
    now = 1_700_000_000.0
    future = email.utils.formatdate(now + 30, usegmt=True)
    past = email.utils.formatdate(now - 30, usegmt=True)
    assert parse_retry_after(future, now=now) == pytest.approx(30.0)
    assert parse_retry_after(past, now=now) == 0.0
    assert parse_retry_after("9" * 40) == float("inf")
    for bad in (None, "", "-1", "1.5", "soon", "Wed, 99 Foo 2015 07:28:00 GMT", "\x00", "1e10", "٣"):
        assert parse_retry_after(bad) is None


# ------------------------------------------------------------------------------------------------ interceptor


def test_retry_policy_503_twice_then_200_with_backoff(server):
    retry = fastnet.Retry(total=3, backoff_factor=0.05, status_forcelist={503})
    with retrying_client(retry) as client:
        server.enqueue(
            MockResponse(503, body=b"busy"), MockResponse(503, body=b"busy"), MockResponse(200, body=b"ok")
        )
        start = time.monotonic()
        r = client.get(server.url("/flaky"))
        elapsed = time.monotonic() - start
        assert r.text == "ok"
        assert [p.status_code for p in r.history] == [503, 503]
        with pytest.raises(RuntimeError):
            _ = r.history[0].content
        assert server.request_count == 3
        assert elapsed >= 0.05 + 0.1 - 0.01  # it did wait between attempts (0.05 s, then 0.1 s)
        assert_pool_clean(client)
        assert client.connection_pool.connection_count() == 1  # every attempt reused one connection


def test_retry_policy_gives_up_after_total(server):
    with retrying_client(fastnet.Retry(total=2, status_forcelist={500})) as client:
        server.dispatcher = lambda rec: MockResponse(500, body=b"broken")
        r = client.get(server.url("/"))
        assert r.status_code == 500 and r.text == "broken"
        assert len(r.history) == 2 and server.request_count == 3
        assert_pool_clean(client)


def test_retry_policy_total_zero_never_retries(server):
    with retrying_client(fastnet.Retry(total=0, status_forcelist={500})) as client:
        server.dispatcher = lambda rec: MockResponse(500)
        assert client.get(server.url("/")).status_code == 500
        assert server.request_count == 1


def test_retry_policy_other_status_returned_at_once(server):
    with retrying_client(fastnet.Retry(status_forcelist={503})) as client:
        server.enqueue(MockResponse(404))
        assert client.get(server.url("/")).status_code == 404 and server.request_count == 1


def test_retry_policy_post_not_retried_by_default(server):
    with retrying_client(fastnet.Retry(status_forcelist={503})) as client:
        server.enqueue(MockResponse(503), MockResponse(200))
        assert client.post(server.url("/"), body=b"order").status_code == 503
        assert server.request_count == 1
    with retrying_client(fastnet.Retry(status_forcelist={503}, allowed_methods={"POST"})) as client:
        server.enqueue(MockResponse(200))
        assert client.post(server.url("/"), body=b"order").status_code == 200
        server.take_request()
        assert server.take_request().body == b"order"


def test_retry_policy_never_replays_one_shot_body(server):
    with retrying_client(fastnet.Retry(status_forcelist={503})) as client:
        server.enqueue(MockResponse(503), MockResponse(200))
        r = client.put(server.url("/"), body=iter([b"stream"]))
        assert r.status_code == 503 and server.request_count == 1
        assert_pool_clean(client)


def test_retry_policy_retry_after_seconds(server):
    with retrying_client(fastnet.Retry(total=1)) as client:
        server.enqueue(MockResponse(429, headers={"Retry-After": "1"}), MockResponse(200))
        start = time.monotonic()
        r = client.get(server.url("/"))
        assert r.status_code == 200 and [p.status_code for p in r.history] == [429]
        assert time.monotonic() - start >= 0.95


def test_retry_policy_retry_after_http_date(server):
    with retrying_client(fastnet.Retry(total=1, backoff_factor=50)) as client:
        past = email.utils.formatdate(time.time() - 3600, usegmt=True)
        server.enqueue(MockResponse(503, headers={"Retry-After": past}), MockResponse(200))
        start = time.monotonic()
        assert client.get(server.url("/")).status_code == 200  # a date in the past: retry now
        assert time.monotonic() - start < 30  # the date replaced the 50 s backoff
        future = email.utils.formatdate(time.time() + 3600, usegmt=True)
        server.enqueue(MockResponse(503, headers={"Retry-After": future}), MockResponse(200))
        r = client.get(server.url("/"))
        assert r.status_code == 503 and r.history == []  # longer than backoff_max: not waited for
        assert_pool_clean(client)


@pytest.mark.parametrize("value", ["99999999999999999999999", "-5", "garbage", "1.5", ""])
def test_retry_policy_bad_retry_after_never_crashes(server, value):
    with retrying_client(fastnet.Retry(total=1, status_forcelist={503}, backoff_max=1)) as client:
        server.enqueue(MockResponse(503, headers={"Retry-After": value}), MockResponse(200))
        r = client.get(server.url("/"))
        assert r.status_code in (200, 503)
        if value.startswith("999"):
            assert r.status_code == 503 and r.history == []
        assert_pool_clean(client)


def test_retry_policy_respect_retry_after_off(server):
    with retrying_client(fastnet.Retry(total=1, respect_retry_after=False)) as client:
        server.enqueue(MockResponse(503, headers={"Retry-After": "3"}), MockResponse(200))
        assert client.get(server.url("/")).status_code == 503


def test_retry_policy_cancel_interrupts_the_wait(server):
    with retrying_client(fastnet.Retry(total=1, backoff_factor=60, status_forcelist={503})) as client:
        server.enqueue(MockResponse(503), MockResponse(200))
        call = client.new_call(fastnet.Request("GET", server.url("/")))
        timer = threading.Timer(0.2, call.cancel)
        timer.start()
        start = time.monotonic()
        try:
            with pytest.raises(fastnet.CanceledError):
                call.execute()
        finally:
            timer.cancel()
        assert time.monotonic() - start < 30
        assert server.request_count == 1
        assert_pool_clean(client)


def test_retry_policy_call_timeout_interrupts_the_wait(server):
    with retrying_client(
        fastnet.Retry(total=1, backoff_factor=60, status_forcelist={503}), call_timeout=0.3
    ) as client:
        server.enqueue(MockResponse(503), MockResponse(200))
        start = time.monotonic()
        with pytest.raises(fastnet.CallTimeout):
            client.get(server.url("/"))
        assert time.monotonic() - start < 30
        assert_pool_clean(client)


def test_retry_policy_network_failure_retried_and_reported(server):
    decisions = []

    class Listener(fastnet.EventListener):
        def retry_decision(self, call, error, retry):
            decisions.append((type(error).__name__, retry))

    with retrying_client(fastnet.Retry(total=2), event_listener=Listener()) as client:
        server.enqueue(
            MockResponse(200, policy=SocketPolicy.DISCONNECT_AFTER_REQUEST), MockResponse(200, body=b"ok")
        )
        r = client.get(server.url("/"))
        assert r.text == "ok" and server.request_count == 2
        # the core declines (fresh connection, no other route), then the policy retries
        assert ("ConnectionClosedError", False) in decisions and ("ConnectionClosedError", True) in decisions
        assert_pool_clean(client)


def test_retry_policy_network_failure_post_not_retried(server):
    with retrying_client(fastnet.Retry(total=2)) as client:
        server.enqueue(MockResponse(200, policy=SocketPolicy.DISCONNECT_AFTER_REQUEST), MockResponse(200))
        with pytest.raises(fastnet.ConnectionClosedError):
            client.post(server.url("/"), body=b"order")
        assert server.request_count == 1
        assert_pool_clean(client)


def test_retry_policy_connect_errors_listed_in_recovered():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound but not listening: connections are refused
        with retrying_client(fastnet.Retry(total=2)) as client:
            with pytest.raises(fastnet.ConnectError) as info:
                client.get(f"http://127.0.0.1:{port}/")
            assert len(info.value.recovered) == 2
            assert all(isinstance(e, fastnet.ConnectError) for e in info.value.recovered)
            assert client.connection_pool.connection_count() == 0


def test_retry_policy_timeouts_only_with_retry_on_timeout(server):
    with retrying_client(fastnet.Retry(total=1), read_timeout=0.2) as client:
        server.enqueue(MockResponse(200, policy=SocketPolicy.NO_RESPONSE))
        with pytest.raises(fastnet.ReadTimeout):
            client.get(server.url("/"))
        assert server.request_count == 1
        assert_pool_clean(client)
    with retrying_client(fastnet.Retry(total=1, retry_on_timeout=True), read_timeout=0.2) as client:
        server.enqueue(MockResponse(200, policy=SocketPolicy.NO_RESPONSE), MockResponse(200, body=b"second"))
        assert client.get(server.url("/")).text == "second"
        assert_pool_clean(client)


def test_retry_policy_history_includes_redirects_inside_attempts(server):
    with retrying_client(fastnet.Retry(total=1, status_forcelist={503})) as client:
        server.enqueue(
            MockResponse(302, headers={"Location": "/b"}),
            MockResponse(503),
            MockResponse(302, headers={"Location": "/b"}),
            MockResponse(200, body=b"done"),
        )
        r = client.get(server.url("/a"))
        assert r.text == "done"
        assert [p.status_code for p in r.history] == [302, 503, 302]
        assert [p.url.path for p in r.history] == ["/a", "/b", "/a"]


def test_retry_policy_shared_between_clients_is_not_consumed(server):
    retry = fastnet.Retry(total=1, status_forcelist={503})
    with retrying_client(retry) as one, retrying_client(retry) as two:
        for client in (one, two, one):
            server.enqueue(MockResponse(503), MockResponse(200))
            assert client.get(server.url("/")).status_code == 200
    assert retry.total == 1 and retry.history == ()
