"""The load generator's event loop (``fastnet.load.loop``), both twins, against real loopback servers."""

from __future__ import annotations

import random
import socket
import threading
import time
from collections import Counter
from types import SimpleNamespace
from typing import Any

import pytest

from fastnet.load._hist import HIGHEST_US, Histograms, new_histogram
from fastnet.testing import MockResponse, MockServer, RecordedRequest, SocketPolicy
from tests.support.loadkit import drive, group, refused_port
from tests.support.twins import Twins, available_twins

LOOP = "fastnet.load.loop"


def test_engine_counts_every_request_at_the_server(twins: Twins, server: MockServer) -> None:
    server.default_response = MockResponse(200, body=b"hello")
    engine, hist = drive(twins(LOOP), [group(server.port)], [0] * 4, total=500)
    assert server.request_count == 500
    assert (engine.completed, engine.failed, engine.dispatched) == (500, 0, 500)
    assert engine.statuses() == {200: 500}
    assert engine.connections_opened == 4  # keep-alive: one connection each
    assert engine.reason == "requests"
    assert hist.latency.get_total_count() == 500
    assert hist.first_byte.get_total_count() == 500
    assert hist.response.get_total_count() == 500
    assert hist.connect.get_total_count() == 4


def test_engine_cycles_through_a_groups_requests(twins: Twins, server: MockServer) -> None:
    server.default_response = MockResponse(200, body=b"x")
    drive(twins(LOOP), [group(server.port, "/a", "/b", "/c")], [0] * 3, total=300)
    paths = Counter(server.take_request().target for _ in range(300))
    assert paths == {"/a": 100, "/b": 100, "/c": 100}


def test_engine_opens_a_connection_per_request_when_asked_to_close(twins: Twins, server: MockServer) -> None:
    server.default_response = MockResponse(200, body=b"x")
    closing = group(server.port, extra="Connection: close\r\n")
    engine, _ = drive(twins(LOOP), [closing], [0, 0], total=40, keepalive=False)
    assert engine.completed == 40
    assert engine.connections_opened == 40
    assert server.connection_count == 40


def test_engine_reads_chunked_and_large_bodies(twins: Twins, server: MockServer) -> None:
    big = bytes(range(256)) * 800  # 200 KiB, more than one receive buffer
    responses = {
        "/chunked": MockResponse(200, body=big[:100_000], chunked=True, chunk_size=7000),
        "/big": MockResponse(200, body=big),
        "/until-close": MockResponse(
            200, body=b"z" * 5000, add_content_length=False, policy=SocketPolicy.CLOSE_AFTER_RESPONSE
        ),
    }
    server.dispatcher = lambda request: responses[request.target]
    engine, _ = drive(twins(LOOP), [group(server.port, "/chunked", "/big", "/until-close")], [0, 0], total=30)
    assert (engine.completed, engine.failed) == (30, 0), engine.errors()
    assert engine.bytes_received > 10 * (100_000 + len(big) + 5000)
    assert engine.connections_opened > 2  # a body that ends at EOF takes its connection with it


def test_engine_expects_no_body_after_head(twins: Twins, server: MockServer) -> None:
    server.default_response = MockResponse(200, headers={"Content-Length": "1000"}, add_content_length=False)
    engine, _ = drive(twins(LOOP), [group(server.port, method="HEAD")], [0], total=5, head=True)
    assert (engine.completed, engine.failed) == (5, 0)
    assert server.take_request().method == "HEAD"


def test_engine_groups_refused_connections(twins: Twins) -> None:
    port = refused_port()
    engine, _ = drive(twins(LOOP), [group(port)], [0], total=5)
    assert (engine.completed, engine.failed) == (0, 5)
    assert engine.errors() == {
        "ConnectError (ECONNREFUSED)": (
            5,
            f"connect to 127.0.0.1:{port} failed: [Errno 111] Connection refused",
        )
    }


def test_engine_groups_resets(twins: Twins, server: MockServer) -> None:
    server.default_response = MockResponse(policy=SocketPolicy.RESET_AFTER_REQUEST)
    engine, _ = drive(twins(LOOP), [group(server.port)], [0, 0], total=6)
    count, example = engine.errors()["ConnectionClosedError (ECONNRESET)"]
    assert count == 6 and engine.failed == 6
    assert (
        example == f"connection lost reading the response: Connection reset by peer (127.0.0.1:{server.port})"
    )


