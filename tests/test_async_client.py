"""``fastnet.AsyncClient`` in asyncio code: what the blocking suite (run on it through the facade of
``async_facade.py``) cannot show. Streaming with ``async for``, async interceptors, authenticators,
cookie jars, resolvers and bodies, cancellation by ``call.cancel()`` (from the loop and from another
thread) and by ``task.cancel()``, the call timeout on the loop, ``map`` and ``enqueue``, connections of a
closed loop, and 1,000 tasks canceled at random with nothing leaked.

Every test runs on the default event loop and on uvloop (``loop_kind``), each with its own fresh loop,
and fails if the loop reported an unhandled error ("exception was never retrieved", a callback that
raised) or if a task is still pending when the test's coroutine returns.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import gzip
import random
import threading
import time
import weakref
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

import pytest

import fastnet
from fastnet.testing import MockResponse, MockServer, SocketPolicy

LOOPS = ("asyncio", "uvloop")


@pytest.fixture(params=LOOPS)
def loop_kind(request: pytest.FixtureRequest) -> str:
    if request.param == "uvloop":
        pytest.importorskip("uvloop")
    kind: str = request.param
    return kind


@pytest.fixture
def run(loop_kind: str) -> Callable[[Coroutine[Any, Any, Any]], Any]:
    """Run a coroutine on a fresh loop of ``loop_kind``; fail on errors the loop had to swallow and on
    tasks left pending."""

    def runner(coro: Coroutine[Any, Any, Any]) -> Any:
        if loop_kind == "uvloop":
            import uvloop

            loop: asyncio.AbstractEventLoop = uvloop.new_event_loop()
        else:
            loop = asyncio.new_event_loop()
        unhandled: list[dict[str, Any]] = []
        loop.set_exception_handler(lambda _loop, context: unhandled.append(context))

        async def checked() -> Any:
            result = await coro
            gc.collect()  # responses and generators dropped by the test are finalized now
            await asyncio.sleep(0)
            me = asyncio.current_task()
            pending = [t for t in asyncio.all_tasks() if t is not me and not t.done()]
            assert not pending, f"tasks left pending: {pending}"
            return result

        try:
            return loop.run_until_complete(checked())
        finally:
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()
            assert not unhandled, f"the loop reported unhandled errors: {unhandled}"

    return runner


def new_client(**options: Any) -> fastnet.AsyncClient:
    options.setdefault("trust_env", False)
    options.setdefault("connect_timeout", 5)
    options.setdefault("read_timeout", 5)
    return fastnet.AsyncClient(**options)


def pool_clean(client: fastnet.AsyncClient) -> bool:
    pool = client.connection_pool
    return pool.connection_count() == pool.idle_connection_count()


# -- the basics ------------------------------------------------------------------------------------


def test_get_post_and_the_body_api(run: Any, server: MockServer) -> None:
    server.enqueue(
        MockResponse(body=b"hello"),
        MockResponse(body=b"a\nbb\r\nccc", chunked=True, chunk_size=2),
        MockResponse(201, body=b"made"),
        MockResponse(headers={"Content-Type": "application/json"}, body=b'{"x": 1}'),
    )

    async def main() -> None:
        async with new_client() as client:
            r = await client.get(server.url("/a"))
            assert (r.status_code, r.content, r.text) == (200, b"hello", "hello")
            async with client.stream("GET", server.url("/lines")) as r:
                assert [line async for line in r.aiter_lines()] == ["a", "bb", "ccc"]
            r = await client.post(server.url("/p"), body=b"payload")
            assert (r.status_code, r.content) == (201, b"made")
            r = await client.get(server.url("/j"))
            assert r.json() == {"x": 1}
            assert pool_clean(client)
        assert client.is_closed
        with pytest.raises(RuntimeError, match="closed"):
            await client.get(server.url("/"))

    run(main())
    assert server.take_request().path == "/a"
    assert server.take_request().path == "/lines"
    post = server.take_request()
    assert (post.method, post.body) == ("POST", b"payload")


def test_keep_alive_reuses_one_connection(run: Any, server: MockServer) -> None:
    for i in range(5):
        server.enqueue(MockResponse(body=b"r%d" % i))

    async def main() -> None:
        async with new_client() as client:
            for i in range(5):
                assert (await client.get(server.url("/"))).content == b"r%d" % i
            assert client.connection_pool.connection_count() == 1

    run(main())
    assert server.connection_count == 1


def test_stream_chunks_and_an_awaited_stream(run: Any, server: MockServer) -> None:
    body = bytes(range(256)) * 1024
    server.enqueue(MockResponse(body=body), MockResponse(body=body, chunked=True, chunk_size=5000))

    async def main() -> None:
        async with new_client() as client:
            async with client.stream("GET", server.url("/")) as r:
                pieces = [c async for c in r.aiter_bytes(chunk_size=10000)]
            assert b"".join(pieces) == body and {len(p) for p in pieces[:-1]} == {10000}
            r = await client.stream("GET", server.url("/"))
            assert await r.aread() == body
            await r.aclose()
            assert pool_clean(client)

    run(main())


def test_aiter_lines_and_aiter_bytes_are_linear_and_bounded(run: Any, server: MockServer) -> None:
    """``aiter_lines()`` joins a 16 MiB line once it ends and splits only at ``\\r\\n``, ``\\r`` and
    ``\\n`` (a ``\\r\\n`` cut between chunks too); a line over ``max_body_size`` is
    ``BodyTooLargeError`` once the lines before it are served, and closes the response; ``aiter_bytes``
    regroups 1 MiB pieces into 16-byte ones in one pass. The time bound only proves nothing hangs."""
    long_line = b"x" * (16 << 20)
    body = bytes(range(256)) * (16 << 10)
    server.enqueue(
        MockResponse(body=long_line + b"\r\nend", chunked=True, chunk_size=16 << 10),
        MockResponse(body=b"a\x0bb\r\nc\rd\n\x0ce", chunked=True, chunk_size=1),
        MockResponse(headers={"Content-Encoding": "gzip"}, body=gzip.compress(body, 1)),
        MockResponse(body=b"a" * 4000 + b"\n" + b"b" * 4001 + b"\nnever", chunked=True, chunk_size=1000),
    )

    async def main() -> None:
        async with new_client(max_body_size=32 << 20) as client:
            start = time.monotonic()
            async with client.stream("GET", server.url("/")) as r:
                lines = [line async for line in r.aiter_lines()]
            assert time.monotonic() - start < 4
            assert [len(line) for line in lines] == [16 << 20, 3] and lines[1] == "end"
            async with client.stream("GET", server.url("/")) as r:
                assert [line async for line in r.aiter_lines()] == ["a\x0bb", "c", "d", "\x0ce"]
            start = time.monotonic()
            async with client.stream("GET", server.url("/")) as r:
                pieces = [piece async for piece in r.aiter_bytes(16)]
            assert time.monotonic() - start < 8
            assert len(pieces) == len(body) // 16 and b"".join(pieces) == body
        async with new_client(max_body_size=4000) as client:
            async with client.stream("GET", server.url("/")) as r:
                lines_of = r.aiter_lines()
                assert await lines_of.__anext__() == "a" * 4000
                with pytest.raises(fastnet.BodyTooLargeError, match="max_body_size=4000"):
                    await lines_of.__anext__()
                assert r.is_closed
            assert pool_clean(client)

    run(main())


def test_blocking_reads_of_an_asyncio_body_say_what_to_call(run: Any, server: MockServer) -> None:
    server.enqueue(MockResponse(body=b"x" * 100))

    async def main() -> None:
        async with new_client() as client:
            async with client.stream("GET", server.url("/")) as r:
                with pytest.raises(RuntimeError, match=r"await response.aread\(\)"):
                    r.read()
                with pytest.raises(RuntimeError, match="asyncio client"):
                    list(r.iter_bytes())
                assert await r.aread() == b"x" * 100

    run(main())


def test_asyncio_reads_of_a_blocking_body_say_what_to_call(run: Any, server: MockServer) -> None:
    server.enqueue(MockResponse(body=b"y" * 100))
    with fastnet.Client(trust_env=False) as client:
        with client.stream("GET", server.url("/")) as r:

            async def main() -> None:
                with pytest.raises(RuntimeError, match=r"response.read\(\)"):
                    await r.aread()

            run(main())
            assert r.read() == b"y" * 100


def test_response_close_without_await_closes_the_connection(run: Any, server: MockServer) -> None:
    server.enqueue(MockResponse(body=b"z" * 100000), MockResponse(body=b"next"))

    async def main() -> None:
        async with new_client() as client:
            r = await client.stream("GET", server.url("/"))
            r.close()  # no awaiting a drain: the connection is closed, not pooled
            assert client.connection_pool.connection_count() == 0
            assert (await client.get(server.url("/"))).content == b"next"

    run(main())
    assert server.connection_count == 2


# -- async pieces the user plugs in ----------------------------------------------------------------


def test_async_interceptors_class_and_function(run: Any, server: MockServer) -> None:
    server.enqueue(MockResponse(body=b"ok"))
    seen: list[str] = []

    class Tagging:
        async def intercept(self, chain: Any) -> fastnet.Response:
            seen.append("app")
            request = chain.request.replace(headers=chain.request.headers.add("X-Tag", "1"))
            response: fastnet.Response = await chain.proceed(request)
            seen.append(f"app got {response.status_code}")
            return response

    async def network(chain: Any) -> fastnet.Response:
        seen.append(f"network on {type(chain.connection).__name__}")
        response: fastnet.Response = await chain.proceed(chain.request)
        return response

    async def main() -> None:
        async with new_client(interceptors=[Tagging()], network_interceptors=[network]) as client:
            assert (await client.get(server.url("/"))).content == b"ok"

    run(main())
    assert seen == ["app", "network on AsyncRealConnection", "app got 200"]
    assert server.take_request().header("X-Tag") == "1"


def test_blocking_interceptors_are_refused_by_each_client() -> None:
    class Blocking:
        def intercept(self, chain: Any) -> Any:
            return chain.proceed(chain.request)

    async def async_function(chain: Any) -> Any:
        return await chain.proceed(chain.request)

    with pytest.raises(TypeError, match="async def intercept"):
        fastnet.AsyncClient(interceptors=[Blocking()])
    with pytest.raises(TypeError, match="blocking function"):
        fastnet.AsyncClient(network_interceptors=[lambda chain: chain.proceed(chain.request)])
    with pytest.raises(TypeError, match="it is for fastnet.AsyncClient"):
        fastnet.Client(interceptors=[async_function])
    with pytest.raises(TypeError, match="takes no dispatcher"):
        fastnet.AsyncClient(dispatcher=fastnet.Dispatcher())


def test_retry_policy_runs_on_the_asyncio_client(run: Any, server: MockServer) -> None:
    server.enqueue(MockResponse(503), MockResponse(503), MockResponse(body=b"third time"))

    async def main() -> None:
        retry = fastnet.Retry(total=3, status_forcelist=[503], backoff_factor=0.01)
        async with new_client(interceptors=[retry]) as client:
            r = await client.get(server.url("/"))
            assert (r.status_code, r.content) == (200, b"third time")
            assert [p.status_code for p in r.history] == [503, 503]

    run(main())


def test_async_authenticator_cookie_jar_and_resolver(run: Any, server: MockServer) -> None:
    server.enqueue(
        MockResponse(401, headers={"WWW-Authenticate": 'Basic realm="r"', "Set-Cookie": "s=1"}),
        MockResponse(body=b"in"),
    )
    asked: list[str] = []

    class Auth:
        async def authenticate(self, route: Any, response: fastnet.Response) -> fastnet.Request | None:
            await asyncio.sleep(0)
            assert response.request is not None
            return response.request.replace(headers={"Authorization": "Basic dTpw"})

    class Jar:
        def __init__(self) -> None:
            self.cookies: list[Any] = []

        async def load_for(self, url: Any) -> list[Any]:
            await asyncio.sleep(0)
            return list(self.cookies)

        async def save_from_response(self, url: Any, cookies: list[Any]) -> None:
            await asyncio.sleep(0)
            self.cookies.extend(cookies)

    async def resolve(host: str) -> list[str]:
        asked.append(host)
        await asyncio.sleep(0)
        return ["127.0.0.1"]

    async def main() -> None:
        async with new_client(authenticator=Auth(), cookie_jar=Jar(), dns=resolve) as client:
            r = await client.get(f"http://app.test:{server.port}/")
            assert (r.status_code, r.content) == (200, b"in")

    run(main())
    assert asked == ["app.test"]
    server.take_request()
    second = server.take_request()
    assert (second.header("Authorization"), second.header("Cookie")) == ("Basic dTpw", "s=1")


def test_async_iterable_bodies(run: Any, server: MockServer) -> None:
    server.enqueue(MockResponse(body=b"1"), MockResponse(body=b"2"))

    async def chunks() -> AsyncIterator[bytes]:
        for part in (b"ab", b"", b"cd"):
            await asyncio.sleep(0)
            yield part

    class Replayable:
        def __aiter__(self) -> AsyncIterator[bytes]:
            return chunks()

    async def main() -> None:
        async with new_client() as client:
            await client.post(server.url("/one-shot"), body=chunks())
            await client.post(server.url("/replayable"), body=Replayable())

    run(main())
    for _ in range(2):
        request = server.take_request()
        assert (request.body, request.chunked) == (b"abcd", True)
    assert fastnet.RequestBody(chunks()).one_shot and not fastnet.RequestBody(Replayable()).one_shot
    with pytest.raises(TypeError, match="only be sent by fastnet.AsyncClient"):
        fastnet.Client(trust_env=False).post(server.url("/"), body=chunks())


# -- cancellation and timeouts ---------------------------------------------------------------------


def test_call_cancel_on_the_loop_while_the_server_stalls(run: Any, server: MockServer) -> None:
    server.enqueue(MockResponse(policy=SocketPolicy.NO_RESPONSE))

    async def main() -> None:
        async with new_client(read_timeout=30) as client:
            call = client.new_call(fastnet.Request("GET", server.url("/")))
            task = asyncio.ensure_future(call.execute())
            await asyncio.to_thread(server.take_request, 5)  # on the wire: the call waits for the head
            await asyncio.sleep(0.01)
            call.cancel()
            with pytest.raises(fastnet.CanceledError):
                await task
            assert call.is_canceled and not asyncio.current_task().cancelling()  # type: ignore[union-attr]
            assert client.connection_pool.connection_count() == 0

    run(main())


def test_call_cancel_from_another_thread(run: Any, server: MockServer) -> None:
    server.enqueue(MockResponse(policy=SocketPolicy.STALL_BODY, body=b"x" * 10000))

    async def main() -> None:
        async with new_client(read_timeout=30) as client:
            call = client.new_call(fastnet.Request("GET", server.url("/")))
            response = await call.execute()  # the head arrived; the body stalls halfway
            threading.Timer(0.05, call.cancel).start()
            with pytest.raises(fastnet.CanceledError):
                await response.aread()
            assert client.connection_pool.connection_count() == 0

    run(main())


def test_task_cancel_propagates_and_releases_the_connection(run: Any, server: MockServer) -> None:
    server.enqueue(MockResponse(policy=SocketPolicy.NO_RESPONSE), MockResponse(body=b"after"))

    async def main() -> None:
        async with new_client(read_timeout=30) as client:
            task = asyncio.ensure_future(client.get(server.url("/")))
            await asyncio.to_thread(server.take_request, 5)
            await asyncio.sleep(0.01)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert client.connection_pool.connection_count() == 0
            assert (await client.get(server.url("/"))).content == b"after"

    run(main())


def test_call_timeout_fires_on_the_loop(run: Any, server: MockServer) -> None:
    server.enqueue(MockResponse(policy=SocketPolicy.NO_RESPONSE))

    async def main() -> None:
        async with new_client(read_timeout=30, call_timeout=0.2) as client:
            with pytest.raises(fastnet.CallTimeout):
                await client.get(server.url("/"))
            assert client.connection_pool.connection_count() == 0

    run(main())


def test_read_timeout(run: Any, server: MockServer) -> None:
    server.enqueue(MockResponse(policy=SocketPolicy.NO_RESPONSE))

    async def main() -> None:
        async with new_client(read_timeout=0.2) as client:
            with pytest.raises(fastnet.ReadTimeout):
                await client.get(server.url("/"))

    run(main())


def test_read_timeout_on_a_busy_connection(run: Any, server: MockServer) -> None:
    """The connection's one lazy deadline timer (not one per wait): after quick exchanges on one
    connection with a long timeout, a shorter per-call timeout still fires on time, and a response
    slower than the old deadlines but within the new one is not cut short."""
    server.enqueue(*[MockResponse(body=b"quick")] * 20)
    server.enqueue(MockResponse(body=b"slow", head_delay=0.3), MockResponse(policy=SocketPolicy.NO_RESPONSE))

    async def main() -> None:
        async with new_client(read_timeout=0.25) as client:
            for _ in range(20):
                assert (await client.get(server.url("/"))).text == "quick"
            slow = fastnet.Request("GET", server.url("/"))
            assert (await client.with_options(read_timeout=2).get(server.url("/"))).text == "slow"
            loop = asyncio.get_running_loop()
            started = loop.time()
            with pytest.raises(fastnet.ReadTimeout):
                await client.with_options(read_timeout=0.2).new_call(slow).execute()
            assert 0.15 < loop.time() - started < 1.5
        assert server.take_request().connection_index == server.take_request().connection_index

    run(main())


def test_cancelled_backoff_sleep(run: Any, server: MockServer) -> None:
    server.enqueue(MockResponse(503, headers={"Retry-After": "5"}))

    async def main() -> None:
        retry = fastnet.Retry(total=2, status_forcelist=[503], respect_retry_after=True, backoff_max=10)
        async with new_client(interceptors=[retry]) as client:
            call = client.new_call(fastnet.Request("GET", server.url("/")))
            task = asyncio.ensure_future(call.execute())
            await asyncio.to_thread(server.take_request, 5)
            await asyncio.sleep(0.05)  # now in the 5 s backoff
            call.cancel()
            with pytest.raises(fastnet.CanceledError):
                await asyncio.wait_for(task, 2)

    run(main())


# -- many calls ------------------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["stream", "aiter_bytes"])
def test_a_collected_response_wakes_the_call_waiting_for_its_slot(
    run: Any, server: MockServer, how: str
) -> None:
    # the finalizer of a response nobody closed (dropped, or its iteration abandoned) frees the only
    # slot while another task waits for it: the wake reaches the loop, and that task goes on at once
    server.default_response = MockResponse(200, body=b"x" * 200_000)

    async def main() -> None:
        pool = fastnet.ConnectionPool(max_connections_per_host=1)
        async with new_client(connection_pool=pool, call_timeout=5) as client:
            held = await client.stream("GET", server.url("/"))
            chunks = held.aiter_bytes()
            if how == "aiter_bytes":
                assert await chunks.__anext__()
            waiter = asyncio.ensure_future(client.get(server.url("/")))
            real = pool._asyncio_real()
            for _ in range(500):  # until it waits for the slot (5 s at most)
                if "127.0.0.1" in real.waiters:
                    break
                await asyncio.sleep(0.01)
            assert real.waiters["127.0.0.1"].parked == 1
            del held, chunks
            gc.collect()
            assert (await waiter).status_code == 200  # before, PoolTimeout/CallTimeout after 5 s

    run(main())


def test_map_results_errors_and_order(run: Any, server: MockServer) -> None:
    server.dispatcher = lambda request: MockResponse(body=request.path.encode())

    async def urls() -> AsyncIterator[str]:
        for i in range(20):
            yield server.url(f"/{i}")
        yield "http://127.0.0.1:1/refused"

    async def main() -> None:
        async with new_client() as client:
            got = [(item, result) async for item, result in client.map(urls(), max_in_flight=4, ordered=True)]
            assert [i for i, _ in got[:20]] == [server.url(f"/{i}") for i in range(20)]
            assert [r.content for _, r in got[:20]] == [f"/{i}".encode() for i in range(20)]  # type: ignore[union-attr]
            assert isinstance(got[20][1], fastnet.ConnectError)
            unordered = [r async for r in client.map([server.url(f"/{i}") for i in range(10)])]
            assert sorted(r.content for _, r in unordered) == sorted(f"/{i}".encode() for i in range(10))  # type: ignore[union-attr]
            assert pool_clean(client)

    run(main())


def test_map_keeps_relative_urls_under_base_url(run: Any, server: MockServer) -> None:
    with MockServer() as other:
        server.dispatcher = lambda request: MockResponse(body=request.target.encode())
        hostport = f"127.0.0.1:{other.port}"

        async def main() -> None:
            async with new_client(base_url=server.url("/api/"), auth=("alice", "pw")) as client:
                got = [r async for _, r in client.map([f"//{hostport}/x", "/y"], ordered=True)]
                assert [r.content for r in got] == [f"/api/{hostport}/x".encode(), b"/api/y"]  # type: ignore[union-attr]

        run(main())
        assert other.request_count == 0


def test_map_starts_worker_tasks_as_the_input_needs_them(run: Any, server: MockServer) -> None:
    server.default_response = MockResponse(body=b"ok")
    workers = 0

    def counting(loop: asyncio.AbstractEventLoop, coro: Any, **options: Any) -> asyncio.Task[Any]:
        nonlocal workers
        if getattr(coro, "__qualname__", "") == "_Run._work":
            workers += 1
        return asyncio.Task(coro, loop=loop, **options)

    async def urls(n: int) -> AsyncIterator[str]:
        for _ in range(n):
            yield server.url("/")

    async def main() -> None:
        nonlocal workers
        asyncio.get_running_loop().set_task_factory(counting)
        async with new_client() as client:
            for items in ([server.url("/")], urls(1), urls(3)):
                workers = 0
                got = [r async for _, r in client.map(items, max_in_flight=200_000)]
                assert [r.content for r in got] == [b"ok"] * len(got)  # type: ignore[union-attr]
                assert workers <= len(got) + 1  # one per item taken, and one that found the end
            assert pool_clean(client)

    run(main())


def test_map_keeps_nothing_of_a_result_once_handed_over(run: Any, server: MockServer) -> None:
    server.dispatcher = lambda request: MockResponse(body=request.path.encode())

    async def main() -> None:
        more = asyncio.Event()

        async def slow_input() -> AsyncIterator[str]:
            yield server.url("/first")
            await more.wait()  # a worker task waits for the second item
            yield server.url("/second")

        async with new_client() as client:
            for ordered in (False, True):
                more.clear()
                results = client.map(slow_input(), max_in_flight=2, ordered=ordered)
                async with contextlib.aclosing(results):  # type: ignore[type-var]
                    item, result = await results.__anext__()
                    first = weakref.ref(result)
                    del item, result
                    gc.collect()
                    assert first() is None  # before, the map (and the task that ran it) kept it
                    more.set()
                    assert [r.content async for _, r in results] == [b"/second"]  # type: ignore[union-attr]

    run(main())


def test_leaving_map_early_cancels_what_is_in_flight(run: Any, server: MockServer) -> None:
    def answer(request: Any) -> MockResponse:
        if request.path == "/0":
            return MockResponse(body=b"first")
        return MockResponse(policy=SocketPolicy.NO_RESPONSE)

    server.dispatcher = answer

    async def main() -> None:
        async with new_client(read_timeout=30) as client:
            results = client.map([server.url(f"/{i}") for i in range(8)], max_in_flight=4)
            async with contextlib.aclosing(results):  # type: ignore[type-var]
                async for _item, result in results:
                    assert result.content == b"first"  # type: ignore[union-attr]
                    break
            assert pool_clean(client)  # the stalled calls were canceled: their connections are gone

    run(main())


def test_enqueue_with_a_callback(run: Any, server: MockServer) -> None:
    server.enqueue(MockResponse(body=b"queued"))
    seen: list[Any] = []

    class Callback:
        async def on_response(self, call: Any, response: fastnet.Response) -> None:
            seen.append(response.content)

        def on_failure(self, call: Any, error: Exception) -> None:
            seen.append(error)

    async def main() -> None:
        async with new_client() as client:
            task = client.new_call(fastnet.Request("GET", server.url("/"))).enqueue(Callback())
            assert (await task).content == b"queued"

    run(main())
    assert seen == [b"queued"]


def test_a_connection_of_a_finished_loop_is_not_reused(server: MockServer) -> None:
    server.enqueue(MockResponse(body=b"1"), MockResponse(body=b"2"))
    client = new_client()
    assert asyncio.run(client.get(server.url("/"))).content == b"1"
    assert asyncio.run(client.get(server.url("/"))).content == b"2"
    assert server.connection_count == 2
    asyncio.run(client.aclose())


def test_a_thousand_tasks_canceled_at_random_leak_nothing(run: Any, server: MockServer) -> None:
    def answer(request: Any) -> MockResponse:
        i = int(request.path[1:])
        if i % 6 == 0:  # only calls that cancel themselves stall
            return MockResponse(policy=SocketPolicy.STALL_BODY, body=b"y" * 4000)
        if i % 5 == 0:
            return MockResponse(body=b"x" * 20000, chunked=True, chunk_size=1000)
        return MockResponse(body=b"ok")

    server.dispatcher = answer
    rng = random.Random(1234)

    async def main() -> None:
        pool = fastnet.ConnectionPool(max_idle_connections=64, max_connections_per_host=16)
        async with new_client(connection_pool=pool, read_timeout=10) as client:

            async def one(i: int) -> str:
                if i % 3 == 0:
                    call = client.new_call(fastnet.Request("GET", server.url(f"/{i}")))
                    asyncio.get_running_loop().call_later(rng.random() * 0.05, call.cancel)
                    try:
                        response = await call.execute()
                        await response.aread()
                    except fastnet.CanceledError:
                        return "canceled"
                    return "done"
                await client.get(server.url(f"/{i}"))
                return "done"

            tasks = [asyncio.ensure_future(one(i)) for i in range(1000)]
            await asyncio.sleep(0.02)
            for task in rng.sample(tasks, 200):
                task.cancel()
            outcomes = await asyncio.gather(*tasks, return_exceptions=True)
            kinds = {type(o).__name__ if isinstance(o, BaseException) else o for o in outcomes}
            assert kinds <= {"done", "canceled", "CancelledError", "ReadTimeout"}, kinds
            assert "done" in kinds
            assert pool.connection_count() == pool.idle_connection_count()

    run(main())
