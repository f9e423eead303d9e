"""Dispatcher: limits, FIFO promotion that skips hosts at their limit, cancel, futures and callbacks.

The server is a HoldingServer (tests/support/holding.py): real MockServers on 127.0.0.1-3 whose answers wait
until the test releases them, so each test decides exactly which calls are running and sees which
requests reached the network, in order.
"""

from __future__ import annotations

import concurrent.futures
import gc
import logging
import socket
import threading
import time
import weakref
from collections.abc import Iterator
from concurrent.futures import CancelledError, Future, ThreadPoolExecutor
from typing import Any

import pytest

import fastnet
from fastnet.testing import MockResponse, MockServer
from tests.support.clients import assert_pool_clean, make_fast_client
from tests.support.fakes import FakeDns, RecordingListener
from tests.support.holding import HoldingServer

HOSTS = ("127.0.0.1", "127.0.0.2", "127.0.0.3")
A, B, C = HOSTS


@pytest.fixture
def held() -> Iterator[HoldingServer]:
    with HoldingServer(HOSTS) as h:
        yield h


def enqueue(client: fastnet.Client, url: str, **options: Any) -> Future[fastnet.Response]:
    return client.new_call(fastnet.Request("GET", url)).enqueue(**options)


def results(futures: list[Future[fastnet.Response]], timeout: float = 10.0) -> list[bytes]:
    return [f.result(timeout).content for f in futures]


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
    probe.close()  # nothing listens there now
    return port


