"""The interceptor chain: OkHttp order, plain functions, short-circuits, proceed rules, per-chain
timeouts and the order of EventListener events."""

from __future__ import annotations

from typing import Any

import pytest

import fastnet
from fastnet.testing import MockResponse, MockServer
from tests.support.clients import make_fast_client
from tests.support.fakes import FakeDns, RecordingEventListener, RecordingListener

pytestmark = pytest.mark.both_clients


def test_chain_order_application_bridge_network(server: MockServer) -> None:
    seen: list[tuple[str, Any]] = []

    def app(chain: fastnet.Chain) -> fastnet.Response:
        seen.append(("app", chain.request.headers.get("host")))
        response = chain.proceed(chain.request)
        seen.append(("app-after", response.headers.get("content-encoding")))
        return response

    def network(chain: fastnet.Chain) -> fastnet.Response:
        seen.append(("network", chain.request.headers.get("host")))
        response = chain.proceed(chain.request)
        seen.append(("network-after", response.headers.get("content-encoding")))
        return response

    import gzip

    server.enqueue(MockResponse(200, headers={"Content-Encoding": "gzip"}, body=gzip.compress(b"zipped")))
    with make_fast_client(interceptors=[app], network_interceptors=[network]) as client:
        r = client.get(server.url("/"))
    host = f"127.0.0.1:{server.port}"
    # the application interceptor runs before the bridge (no Host yet) and sees the decoded response;
    # the network interceptor runs after it (Host set) and sees the response as it came off the wire
    assert seen == [("app", None), ("network", host), ("network-after", "gzip"), ("app-after", None)]
    assert r.content == b"zipped"


def test_chain_interceptor_objects_and_functions_mixed(server: MockServer) -> None:
    order: list[str] = []

    class Tag:
        def __init__(self, name: str) -> None:
            self.name = name

        def intercept(self, chain: fastnet.Chain) -> fastnet.Response:
            order.append(self.name)
            headers = chain.request.headers.add("X-Trace", self.name)
            return chain.proceed(chain.request.replace(headers=headers))

    def func(chain: fastnet.Chain) -> fastnet.Response:
        order.append("func")
        return chain.proceed(chain.request)

    server.enqueue(MockResponse(200))
    with make_fast_client(interceptors=[Tag("a"), func, Tag("b")], network_interceptors=[Tag("n")]) as client:
        client.get(server.url("/"))
    assert order == ["a", "func", "b", "n"]
    assert server.take_request().header_values("x-trace") == ["a", "b", "n"]


def test_chain_short_circuit_without_network(server: MockServer) -> None:
    def cached(chain: fastnet.Chain) -> fastnet.Response:
        return fastnet.Response(200, headers={"X-Cache": "hit"}, content=b"from cache", request=chain.request)

    with make_fast_client(interceptors=[cached]) as client:
        r = client.get(server.url("/c"))
        assert r.status_code == 200 and r.content == b"from cache" and r.headers["x-cache"] == "hit"
        assert str(r.url) == server.url("/c")
        assert client.connection_pool.connection_count() == 0
    assert server.request_count == 0 and server.connection_count == 0


def test_chain_application_interceptor_may_proceed_twice(server: MockServer) -> None:
    def twice(chain: fastnet.Chain) -> fastnet.Response:
        first = chain.proceed(chain.request)
        first.close()
        return chain.proceed(chain.request.replace(url=server.url("/second")))

    server.enqueue(MockResponse(200, body=b"one"), MockResponse(200, body=b"two"))
    with make_fast_client(interceptors=[twice]) as client:
        assert client.get(server.url("/first")).content == b"two"
    assert [server.take_request().path for _ in range(2)] == ["/first", "/second"]


def test_chain_network_interceptor_must_proceed_once(server: MockServer) -> None:
    def twice(chain: fastnet.Chain) -> fastnet.Response:
        chain.proceed(chain.request).close()
        return chain.proceed(chain.request)

    server.enqueue(MockResponse(200), MockResponse(200))
    with make_fast_client(network_interceptors=[twice]) as client:
        with pytest.raises(RuntimeError, match="exactly once"):
            client.get(server.url("/"))
    assert server.request_count == 1  # the second proceed was refused before anything was sent


