"""response.timings: the phases of a response on loopback servers, and the Timings value in both twins."""

from __future__ import annotations

import time
from typing import Any

import pytest

import fastnet
from fastnet.testing import MockResponse, MockServer
from tests.support.clients import assert_pool_clean, make_fast_client
from tests.support.holding import HoldingServer
from tests.support.twins import Twins


class SlowDns:
    """A Dns that answers 127.0.0.1 after ``delay`` seconds: a lookup with a known cost."""

    def __init__(self, delay: float) -> None:
        self.delay = delay

    def lookup(self, host: str) -> list[str]:
        time.sleep(self.delay)
        return ["127.0.0.1"]


def timings_of(response: fastnet.Response) -> fastnet.Timings:
    assert response.timings is not None
    return response.timings


def test_timings_a_new_connection(server: MockServer) -> None:
    server.enqueue(MockResponse(200, body=b"abc"))
    with make_fast_client(dns=SlowDns(0.05)) as client:
        r = client.get(server.url("/", host="app.test"))
    t = timings_of(r)
    assert t.dns >= 0.05 and t.connect > 0 and t.tls == 0.0
    assert t.reused is False
    assert t.remote_address == ("127.0.0.1", server.port)
    assert t.queue == 0.0  # execute(): never in a dispatcher
    # curl's points in time, each one later than the one before
    assert t.name_lookup == t.dns
    assert t.connected == pytest.approx(t.dns + t.connect)
    assert t.tls_done == pytest.approx(t.connected)
    assert t.connected <= t.request_sent <= t.first_byte <= t.total
    assert t.request_write > 0 and t.time_to_first_byte > 0
    assert t.total >= t.dns + t.connect + t.request_write + t.time_to_first_byte


def test_timings_a_reused_connection_has_no_connection_phases(server: MockServer) -> None:
    server.enqueue(MockResponse(200, body=b"one"), MockResponse(200, body=b"two"))
    with make_fast_client(dns=SlowDns(0.02)) as client:
        first = timings_of(client.get(server.url("/", host="app.test")))
        second = timings_of(client.get(server.url("/", host="app.test")))
    assert first.reused is False and first.connect > 0
    assert second.reused is True
    assert (second.dns, second.connect, second.tls) == (0.0, 0.0, 0.0)
    assert second.connected == 0.0 and second.tls_done == 0.0
    assert second.remote_address == first.remote_address == ("127.0.0.1", server.port)
    assert 0 < second.request_sent <= second.first_byte <= second.total


def test_timings_tls(tls_server: MockServer, tls_client: fastnet.Client) -> None:
    tls_server.enqueue(MockResponse(200, body=b"secret"), MockResponse(200, body=b"again"))
    t = timings_of(tls_client.get(tls_server.url("/")))
    assert t.tls > 0 and t.connect > 0
    assert t.tls_done == pytest.approx(t.dns + t.connect + t.tls)
    assert t.tls_done <= t.request_sent
    assert t.remote_address == ("127.0.0.1", tls_server.port)
    again = timings_of(tls_client.get(tls_server.url("/")))
    assert again.reused is True and again.tls == 0.0


def test_timings_time_to_first_byte_shows_the_server_delay(server: MockServer) -> None:
    server.enqueue(MockResponse(200, body=b"now"), MockResponse(200, body=b"later", head_delay=0.25))
    with make_fast_client() as client:
        quick = timings_of(client.get(server.url("/")))
        slow = timings_of(client.get(server.url("/")))
    assert slow.time_to_first_byte >= 0.24
    assert slow.time_to_first_byte > quick.time_to_first_byte + 0.1
    assert slow.first_byte >= slow.request_sent + 0.24


def test_timings_body_read_and_total_while_streaming(server: MockServer) -> None:
    body = b"x" * 40_000
    server.enqueue(MockResponse(200, body=body, throttle=(10_000, 0.1)))
    with make_fast_client() as client:
        with client.stream("GET", server.url("/")) as r:
            t = timings_of(r)
            assert t.body_read == 0.0  # not over yet
            chunks = r.iter_bytes()
            first = next(chunks)
            total_then = t.total
            time.sleep(0.05)
            assert t.total > total_then + 0.04  # it grows while the body streams
            rest = b"".join(chunks)
        assert first + rest == body
        assert t.body_read >= 0.25  # three pauses of 0.1 s between the four pieces
        ended = t.total
        time.sleep(0.05)
        assert t.total == ended  # and stops when the body ends
        assert ended >= t.first_byte + t.body_read - 1e-6
        assert_pool_clean(client)


def test_timings_total_stops_when_the_body_is_closed_early(server: MockServer) -> None:
    server.enqueue(MockResponse(200, body=b"y" * 100_000, throttle=(10_000, 0.2)))
    with make_fast_client() as client:
        r = client.stream("GET", server.url("/"))
        t = timings_of(r)
        next(r.iter_bytes())
        r.close()
        closed_at = t.total
        time.sleep(0.05)
        assert t.total == closed_at
        assert_pool_clean(client)