def test_engine_times_out_a_silent_server(twins: Twins, server: MockServer) -> None:
    server.default_response = MockResponse(policy=SocketPolicy.NO_RESPONSE)
    t0 = time.monotonic()
    engine, _ = drive(twins(LOOP), [group(server.port)], [0, 0], total=2, timeout=0.3)
    assert time.monotonic() - t0 < 3
    assert engine.errors() == {
        "ReadTimeout": (2, f"no complete response within 0.3 s (127.0.0.1:{server.port})")
    }


def test_engine_rejects_malformed_and_cut_responses(twins: Twins, server: MockServer) -> None:
    responses = {
        "/bad": MockResponse(raw=b"HTTP/1.1 2x0 OK\r\n\r\n", policy=SocketPolicy.CLOSE_AFTER_RESPONSE),
        "/cut": MockResponse(
            raw=b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", policy=SocketPolicy.CLOSE_AFTER_RESPONSE
        ),
        "/gone": MockResponse(policy=SocketPolicy.DISCONNECT_AFTER_REQUEST),
    }
    server.dispatcher = lambda request: responses[request.target]
    engine, _ = drive(twins(LOOP), [group(server.port, "/bad", "/cut", "/gone")], [0], total=3)
    errors = engine.errors()
    assert engine.failed == 3
    assert errors["ProtocolError"][0] == 2
    assert errors["ProtocolError"][1].startswith("Unexpected status line: 'HTTP/1.1 2x0 OK'")
    assert errors["ConnectionClosedError"] == (
        1,
        f"unexpected end of stream before the response head (127.0.0.1:{server.port})",
    )


def _mixed(request: RecordedRequest) -> MockResponse:
    if request.target == "/reset":
        return MockResponse(policy=SocketPolicy.RESET_AFTER_REQUEST)
    if request.target == "/404":
        return MockResponse(404, body=b"no")
    return MockResponse(200, body=b"x" * 70_000, chunked=request.target == "/chunked", chunk_size=9000)


def test_engine_twins_agree() -> None:
    outcomes = {}
    for kind, module in available_twins(LOOP).items():
        with MockServer() as server:
            server.dispatcher = _mixed
            g = group(server.port, "/ok", "/reset", "/404", "/chunked")
            engine, hist = drive(module, [g], [0], total=40)
            outcomes[kind] = (
                engine.completed,
                engine.failed,
                engine.statuses(),
                {k: (n, e.replace(str(server.port), "PORT")) for k, (n, e) in engine.errors().items()},
                engine.connections_opened,
                engine.bytes_received,
                hist.latency.get_total_count(),
            )
    assert outcomes["py"][:3] == (30, 10, {200: 20, 404: 10})
    if "c" in outcomes:
        assert outcomes["c"] == outcomes["py"]


def test_engine_keeps_the_open_loop_timetable(twins: Twins, server: MockServer) -> None:
    server.default_response = MockResponse(200, body=b"x")
    engine, hist = drive(twins(LOOP), [group(server.port)], [0] * 4, duration=1.0, rate=200.0)
    assert engine.reason == "duration"
    # slots at 0, 5, ..., 995 ms: each one sent, or (a loop that got no CPU near the end, on a loaded
    # machine) counted as backlog, never lost or invented
    assert engine.dispatched + engine.backlog == 200
    assert engine.dispatched > 100
    assert hist.lag.get_total_count() == engine.dispatched


def test_engine_abandons_what_is_in_flight_at_the_end(twins: Twins, server: MockServer) -> None:
    server.default_response = MockResponse(200, body=b"x", head_delay=3.0)
    t0 = time.monotonic()
    engine, _ = drive(twins(LOOP), [group(server.port)], [0] * 3, duration=0.4)
    assert 0.35 < time.monotonic() - t0 < 2.5
    assert (engine.completed, engine.failed, engine.abandoned) == (0, 0, 3)


def test_engine_stops_when_asked(twins: Twins, server: MockServer) -> None:
    server.default_response = MockResponse(200, body=b"x")
    module = twins(LOOP)
    engine = module.Engine(
        [group(server.port)], [0], total=-1, duration=0.0, rate=0.0, timeout=5.0, head=False,
        recorders=Histograms.new(),
    )  # fmt: skip
    try:
        engine.run(time.monotonic_ns() + 100_000_000)
        assert not engine.finished and engine.completed > 0
        engine.stop()
        assert engine.run(time.monotonic_ns() + 5_000_000_000) is True
        assert engine.reason == "stopped"
    finally:
        engine.close()