def test_chain_network_interceptor_may_not_skip_proceed(server: MockServer) -> None:
    def never(chain: fastnet.Chain) -> fastnet.Response:
        return fastnet.Response(200, request=chain.request)

    with make_fast_client(network_interceptors=[never]) as client:
        with pytest.raises(RuntimeError, match="exactly once"):
            client.get(server.url("/"))
        assert client.connection_pool.connection_count() == 0


@pytest.mark.parametrize("change", ["host", "port"])
def test_chain_network_interceptor_must_keep_host_and_port(server: MockServer, change: str) -> None:
    def redirect(chain: fastnet.Chain) -> fastnet.Response:
        url = chain.request.url
        other = url.replace(host="127.0.0.2") if change == "host" else url.replace(port=url.port + 1)
        return chain.proceed(chain.request.replace(url=other))

    with make_fast_client(network_interceptors=[redirect]) as client:
        with pytest.raises(RuntimeError, match="same host and port"):
            client.get(server.url("/"))
    assert server.request_count == 0


def test_chain_interceptor_returning_none(server: MockServer) -> None:
    with make_fast_client(interceptors=[lambda chain: None]) as client:
        with pytest.raises(RuntimeError, match="returned None"):
            client.get(server.url("/"))


def test_chain_interceptor_exception_propagates(server: MockServer) -> None:
    class Boom(Exception):
        pass

    def boom(chain: fastnet.Chain) -> fastnet.Response:
        raise Boom("from interceptor")

    with make_fast_client(network_interceptors=[boom]) as client:
        with pytest.raises(Boom):
            client.get(server.url("/"))
        assert client.connection_pool.connection_count() == 0


def test_chain_connection_none_for_application_interceptors(server: MockServer) -> None:
    seen: dict[str, Any] = {}

    def app(chain: fastnet.Chain) -> fastnet.Response:
        seen["app"] = chain.connection
        seen["call"] = chain.call
        return chain.proceed(chain.request)

    def network(chain: fastnet.Chain) -> fastnet.Response:
        seen["network"] = chain.connection
        return chain.proceed(chain.request)

    server.enqueue(MockResponse(200))
    with make_fast_client(interceptors=[app], network_interceptors=[network]) as client:
        call = client.new_call(fastnet.Request("GET", server.url("/")))
        call.execute()
    assert seen["app"] is None
    assert seen["network"] is not None and seen["network"].route is not None
    assert seen["call"] is call


def test_chain_timeouts_readable(server: MockServer) -> None:
    seen: list[tuple[float, float, float]] = []

    def app(chain: fastnet.Chain) -> fastnet.Response:
        seen.append((chain.connect_timeout, chain.read_timeout, chain.write_timeout))
        return chain.with_read_timeout(7).with_connect_timeout(8).with_write_timeout(9).proceed(chain.request)

    def network(chain: fastnet.Chain) -> fastnet.Response:
        seen.append((chain.connect_timeout, chain.read_timeout, chain.write_timeout))
        return chain.proceed(chain.request)

    server.enqueue(MockResponse(200))
    with make_fast_client(
        connect_timeout=1, read_timeout=2, write_timeout=3, interceptors=[app], network_interceptors=[network]
    ) as client:
        client.get(server.url("/"))
    assert seen == [(1, 2, 3), (8, 7, 9)]


def test_chain_with_read_timeout_applies_to_the_read(server: MockServer) -> None:
    def impatient(chain: fastnet.Chain) -> fastnet.Response:
        return chain.with_read_timeout(0.2).proceed(chain.request)

    server.enqueue(MockResponse(200, head_delay=3.0))
    with make_fast_client(
        read_timeout=30, interceptors=[impatient], retry_on_connection_failure=False
    ) as client:
        with pytest.raises(fastnet.ReadTimeout):
            client.get(server.url("/"))


def test_chain_timeouts_not_adjustable_in_network_interceptors(server: MockServer) -> None:
    def network(chain: fastnet.Chain) -> fastnet.Response:
        return chain.with_read_timeout(1).proceed(chain.request)

    server.enqueue(MockResponse(200))
    with make_fast_client(network_interceptors=[network]) as client:
        with pytest.raises(RuntimeError, match="network interceptor"):
            client.get(server.url("/"))