def test_timings_total_stops_when_the_body_is_cut_off(server: MockServer) -> None:
    from fastnet.testing import SocketPolicy

    server.enqueue(
        MockResponse(
            raw=b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabcde",
            policy=SocketPolicy.CLOSE_AFTER_RESPONSE,
        )
    )
    with make_fast_client() as client:
        r = client.stream("GET", server.url("/"))
        t = timings_of(r)
        with pytest.raises(fastnet.ProtocolError):
            r.read()
        failed_at = t.total
        time.sleep(0.05)
        assert t.total == failed_at
        assert_pool_clean(client)


def test_timings_request_write_of_a_large_upload(server: MockServer) -> None:
    server.enqueue(MockResponse(200))
    with make_fast_client() as client:
        r = client.post(server.url("/"), body=iter([b"z" * (1 << 20)] * 8))
    t = timings_of(r)
    assert t.request_write > 0
    assert t.request_sent >= t.request_write
    assert server.take_request().body == b"z" * (8 << 20)


def test_timings_queue_of_an_enqueued_call_that_waited() -> None:
    dispatcher = fastnet.Dispatcher(max_requests=1)
    with HoldingServer() as held, make_fast_client(dispatcher=dispatcher) as client:
        first = client.new_call(fastnet.Request("GET", held.url("/first"))).enqueue()
        second = client.new_call(fastnet.Request("GET", held.url("/second"))).enqueue()
        held.wait_for(1)
        time.sleep(0.2)
        held.release_all()
        waited = timings_of(second.result(10))
        did_not = timings_of(first.result(10))
    assert waited.queue >= 0.2
    assert did_not.queue < waited.queue
    assert waited.total < waited.queue + 5  # the wait is not part of the call's own total
    assert did_not.total >= 0.2  # the first one's total covers the time the server held it


def test_timings_of_a_redirect(server: MockServer) -> None:
    server.enqueue(MockResponse(302, headers={"Location": "/next"}), MockResponse(200, body=b"there"))
    with make_fast_client() as client:
        r = client.get(server.url("/"))
    assert r.content == b"there" and r.prior_response is not None
    hop = timings_of(r.prior_response)
    final = timings_of(r)
    assert hop.reused is False and final.reused is True  # the follow-up ran on the same connection
    assert final.call_start == hop.call_start  # both measured from the start of the one call
    assert final.request_sent > hop.first_byte


def test_timings_none_for_a_response_made_by_an_interceptor(server: MockServer) -> None:
    def answer(chain: fastnet.Chain) -> fastnet.Response:
        return fastnet.Response(200, content=b"made", request=chain.request)

    with make_fast_client(interceptors=[answer]) as client:
        assert client.get(server.url("/")).timings is None


def test_timings_as_dict_and_repr(server: MockServer) -> None:
    server.enqueue(MockResponse(200, body=b"abc"))
    with make_fast_client() as client:
        t = timings_of(client.get(server.url("/")))
    d = t.as_dict()
    assert list(d) == [
        "queue",
        "dns",
        "connect",
        "tls",
        "request_write",
        "time_to_first_byte",
        "body_read",
        "total",
        "name_lookup",
        "connected",
        "tls_done",
        "request_sent",
        "first_byte",
        "reused",
        "remote_address",
    ]
    assert d["connect"] == t.connect and d["total"] == t.total and d["remote_address"] == t.remote_address
    assert repr(t).startswith("<Timings total=") and " ms " in repr(t)


# -- the value, in both twins ---------------------------------------------------------------------


def test_timings_value_from_timestamps(twins: Twins) -> None:
    m: Any = twins("fastnet.timings")
    t = m.new_timings(100.0, 0.5)
    assert (t.call_start, t.queue, t.reused, t.remote_address) == (100.0, 0.5, False, None)
    # nothing reached yet: every phase is 0.0, total runs from the call's start to now
    assert (t.request_write, t.time_to_first_byte, t.body_read, t.request_sent, t.first_byte) == (0,) * 5
    t.dns, t.connect, t.tls = 0.01, 0.02, 0.03
    t.request_start, t.request_end, t.first_byte_at, t.body_end = 100.06, 100.07, 100.1, 100.4
    assert t.request_write == pytest.approx(0.01)
    assert t.time_to_first_byte == pytest.approx(0.03)
    assert t.body_read == pytest.approx(0.3)
    assert t.total == pytest.approx(0.4)
    assert (t.name_lookup, t.connected, t.tls_done) == pytest.approx((0.01, 0.03, 0.06))
    assert (t.request_sent, t.first_byte) == pytest.approx((0.07, 0.1))
    t.first_byte_at = 100.05  # before the request ended (an early answer): no negative duration
    assert t.time_to_first_byte == 0.0


def test_timings_value_total_before_the_call_started(twins: Twins) -> None:
    m: Any = twins("fastnet.timings")
    assert m.new_timings(0.0, 0.0).total == 0.0
    running = m.new_timings(time.monotonic() - 1.0, 0.0)
    assert 1.0 <= running.total < 60  # no body end yet: up to now


def test_timings_twins_agree() -> None:
    from tests.support.twins import available_twins

    twins = available_twins("fastnet.timings")
    seen = []
    for module in twins.values():
        t = module.new_timings(50.0, 0.25)
        t.dns, t.connect = 0.001, 0.002
        t.request_start, t.request_end, t.first_byte_at, t.body_end = 50.01, 50.02, 50.05, 50.5
        t.reused, t.remote_address = True, ("127.0.0.1", 80)
        seen.append((t.as_dict(), repr(t)))
    assert all(s == seen[0] for s in seen)
