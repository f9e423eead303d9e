"""client.map: lazy input, bounded in flight, ordered and unordered, early break, failures as results."""

from __future__ import annotations

import gc
import socket
import threading
import time
import weakref
from collections.abc import Iterator
from typing import Any

import pytest

import fastnet
from fastnet.testing import MockResponse, MockServer, RecordedRequest
from tests.support.clients import assert_pool_clean, make_fast_client
from tests.support.holding import HoldingServer


def map_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("fastnet-map-")]


def wait_until(condition: Any, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(0.005)


def refused_port() -> int:
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = int(probe.getsockname()[1])
    probe.close()
    return port


class CountingInput:
    """A generator of URLs that counts how many were taken (``taken``), endless unless ``count``."""

    def __init__(self, server: MockServer | HoldingServer, count: int | None = None) -> None:
        self.server = server
        self.count = count
        self.taken = 0
        self.lock = threading.Lock()

    def __iter__(self) -> Iterator[str]:
        i = 0
        while self.count is None or i < self.count:
            with self.lock:
                self.taken += 1
            yield self.server.url(f"/{i}")
            i += 1


@pytest.fixture
def echo() -> Iterator[MockServer]:
    """A MockServer answering each request with its path; ``/slow-N`` waits N ms first."""
    with MockServer() as server:

        def answer(request: RecordedRequest) -> MockResponse:
            delay = 0.0
            if request.path.startswith("/slow-"):
                delay = int(request.path.rsplit("-", 1)[1]) / 1000
            return MockResponse(200, body=request.path.encode(), head_delay=delay)

        server.dispatcher = answer
        yield server


def test_map_fetches_every_item(echo: MockServer) -> None:
    urls = [echo.url(f"/{i}") for i in range(50)]
    with make_fast_client(connection_pool=fastnet.ConnectionPool(max_idle_connections=8)) as client:
        got = {item: result for item, result in client.map(urls, max_in_flight=8)}
        assert set(got) == set(urls)
        for url, result in got.items():
            assert isinstance(url, str) and isinstance(result, fastnet.Response)
            assert result.content == url[url.rindex("/") :].encode()
        assert_pool_clean(client)
    assert echo.request_count == 50
    assert echo.connection_count <= 8  # a pool that keeps 8 idle: no more connections than in flight
    wait_until(lambda: not map_threads())


def test_map_takes_urls_url_objects_and_requests(echo: MockServer) -> None:
    items: list[Any] = [
        echo.url("/text"),
        fastnet.URL(echo.url("/url")),
        fastnet.Request("POST", echo.url("/post"), body=b"12345"),
    ]
    with make_fast_client() as client:
        got = dict(client.map(items, ordered=True))
    assert [got[item].content for item in items] == [b"/text", b"/url", b"/post"]  # type: ignore[union-attr]
    methods = sorted((r.method, r.body) for r in (echo.take_request() for _ in range(3)))
    assert methods == [("GET", b""), ("GET", b""), ("POST", b"12345")]


def test_map_consumes_a_generator_lazily(echo: MockServer) -> None:
    endless = CountingInput(echo)
    with make_fast_client() as client:
        untouched = client.map(endless, max_in_flight=4)
        time.sleep(0.1)
        assert endless.taken == 0 and not map_threads()  # nothing happens before the loop starts
        del untouched
        yielded = 0
        for _item, result in client.map(endless, max_in_flight=4):
            assert isinstance(result, fastnet.Response)
            yielded += 1
            time.sleep(0.002)  # a slow consumer: the workers must not run ahead of it
            assert endless.taken - yielded <= 4
            if yielded == 200:
                break
        assert endless.taken - yielded <= 4
        wait_until(lambda: not map_threads())
        assert_pool_clean(client)


def test_map_holds_at_most_max_in_flight_requests(echo: MockServer) -> None:
    with HoldingServer() as held:
        items = CountingInput(held, count=10)
        with make_fast_client() as client:
            results = iter(client.map(items, max_in_flight=3))
            got: list[bytes] = []
            held.release("/0")
            item, result = next(results)
            got.append(result.content)  # type: ignore[union-attr]
            held.wait_for(4)  # /0 answered, then /1-/3 held; the slot /0 freed went to /3
            assert len(held.settle()) == 4 and items.taken == 4
            held.release_all()
            got.extend(r.content for _, r in results)  # type: ignore[union-attr]
        assert sorted(got) == sorted(f"/{i}".encode() for i in range(10))
        assert held.max_held == 3


def test_map_unordered_yields_as_they_complete(echo: MockServer) -> None:
    urls = [echo.url(f"/slow-{ms}") for ms in (600, 300, 0)]
    with make_fast_client() as client:
        order = [item for item, _ in client.map(urls, max_in_flight=3)]
    assert order == list(reversed(urls))


def test_map_ordered_yields_in_input_order(echo: MockServer) -> None:
    urls = [echo.url(f"/slow-{ms}") for ms in (600, 400, 0, 500, 0)]
    with make_fast_client() as client:
        started = time.monotonic()
        got = [(item, result) for item, result in client.map(urls, max_in_flight=5, ordered=True)]
        elapsed = time.monotonic() - started
    assert [item for item, _ in got] == urls
    assert [r.content for _, r in got] == [url[url.rindex("/") :].encode() for url in urls]  # type: ignore[union-attr]
    assert elapsed < 1.4  # they ran at once (1.5 s one after another); only the yielding waited


def test_map_ordered_with_a_slow_first_item_keeps_the_bound(echo: MockServer) -> None:
    with HoldingServer() as held:
        items = CountingInput(held, count=8)
        with make_fast_client() as client:
            got: list[bytes] = []

            def consume() -> None:
                got.extend(r.content for _, r in client.map(items, max_in_flight=3, ordered=True))  # type: ignore[union-attr]

            consumer = threading.Thread(target=consume)
            held.release(*(f"/{i}" for i in range(1, 8)))  # everything but the first answers
            consumer.start()
            held.wait_for(3)
            assert len(held.settle()) == 3 and items.taken == 3  # /1 and /2 wait for /0 to be yielded
            held.release("/0")
            consumer.join(10)
    assert got == [f"/{i}".encode() for i in range(8)]


def test_map_early_break_cancels_and_stops(echo: MockServer) -> None:
    with HoldingServer() as held:
        items = CountingInput(held)
        held.release("/0")
        with make_fast_client(read_timeout=30) as client:
            started = time.monotonic()
            for _item, result in client.map(items, max_in_flight=4):
                assert isinstance(result, fastnet.Response) and result.content == b"/0"
                held.wait_for(5)  # /1-/4 are in flight, held by the server
                break
            # the held calls were canceled (their sockets shut down), not waited for: read_timeout is 30 s
            assert time.monotonic() - started < 10
            assert not map_threads()
            assert items.taken == 5
            assert len(held.settle()) == 5  # nothing more went out
            assert_pool_clean(client)
            assert client.connection_pool.connection_count() <= 1  # the canceled calls' sockets are gone


def test_map_an_item_taken_as_the_loop_ends_never_reaches_the_network(echo: MockServer) -> None:
    more = threading.Event()

    def slow_input() -> Iterator[str]:
        yield echo.url("/first")
        more.wait(5)  # a worker is inside next() when the consumer leaves the loop
        yield echo.url("/late")

    with make_fast_client() as client:
        for _item, result in client.map(slow_input(), max_in_flight=2):
            assert result.content == b"/first"  # type: ignore[union-attr]
            threading.Timer(0.3, more.set).start()
            break
        assert more.is_set() and not map_threads()
        time.sleep(0.2)
        assert echo.request_count == 1  # /late was taken after the break: canceled before it was sent
        assert_pool_clean(client)


def test_map_closing_the_iterator_stops_it(echo: MockServer) -> None:
    with make_fast_client() as client:
        results = client.map(CountingInput(echo), max_in_flight=2)
        next(results)
        results.close()  # type: ignore[attr-defined]
        assert not map_threads()
        assert_pool_clean(client)


def test_map_an_input_that_raises(echo: MockServer) -> None:
    def broken() -> Iterator[str]:
        yield echo.url("/a")
        yield echo.url("/b")
        raise LookupError("the input broke")

    with make_fast_client() as client:
        seen: list[bytes] = []
        with pytest.raises(LookupError, match="the input broke"):
            for _item, result in client.map(broken(), max_in_flight=4):
                seen.append(result.content)  # type: ignore[union-attr]
        assert sorted(seen) == [b"/a", b"/b"]  # what came before the failure
        wait_until(lambda: not map_threads())


def test_map_bad_items_and_failures_are_yielded(echo: MockServer) -> None:
    items: list[Any] = [echo.url("/fine"), "http://[broken", 12345, f"http://127.0.0.1:{refused_port()}/"]
    with make_fast_client() as client:
        got: dict[Any, Any] = dict(client.map(items, ordered=True))
        assert got[items[0]].content == b"/fine"
        assert isinstance(got["http://[broken"], ValueError)
        assert isinstance(got[12345], TypeError)
        assert isinstance(got[items[3]], fastnet.ConnectError)
        assert_pool_clean(client)
    assert echo.request_count == 1


def test_map_max_in_flight_is_checked(echo: MockServer) -> None:
    with make_fast_client() as client:
        for bad in (0, -1, True, 2.0, "3"):
            with pytest.raises(ValueError, match="max_in_flight"):
                client.map([echo.url("/")], max_in_flight=bad)  # type: ignore[arg-type]


def test_map_empty_input(echo: MockServer) -> None:
    with make_fast_client() as client:
        assert list(client.map([])) == []
        assert list(client.map([], ordered=True)) == []
    wait_until(lambda: not map_threads())


def test_map_starts_workers_as_the_input_needs_them(
    echo: MockServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[str] = []

    class CountingThread(threading.Thread):
        def start(self) -> None:
            if self.name.startswith("fastnet-map-"):
                started.append(self.name)
            super().start()

    monkeypatch.setattr(threading, "Thread", CountingThread)
    with make_fast_client() as client:
        for ordered in (False, True):
            started.clear()
            got = list(client.map([echo.url("/only")], max_in_flight=20_000, ordered=ordered))
            assert [r.content for _, r in got] == [b"/only"]  # type: ignore[union-attr]
            assert len(started) <= 2  # one per item taken, and one that found the end (20,000 before)
        with HoldingServer() as held:
            started.clear()
            items = CountingInput(held, count=3)
            results = client.map(items, max_in_flight=1_000)
            held.release("/0")
            first = next(results)
            held.wait_for(3)
            assert len(started) <= items.taken + 1 == 4
            held.release_all()
            rest = list(results)
        assert sorted(r.content for _, r in [first, *rest]) == [b"/0", b"/1", b"/2"]  # type: ignore[union-attr]
        wait_until(lambda: not map_threads())
        assert_pool_clean(client)


def test_map_keeps_nothing_of_a_result_once_handed_over(echo: MockServer) -> None:
    more = threading.Event()

    def slow_input() -> Iterator[str]:
        yield echo.url("/first")
        more.wait(10)  # a worker waits inside next() for the second item
        yield echo.url("/second")

    with make_fast_client() as client:
        for ordered in (False, True):
            more.clear()
            results = client.map(slow_input(), max_in_flight=2, ordered=ordered)
            item, result = next(results)
            first = weakref.ref(result)
            del item, result
            gc.collect()
            assert first() is None  # before, the map (and the worker that ran it) kept it
            more.set()
            assert [r.content for _, r in results] == [b"/second"]  # type: ignore[union-attr]
        wait_until(lambda: not map_threads())