class Recorder:
    """A callback recording (kind, call, payload, thread name, future resolved yet?) per delivery."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any, Any, str]] = []
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.expected = 1

    def _add(self, kind: str, call: Any, payload: Any) -> None:
        with self.lock:
            self.calls.append((kind, call, payload, threading.current_thread().name))
            if len(self.calls) >= self.expected:
                self.done.set()

    def on_response(self, call: Any, response: fastnet.Response) -> None:
        self._add("response", call, response)

    def on_failure(self, call: Any, error: BaseException) -> None:
        self._add("failure", call, error)


# -- limits ---------------------------------------------------------------------------------------


def test_dispatcher_limits_are_checked() -> None:
    with pytest.raises(ValueError, match="max_requests must be >= 1, not 0"):
        fastnet.Dispatcher(max_requests=0)
    with pytest.raises(ValueError, match="max_requests_per_host must be >= 1"):
        fastnet.Dispatcher(max_requests_per_host=-1)
    with pytest.raises(TypeError, match="must be an int"):
        fastnet.Dispatcher(max_requests=True)
    with pytest.raises(TypeError, match="executor"):
        fastnet.Dispatcher(executor=object())  # type: ignore[arg-type]
    dispatcher = fastnet.Dispatcher()
    assert (dispatcher.max_requests, dispatcher.max_requests_per_host) == (64, 5)
    with pytest.raises(ValueError):
        dispatcher.max_requests = 0
    with pytest.raises(TypeError):
        dispatcher.max_requests_per_host = 2.5  # type: ignore[assignment]
    assert (dispatcher.max_requests, dispatcher.max_requests_per_host) == (64, 5)
    assert repr(dispatcher) == "<Dispatcher running=0/64 queued=0 per_host=5>"


def test_dispatcher_runs_at_most_max_requests_and_promotes_in_order(held: HoldingServer) -> None:
    dispatcher = fastnet.Dispatcher(max_requests=2, max_requests_per_host=10)
    with make_fast_client(dispatcher=dispatcher) as client:
        futures = [enqueue(client, held.url(f"/{i}")) for i in range(5)]
        assert sorted(held.wait_for(2)) == ["/0", "/1"]  # started together: either may arrive first
        assert sorted(held.settle()) == ["/0", "/1"]  # the other three wait in the dispatcher
        assert dispatcher.running_calls_count() == 2 and dispatcher.queued_calls_count() == 3
        assert [c.request.url.path for c in dispatcher.queued_calls()] == ["/2", "/3", "/4"]
        assert [c.request.url.path for c in dispatcher.running_calls()] == ["/0", "/1"]
        held.release("/1")
        assert held.wait_for(3)[2] == "/2"
        assert futures[1].result(10).content == b"/1" and not futures[0].done()
        held.release("/0")
        assert held.wait_for(4)[3] == "/3"
        held.release("/2", "/3", "/4")
        assert results(futures) == [b"/0", b"/1", b"/2", b"/3", b"/4"]
        assert held.paths[2:] == ["/2", "/3", "/4"]
        assert held.max_held == 2
        wait_until(lambda: dispatcher.running_calls_count() == 0)
        assert dispatcher.queued_calls_count() == 0
        assert_pool_clean(client)


def test_dispatcher_per_host_limit_across_hosts(held: HoldingServer) -> None:
    dispatcher = fastnet.Dispatcher(max_requests=10, max_requests_per_host=2)
    with make_fast_client(dispatcher=dispatcher) as client:
        plan = [(A, "/a1"), (A, "/a2"), (A, "/a3"), (B, "/b1"), (A, "/a4"), (B, "/b2"), (B, "/b3")]
        plan.append((C, "/c1"))
        futures = [enqueue(client, held.url(path, host)) for host, path in plan]
        held.wait_for(5)
        assert sorted(held.settle()) == ["/a1", "/a2", "/b1", "/b2", "/c1"]
        assert [c.request.url.path for c in dispatcher.queued_calls()] == ["/a3", "/a4", "/b3"]
        held.release("/b1")
        assert held.wait_for(6)[5] == "/b3"  # B had room: its waiting call starts, A's still wait
        held.release("/a2")
        assert held.wait_for(7)[6] == "/a3"  # A's first waiting call, not the later one
        assert [c.request.url.path for c in dispatcher.queued_calls()] == ["/a4"]
        held.release_all()
        assert results(futures) == [path.encode() for _, path in plan]
        wait_until(lambda: dispatcher.running_calls_count() == 0)
        assert held.max_held == 5


def test_dispatcher_promotion_skips_hosts_at_their_limit_but_keeps_their_order(held: HoldingServer) -> None:
    dispatcher = fastnet.Dispatcher(max_requests=3, max_requests_per_host=1)
    with make_fast_client(dispatcher=dispatcher) as client:
        plan = [(A, "/a1"), (A, "/a2"), (B, "/b1"), (C, "/c1"), (A, "/a3"), (B, "/b2")]
        futures = [enqueue(client, held.url(path, host)) for host, path in plan]
        held.wait_for(3)
        assert sorted(held.settle()) == ["/a1", "/b1", "/c1"]  # /a2 skipped for A's limit, /c1 taken
        assert [c.request.url.path for c in dispatcher.queued_calls()] == ["/a2", "/a3", "/b2"]
        held.release("/b1")
        assert held.wait_for(4)[3] == "/b2"  # /a2 and /a3 are skipped (A is full), kept in order
        assert [c.request.url.path for c in dispatcher.queued_calls()] == ["/a2", "/a3"]
        held.release("/a1")
        assert held.wait_for(5)[4] == "/a2"
        assert len(held.settle()) == 5  # /a3 still waits for /a2
        held.release_all()
        assert results(futures) == [path.encode() for _, path in plan]
        assert held.paths[-1] == "/a3"


def test_dispatcher_raising_a_limit_promotes_waiting_calls_at_once(held: HoldingServer) -> None:
    dispatcher = fastnet.Dispatcher(max_requests=1, max_requests_per_host=1)
    with make_fast_client(dispatcher=dispatcher) as client:
        futures = [enqueue(client, held.url(f"/{i}")) for i in range(4)]
        held.wait_for(1)
        dispatcher.max_requests = 3  # the host limit still holds them back
        assert held.settle(0.2) == ["/0"]
        dispatcher.max_requests_per_host = 3  # now two more start, nothing released
        arrived = held.wait_for(3)
        assert arrived[0] == "/0" and sorted(arrived[1:]) == ["/1", "/2"]
        assert dispatcher.running_calls_count() == 3 and dispatcher.queued_calls_count() == 1
        dispatcher.max_requests = 1  # lowering a limit stops nothing that runs
        held.release("/0", "/1")
        assert sorted(held.settle()) == ["/0", "/1", "/2"]  # 1 still running: /3 waits
        held.release_all()
        assert results(futures) == [b"/0", b"/1", b"/2", b"/3"]


# -- futures and callbacks ------------------------------------------------------------------------


def test_dispatcher_futures_resolve_with_responses_and_with_errors(server: MockServer) -> None:
    server.enqueue(MockResponse(200, body=b"fine"))
    dns = FakeDns({"app.test": ["127.0.0.1"]})
    with make_fast_client(dns=dns) as client:
        ok = enqueue(client, server.url("/"))
        refused = enqueue(client, f"http://127.0.0.1:{refused_port()}/")
        unknown = enqueue(client, "http://nowhere.test/")
        response = ok.result(10)
        assert response.status_code == 200 and response.content == b"fine"
        assert isinstance(refused.exception(10), fastnet.ConnectError)
        assert isinstance(unknown.exception(10), fastnet.UnknownHostError)
        with pytest.raises(fastnet.UnknownHostError):
            unknown.result()
        assert_pool_clean(client)


def test_dispatcher_callbacks_run_on_its_threads_before_the_future_resolves(server: MockServer) -> None:
    server.enqueue(MockResponse(200, body=b"abc"))
    seen: list[tuple[str, bool, str]] = []
    futures: dict[Any, Future[fastnet.Response]] = {}
    registered = threading.Event()

    class Callback:
        def _see(self, call: Any, what: str) -> None:
            registered.wait(5)
            seen.append((threading.current_thread().name, futures[call].done(), what))

        def on_response(self, call: Any, response: fastnet.Response) -> None:
            self._see(call, response.content.decode())

        def on_failure(self, call: Any, error: BaseException) -> None:
            self._see(call, type(error).__name__)

    with make_fast_client() as client:
        ok = client.new_call(fastnet.Request("GET", server.url("/")))
        failing = client.new_call(fastnet.Request("GET", f"http://127.0.0.1:{refused_port()}/"))
        futures[ok] = ok.enqueue(Callback())
        futures[failing] = failing.enqueue(Callback())
        registered.set()
        assert futures[ok].result(10).content == b"abc"
        assert isinstance(futures[failing].exception(10), fastnet.ConnectError)
    assert sorted(what for *_, what in seen) == ["ConnectError", "abc"]
    for name, resolved, _ in seen:
        assert name.startswith("fastnet-dispatcher-") and not resolved


def test_dispatcher_callback_receives_the_call_and_the_read_body(server: MockServer) -> None:
    server.enqueue(MockResponse(200, body=b"x" * 100_000))
    recorder = Recorder()
    with make_fast_client() as client:
        call = client.new_call(fastnet.Request("GET", server.url("/")))
        future = call.enqueue(recorder)
        assert recorder.done.wait(10)
        kind, got_call, response, _ = recorder.calls[0]
        assert kind == "response" and got_call is call and call.is_executed
        assert future.result(10) is response
        assert response.content == b"x" * 100_000
        assert_pool_clean(client)  # the body was read before the callback: the connection is back


def test_dispatcher_a_callback_that_raises_breaks_nothing(
    server: MockServer, caplog: pytest.LogCaptureFixture
) -> None:
    server.default_response = MockResponse(200, body=b"ok")

    class Raising:
        def on_response(self, call: Any, response: fastnet.Response) -> None:
            raise ValueError("callback bug")

        def on_failure(self, call: Any, error: BaseException) -> None:
            raise ValueError("callback bug")

    dispatcher = fastnet.Dispatcher(max_requests=1)
    idle = threading.Event()

    def idle_callback() -> None:
        idle.set()
        raise RuntimeError("idle bug")

    dispatcher.idle_callback = idle_callback
    with caplog.at_level(logging.ERROR, logger="fastnet.dispatcher"):
        with make_fast_client(dispatcher=dispatcher) as client:
            futures = [enqueue(client, server.url(f"/{i}"), callback=Raising()) for i in range(4)]
            futures.append(enqueue(client, f"http://127.0.0.1:{refused_port()}/", callback=Raising()))
            assert [f.result(10).content for f in futures[:4]] == [b"ok"] * 4
            assert isinstance(futures[4].exception(10), fastnet.ConnectError)
            assert idle.wait(10)
            assert enqueue(client, server.url("/after")).result(10).content == b"ok"

            def logged(text: str) -> int:
                return sum(text in r.getMessage() for r in caplog.records if r.name == "fastnet.dispatcher")

            wait_until(lambda: logged("idle_callback raised") > 0)  # logged after idle.set()
    assert logged("callback of") == 5


def test_dispatcher_stream_hands_over_an_open_body(server: MockServer) -> None:
    server.enqueue(MockResponse(200, body=b"y" * 50_000))
    with make_fast_client() as client:
        response = enqueue(client, server.url("/"), stream=True).result(10)
        assert client.connection_pool.idle_connection_count() == 0  # still held by the open body
        with response:
            assert response.read() == b"y" * 50_000
        assert_pool_clean(client)


def test_dispatcher_a_call_runs_once() -> None:
    with make_fast_client() as client:
        call = client.new_call(fastnet.Request("GET", f"http://127.0.0.1:{refused_port()}/"))
        future = call.enqueue()
        with pytest.raises(RuntimeError, match="Already Executed"):
            call.enqueue()
        with pytest.raises(RuntimeError, match="Already Executed"):
            call.execute()
        assert isinstance(future.exception(10), fastnet.ConnectError)
        executed = client.new_call(fastnet.Request("GET", f"http://127.0.0.1:{refused_port()}/"))
        with pytest.raises(fastnet.ConnectError):
            executed.execute()
        with pytest.raises(RuntimeError, match="Already Executed"):
            executed.enqueue()
        assert client.dispatcher.queued_calls_count() == 0


def test_dispatcher_execute_calls_are_counted_but_take_no_slot(held: HoldingServer) -> None:
    dispatcher = fastnet.Dispatcher(max_requests=1, max_requests_per_host=1)
    idle = threading.Event()
    dispatcher.idle_callback = idle.set
    with make_fast_client(dispatcher=dispatcher) as client:
        first = enqueue(client, held.url("/queued-0"))
        second = enqueue(client, held.url("/queued-1"))
        held.wait_for(1)
        outcome: list[bytes] = []
        thread = threading.Thread(target=lambda: outcome.append(client.get(held.url("/executed")).content))
        thread.start()
        assert held.wait_for(2) == ["/queued-0", "/executed"]  # runs although the dispatcher is full
        assert dispatcher.running_calls_count() == 2 and dispatcher.queued_calls_count() == 1
        assert [c.request.url.path for c in dispatcher.running_calls()] == ["/queued-0", "/executed"]
        held.release("/queued-0", "/queued-1")
        assert results([first, second]) == [b"/queued-0", b"/queued-1"]
        wait_until(lambda: dispatcher.running_calls_count() == 1)
        assert not idle.wait(0.2)  # the executed call still runs: the dispatcher is not idle
        held.release("/executed")
        thread.join(10)
        assert outcome == [b"/executed"]
        assert idle.wait(10)  # its end made the dispatcher idle
        assert dispatcher.running_calls() == []


def test_dispatcher_cancel_all_cancels_execute_calls(held: HoldingServer) -> None:
    dispatcher = fastnet.Dispatcher()
    with make_fast_client(dispatcher=dispatcher, read_timeout=30) as client:
        outcome: list[BaseException] = []

        def executed() -> None:
            try:
                client.get(held.url("/executed"))
            except fastnet.CanceledError as exc:
                outcome.append(exc)

        thread = threading.Thread(target=executed)
        thread.start()
        held.wait_for(1)
        dispatcher.cancel_all()
        thread.join(10)
        assert len(outcome) == 1 and dispatcher.running_calls_count() == 0
        assert_pool_clean(client)


def test_dispatcher_default_counts_execute_calls_once_seen(held: HoldingServer) -> None:
    with make_fast_client() as client:
        sibling = client.with_options(read_timeout=20)
        assert client._core.sync_dispatcher is None  # nobody has seen it: execute() skips it
        dispatcher = sibling.dispatcher  # seen through the sibling: counts the calls of both
        assert client._core.sync_dispatcher is dispatcher is client.dispatcher
        threads = [
            threading.Thread(target=lambda c=c, p=p: c.get(held.url(p)))
            for c, p in ((client, "/a"), (sibling, "/b"))
        ]
        for thread in threads:
            thread.start()
        held.wait_for(2)
        assert sorted(c.request.url.path for c in dispatcher.running_calls()) == ["/a", "/b"]
        held.release_all()
        for thread in threads:
            thread.join(10)
        assert dispatcher.running_calls_count() == 0


# -- cancel ---------------------------------------------------------------------------------------


def test_dispatcher_cancel_a_queued_call(held: HoldingServer) -> None:
    dispatcher = fastnet.Dispatcher(max_requests=1)
    recorder = Recorder()
    with make_fast_client(dispatcher=dispatcher) as client:
        running = enqueue(client, held.url("/running"))
        queued_call = client.new_call(fastnet.Request("GET", held.url("/queued")))
        queued = queued_call.enqueue(recorder)
        after = enqueue(client, held.url("/after"))
        held.wait_for(1)
        queued_call.cancel()
        assert queued_call.is_canceled and not queued.done()  # it fails when its turn comes
        held.release_all()
        assert isinstance(queued.exception(10), fastnet.CanceledError)
        assert results([running, after]) == [b"/running", b"/after"]
        assert recorder.calls[0][0] == "failure" and isinstance(recorder.calls[0][2], fastnet.CanceledError)
    assert held.paths == ["/running", "/after"]  # the canceled call never reached the network


def test_dispatcher_future_cancel_cancels_a_queued_call(held: HoldingServer) -> None:
    dispatcher = fastnet.Dispatcher(max_requests=1)
    recorder = Recorder()
    with make_fast_client(dispatcher=dispatcher) as client:
        running = enqueue(client, held.url("/running"))
        call = client.new_call(fastnet.Request("GET", held.url("/queued")))
        future = call.enqueue(recorder)
        held.wait_for(1)
        assert future.cancel()
        assert future.cancelled() and call.is_canceled
        with pytest.raises(CancelledError):
            future.result(0)
        done, _ = concurrent.futures.wait([future, running], timeout=5, return_when="FIRST_COMPLETED")
        assert done == {future}  # wait() and as_completed() see a canceled future as done
        assert list(concurrent.futures.as_completed([future], timeout=5)) == [future]
        held.release_all()
        assert running.result(10).content == b"/running"
        assert recorder.done.wait(10)
        assert recorder.calls[0][0] == "failure" and isinstance(recorder.calls[0][2], fastnet.CanceledError)
        wait_until(lambda: dispatcher.running_calls_count() == 0)
    assert held.paths == ["/running"]


def test_dispatcher_cancel_a_running_call(held: HoldingServer) -> None:
    dispatcher = fastnet.Dispatcher(max_requests=1)
    with make_fast_client(dispatcher=dispatcher, read_timeout=30) as client:
        call = client.new_call(fastnet.Request("GET", held.url("/running")))
        future = call.enqueue()
        waiting = enqueue(client, held.url("/next"))
        held.wait_for(1)
        started = time.monotonic()
        call.cancel()
        assert isinstance(future.exception(10), fastnet.CanceledError)
        assert time.monotonic() - started < 5  # the socket was shut down: no read timeout was needed
        assert held.wait_for(2) == ["/running", "/next"]  # its slot freed when it ended
        held.release("/next")
        assert waiting.result(10).content == b"/next"
        assert_pool_clean(client)


def test_dispatcher_future_of_a_running_call_cannot_be_canceled(held: HoldingServer) -> None:
    with make_fast_client(read_timeout=30) as client:
        call = client.new_call(fastnet.Request("GET", held.url("/running")))
        future = call.enqueue()
        held.wait_for(1)
        assert future.running()
        assert not future.cancel() and not call.is_canceled  # as any concurrent.futures future
        call.cancel()  # the way to stop a running call
        assert isinstance(future.exception(10), fastnet.CanceledError)
        wait_until(lambda: client.dispatcher.running_calls_count() == 0, timeout=5)
        assert_pool_clean(client)


def test_dispatcher_cancel_all(held: HoldingServer) -> None:
    dispatcher = fastnet.Dispatcher(max_requests=2)
    with make_fast_client(dispatcher=dispatcher, read_timeout=30) as client:
        futures = [enqueue(client, held.url(f"/{i}")) for i in range(5)]
        held.wait_for(2)
        dispatcher.cancel_all()
        for future in futures:
            assert isinstance(future.exception(10), fastnet.CanceledError)
        assert sorted(held.settle(0.2)) == ["/0", "/1"]  # the queued ones failed without a request
        wait_until(lambda: dispatcher.running_calls_count() == 0)
        assert dispatcher.queued_calls_count() == 0
        assert_pool_clean(client)


# -- shutdown, idle, executors --------------------------------------------------------------------


def test_dispatcher_shutdown_fails_queued_calls_and_waits_for_running_ones(held: HoldingServer) -> None:
    dispatcher = fastnet.Dispatcher(max_requests=1)
    recorder = Recorder()
    recorder.expected = 2
    with make_fast_client(dispatcher=dispatcher) as client:
        running = enqueue(client, held.url("/running"))
        queued = [enqueue(client, held.url(f"/queued-{i}"), callback=recorder) for i in range(2)]
        held.wait_for(1)
        threading.Timer(0.3, held.release, args=("/running",)).start()
        started = time.monotonic()
        dispatcher.shutdown()
        assert time.monotonic() - started >= 0.25  # it waited for the running call
        assert running.done() and running.result().content == b"/running"
        for future in queued:
            error = future.exception(0)
            assert isinstance(error, fastnet.CanceledError) and "shut down" in str(error)
        assert recorder.done.wait(5) and [kind for kind, *_ in recorder.calls] == ["failure", "failure"]
        late = enqueue(client, held.url("/late"))
        assert isinstance(late.exception(5), fastnet.CanceledError)
    assert held.paths == ["/running"]


def test_dispatcher_enqueue_after_shutdown_reports_call_start_and_call_failed(server: MockServer) -> None:
    listener = RecordingListener()
    dispatcher = fastnet.Dispatcher()
    dispatcher.shutdown()
    with make_fast_client(dispatcher=dispatcher, event_listener=listener) as client:
        future = enqueue(client, server.url("/"))
        assert isinstance(future.exception(5), fastnet.CanceledError)
    assert listener.names() == ["call_start", "call_failed"]
    assert server.request_count == 0


def test_dispatcher_idle_callback_runs_when_the_last_call_ends(held: HoldingServer) -> None:
    dispatcher = fastnet.Dispatcher(max_requests=2)
    idle: list[tuple[int, int]] = []
    idled = threading.Event()

    def on_idle() -> None:
        idle.append((dispatcher.running_calls_count(), dispatcher.queued_calls_count()))
        idled.set()

    dispatcher.idle_callback = on_idle
    with make_fast_client(dispatcher=dispatcher) as client:
        futures = [enqueue(client, held.url(f"/{i}")) for i in range(4)]
        held.wait_for(2)
        held.release("/0", "/1", "/2")
        held.wait_for(4)
        time.sleep(0.2)
        assert idle == []  # /3 still runs
        held.release("/3")
        assert results(futures) == [b"/0", b"/1", b"/2", b"/3"]
        assert idled.wait(10)
        time.sleep(0.1)
        assert idle == [(0, 0)]


def test_dispatcher_uses_the_given_executor(server: MockServer) -> None:
    server.default_response = MockResponse(200, body=b"ok")
    names: list[str] = []
    listener = RecordingListener()

    class Callback:
        def on_response(self, call: Any, response: fastnet.Response) -> None:
            names.append(threading.current_thread().name)

        def on_failure(self, call: Any, error: BaseException) -> None:
            names.append(threading.current_thread().name)

    executor = ThreadPoolExecutor(max_workers=2, thread_name_prefix="mine")
    dispatcher = fastnet.Dispatcher(executor=executor)
    with make_fast_client(dispatcher=dispatcher, event_listener=listener) as client:
        futures = [enqueue(client, server.url("/"), callback=Callback()) for _ in range(3)]
        assert results(futures) == [b"ok"] * 3
        assert names and all(name.startswith("mine") for name in names)
        executor.shutdown()
        listener.events.clear()
        rejected = enqueue(client, server.url("/"))
        error = rejected.exception(5)
        assert isinstance(error, fastnet.CanceledError) and "executor rejected" in str(error)
        assert isinstance(error.__cause__, RuntimeError)
        assert listener.names() == ["call_start", "call_failed"]
        assert dispatcher.running_calls_count() == 0


def test_dispatcher_many_rejected_calls_fail_without_recursion(held: HoldingServer) -> None:
    executor = ThreadPoolExecutor(max_workers=1)
    dispatcher = fastnet.Dispatcher(max_requests=1, executor=executor)
    with make_fast_client(dispatcher=dispatcher) as client:
        first = enqueue(client, held.url("/first"))
        held.wait_for(1)
        waiting = [enqueue(client, held.url(f"/{i}")) for i in range(3000)]
        executor.shutdown(wait=False)  # every promotion from now on is rejected
        held.release_all()
        assert first.result(10).content == b"/first"
        for future in waiting:
            assert isinstance(future.exception(10), fastnet.CanceledError)
        assert dispatcher.queued_calls_count() == 0 and dispatcher.running_calls_count() == 0


def test_dispatcher_is_shared_by_siblings_and_checked(server: MockServer) -> None:
    with make_fast_client() as client:
        assert isinstance(client.dispatcher, fastnet.Dispatcher)
        assert client.with_options(read_timeout=1).dispatcher is client.dispatcher
        mine = fastnet.Dispatcher()
        assert client.with_options(dispatcher=mine).dispatcher is mine
        with make_fast_client() as other:
            assert other.dispatcher is not client.dispatcher
    with pytest.raises(TypeError, match="fastnet.Dispatcher"):
        make_fast_client(dispatcher="nope")


def test_dispatcher_call_timeout_starts_when_the_call_runs(server: MockServer) -> None:
    # each answer takes 0.6 s; the third call waits 1.2 s in the queue, more than the 1 s call timeout
    server.default_response = MockResponse(200, body=b"slow", head_delay=0.6)
    dispatcher = fastnet.Dispatcher(max_requests=1)
    with make_fast_client(dispatcher=dispatcher, call_timeout=1.0) as client:
        futures = [enqueue(client, server.url(f"/{i}")) for i in range(3)]
        assert results(futures, timeout=20) == [b"slow"] * 3
        assert futures[2].result().timings is not None
        assert futures[2].result().timings.queue > 1.0  # type: ignore[union-attr]


def test_dispatcher_threads_are_reused_and_named(server: MockServer) -> None:
    server.default_response = MockResponse(200, body=b"ok")
    names: set[str] = set()

    class Callback:
        def on_response(self, call: Any, response: fastnet.Response) -> None:
            names.add(threading.current_thread().name)

        def on_failure(self, call: Any, error: BaseException) -> None:
            names.add(threading.current_thread().name)

    dispatcher = fastnet.Dispatcher(max_requests=2)
    with make_fast_client(dispatcher=dispatcher) as client:
        for _ in range(10):
            assert enqueue(client, server.url("/"), callback=Callback()).result(10).content == b"ok"
            wait_until(lambda: dispatcher.running_calls_count() == 0)
            time.sleep(0.02)  # the thread that ran it goes back to waiting for work
    assert names and all(name.startswith("fastnet-dispatcher-") for name in names)
    assert len(names) < 10  # one call at a time here: an idle thread takes the next one


def _dispatcher_threads() -> int:
    return sum(1 for t in threading.enumerate() if t.name.startswith("fastnet-dispatcher-"))


def test_dispatcher_never_runs_more_threads_than_max_requests(
    server: MockServer, held: HoldingServer
) -> None:
    server.default_response = MockResponse(200, body=b"ok")
    before = _dispatcher_threads()  # idle threads of earlier tests' dispatchers, ending on their own
    dispatcher = fastnet.Dispatcher(max_requests=16, max_requests_per_host=16)
    with make_fast_client(dispatcher=dispatcher) as client:
        # churn: each ending call promotes the next from its own thread, before that thread is idle
        assert results([enqueue(client, server.url("/")) for _ in range(300)]) == [b"ok"] * 300
        futures = [enqueue(client, held.url(f"/{i}")) for i in range(20)]
        held.wait_for(16)
        assert dispatcher.running_calls_count() == 16 and dispatcher.queued_calls_count() == 4
        assert _dispatcher_threads() - before <= 16
        dispatcher.max_requests = 4  # a lower bound: the threads past it end once idle
        held.release_all()
        assert len(results(futures)) == 20
        wait_until(lambda: _dispatcher_threads() - before <= 4)


def test_dispatcher_threads_keep_nothing_of_a_finished_call(server: MockServer) -> None:
    server.default_response = MockResponse(200, body=b"x" * 1_000_000)
    dispatcher = fastnet.Dispatcher(max_requests=4)
    with make_fast_client(dispatcher=dispatcher) as client:
        futures = [enqueue(client, server.url(f"/{i}")) for i in range(4)]
        responses = [weakref.ref(future.result(10)) for future in futures]
        assert all(len(r().content) == 1_000_000 for r in responses)  # type: ignore[union-attr]
        del futures  # and with them the responses: the idle threads must not keep them (60 s before)
        wait_until(lambda: gc.collect() >= 0 and all(r() is None for r in responses))


def test_dispatcher_dropped_stream_response_frees_its_connection_slot(server: MockServer) -> None:
    server.default_response = MockResponse(200, body=b"x" * 200_000)
    pool = fastnet.ConnectionPool(max_connections_per_host=1)
    with make_fast_client(connection_pool=pool, call_timeout=5) as client:
        future = enqueue(client, server.url("/"), stream=True)
        assert future.result(10).status_code == 200
        del future  # the response is never read nor closed
        gc.collect()
        # whenever the dispatcher's thread lets go of it, its slot is freed and this call goes on
        assert client.get(server.url("/")).status_code == 200  # before, PoolTimeout after 5 s