def test_engine_uses_connections_prepared_elsewhere(twins: Twins, server: MockServer) -> None:
    server.default_response = MockResponse(200, body=b"ok")
    module = twins(LOOP)
    box: dict[str, Any] = {}

    def prepare(index: int, g: int) -> None:
        def work() -> None:
            if index == 1:
                box["engine"].deliver(index, None, ConnectionRefusedError("no way"), (5, -1, -1))
                return
            sock = socket.create_connection(("127.0.0.1", server.port), timeout=5)
            box["engine"].deliver(index, sock, None, (-1, 40, 30))

        threading.Thread(target=work).start()

    histograms = Histograms.new()
    prepared = SimpleNamespace(**{**vars(group(server.port, address=False))})
    engine = module.Engine(
        [prepared], [0, 0], total=20, duration=0.0, rate=0.0, timeout=5.0, head=False,
        recorders=histograms, prepare=prepare,
    )  # fmt: skip
    box["engine"] = engine
    try:
        limit = time.monotonic() + 10
        while not engine.run(time.monotonic_ns() + 100_000_000):
            assert time.monotonic() < limit
    finally:
        engine.close()
    assert engine.completed + engine.failed == 20
    assert engine.completed > 0 and engine.failed > 0
    count, example = engine.errors()["ConnectionRefusedError"]
    assert example == "no way" and count == engine.failed
    assert histograms.tls.get_total_count() >= 1 and histograms.dns.get_total_count() == count


def test_engine_checks_its_arguments(twins: Twins) -> None:
    module = twins(LOOP)
    g = group(1)
    base: dict[str, Any] = {
        "total": 1, "duration": 0.0, "rate": 0.0, "timeout": 1.0, "head": False, "recorders": Histograms.new()
    }  # fmt: skip
    with pytest.raises(ValueError, match="at least one connection"):
        module.Engine([g], [], **base)
    with pytest.raises(ValueError, match="timeout"):
        module.Engine([g], [0], **{**base, "timeout": 0})
    with pytest.raises(ValueError, match="rate"):
        module.Engine([g], [0], **{**base, "rate": -1.0})
    with pytest.raises(ValueError, match="group 1 does not exist"):
        module.Engine([g], [1], **base)
    with pytest.raises(ValueError, match="prepare"):
        module.Engine([group(1, address=False)], [0], **base)
    with pytest.raises(ValueError, match="at least one request"):
        module.Engine([SimpleNamespace(requests=[], address=g.address, label="x")], [0], **base)


def test_recorder_counts_like_hdrhistogram(twins: Twins) -> None:
    module = twins(LOOP)
    rng = random.Random(1414)
    values = [0, 1, 2047, 2048, 2049, HIGHEST_US, HIGHEST_US + 5, -3]
    values += [int(rng.lognormvariate(6, 2)) for _ in range(20_000)]
    # real HdrHistograms: their counts and get_value_at_percentile are beyond fastnet's Histogram protocol
    reference: Any = new_histogram()
    for v in values:
        reference.record_value(min(max(v, 0), HIGHEST_US))
    histogram: Any = new_histogram()
    recorder = module.Recorder(histogram)
    for v in values[:10_000]:
        recorder.record(v)
    recorder.sync()
    for v in values[10_000:]:
        recorder.record(v)
    recorder.sync()
    assert histogram.get_total_count() == reference.get_total_count() == len(values)
    assert list(histogram.counts) == list(reference.counts)
    assert (histogram.get_min_value(), histogram.get_max_value()) == (
        reference.get_min_value(),
        reference.get_max_value(),
    )
    for p in (50, 90, 99, 99.9, 100):
        assert histogram.get_value_at_percentile(p) == reference.get_value_at_percentile(p)


def test_engine_closes_connections_delivered_after_the_end(twins: Twins, server: MockServer) -> None:
    module = twins(LOOP)
    engine = module.Engine(
        [group(server.port, address=False)], [0], total=1, duration=0.0, rate=0.0, timeout=1.0, head=False,
        recorders=Histograms.new(), prepare=lambda index, g: None,
    )  # fmt: skip
    engine.close()
    late = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    engine.deliver(0, late, None, None)
    assert late.fileno() == -1