def test_chain_with_timeout_validates(server: MockServer) -> None:
    def bad(chain: fastnet.Chain) -> fastnet.Response:
        return chain.with_read_timeout(-1).proceed(chain.request)

    with make_fast_client(interceptors=[bad]) as client:
        with pytest.raises(ValueError, match="read_timeout"):
            client.get(server.url("/"))


def test_chain_interceptor_rewrites_request(server: MockServer) -> None:
    def rewrite(chain: fastnet.Chain) -> fastnet.Response:
        request = chain.request
        return chain.proceed(request.replace(method="POST", body=b"added", url=server.url("/rewritten")))

    server.enqueue(MockResponse(200))
    with make_fast_client(interceptors=[rewrite]) as client:
        r = client.get(server.url("/original"))
    rec = server.take_request()
    assert rec.method == "POST" and rec.path == "/rewritten" and rec.body == b"added"
    assert r.request is not None and r.request.method == "POST"


# -- events -------------------------------------------------------------------------------------


def test_chain_events_order_fresh_then_pooled_connection(server: MockServer) -> None:
    # OkHttp's order: the follow-up decision comes when the head is in, the body events when it is read
    recorder = RecordingListener()
    dns = FakeDns({"app.test": ["127.0.0.1"]})
    server.enqueue(MockResponse(200, body=b"a"), MockResponse(200, body=b"b"))
    with make_fast_client(event_listener=recorder, dns=dns) as client:
        client.get(server.url("/", host="app.test"))
        first = recorder.names()
        recorder.events.clear()
        client.get(server.url("/", host="app.test"))
        second = recorder.names()
    assert first == [
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
        "response_headers_start",
        "response_headers_end",
        "follow_up_decision",
        "response_body_start",
        "response_body_end",
        "connection_released",
        "call_end",
    ]
    assert second == [
        "call_start",
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


def test_chain_events_request_body(server: MockServer) -> None:
    recorder = RecordingListener()
    server.enqueue(MockResponse(200))
    with make_fast_client(event_listener=recorder) as client:
        client.post(server.url("/"), body=b"12345")
    names = recorder.names()
    i = names.index("request_headers_end")
    assert names[i + 1 : i + 3] == ["request_body_start", "request_body_end"]
    assert dict(recorder.events)["request_body_end"][1] == 5


def test_chain_events_failure(server: MockServer) -> None:
    recorder = RecordingListener()
    server.enqueue(MockResponse(raw=b"garbage\r\n\r\n"))
    with make_fast_client(event_listener=recorder) as client:
        with pytest.raises(fastnet.ProtocolError):
            client.get(server.url("/"))
    names = recorder.names()
    assert names[0] == "call_start" and names[-1] == "call_failed"
    assert "response_failed" in names and "call_end" not in names
    assert isinstance(recorder.events[-1][1][1], fastnet.ProtocolError)


def test_chain_events_cancel(server: MockServer) -> None:
    recorder = RecordingListener()
    with make_fast_client(event_listener=recorder) as client:
        call = client.new_call(fastnet.Request("GET", server.url("/")))
        call.cancel()
        with pytest.raises(fastnet.CanceledError):
            call.execute()
    assert recorder.names() == ["canceled", "call_start", "call_failed"]


def test_chain_events_factory_one_listener_per_call(server: MockServer) -> None:
    made: list[RecordingEventListener] = []

    def factory(call: Any) -> RecordingEventListener:
        listener = RecordingEventListener()
        made.append(listener)
        return listener

    server.enqueue(MockResponse(200), MockResponse(200))
    with make_fast_client(event_listener_factory=factory) as client:
        client.get(server.url("/"))
        client.get(server.url("/"))
    assert len(made) == 2
    assert made[0].names()[0] == "call_start" and made[1].names()[-1] == "call_end"


def test_chain_events_body_end_after_stream_read(server: MockServer) -> None:
    recorder = RecordingListener()
    server.enqueue(MockResponse(200, body=b"x" * 1000))
    with make_fast_client(event_listener=recorder) as client:
        with client.stream("GET", server.url("/")) as r:
            assert "call_end" not in recorder.names()
            r.read()
    names = recorder.names()
    assert names[-3:] == ["response_body_end", "connection_released", "call_end"]
    assert dict(recorder.events)["response_body_end"][1] == 1000
