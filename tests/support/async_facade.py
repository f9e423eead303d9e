"""``BlockingAsyncClient``: an ``AsyncClient`` driven from blocking test code, so one test runs on both.

The sync suite's behaviours (redirects, auth, retries, proxies, DNS, events, timeouts, cancellation) are
written against ``fastnet.Client``. A module that opts in with ``pytestmark = pytest.mark.both_clients``
runs each test twice: once with ``make_client()`` returning a ``fastnet.Client``, once returning this
facade over a real ``fastnet.AsyncClient`` whose event loop runs on a thread of its own. Nothing below
the client is replaced: the asyncio engine makes every connection, on real sockets.

What the facade translates, and nothing more:

* calls: ``client.get(...)`` runs ``await async_client.get(...)`` on the loop and waits for it;
  ``new_call(request)`` gives a call whose ``execute()`` does the same and whose ``cancel()`` is the
  asyncio call's own (thread-safe) ``cancel()``;
* streamed bodies: a response still streaming gets a blocking ``ResponseBodySource`` that reads the
  asyncio one on the loop (``response.read()``, ``iter_bytes()``, ``close()`` work as on ``Client``);
* interceptors: a blocking interceptor (the tests' ``def intercept(chain)``) runs on a worker thread
  with a chain whose ``proceed`` awaits the real asyncio chain on the loop. Authenticators, cookie
  jars, DNS resolvers and event listeners need no translation: the asyncio client takes blocking ones.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

import fastnet
from fastnet.response import ResponseBodySource

__all__ = ["BlockingAsyncClient"]

T = TypeVar("T")
_CALL_WAIT = 120.0  # a test that waits longer than this for one call is stuck: fail it rather than hang


class _Loop:
    """An event loop on a daemon thread (uvloop when asked for), and a blocking ``run`` onto it."""

    def __init__(self, use_uvloop: bool) -> None:
        if use_uvloop:
            import uvloop

            self.loop: asyncio.AbstractEventLoop = uvloop.new_event_loop()
        else:
            self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="facade-loop", daemon=True)
        self.thread.start()
        self.executor = concurrent.futures.ThreadPoolExecutor(8, thread_name_prefix="facade-interceptor")

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        if threading.current_thread() is self.thread:
            raise RuntimeError("a blocking facade call from the loop's own thread would deadlock")
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(_CALL_WAIT)

    def close(self) -> None:
        async def finish() -> None:
            await self.loop.shutdown_asyncgens()

        try:
            self.run(finish())
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(10)
            self.loop.close()
            self.executor.shutdown(wait=False)


class _BlockingSource(ResponseBodySource):
    """A streamed asyncio body read from blocking code (each read runs on the loop)."""

    __slots__ = ("inner", "runner")

    def __init__(self, inner: Any, runner: _Loop) -> None:
        self.inner = inner
        self.runner = runner
        self.done = inner.done

    def read_all(self) -> bytes:
        try:
            data: bytes = self.runner.run(self.inner.aread_all())
        finally:
            self.done = self.inner.done
        return data

    def read_chunk(self) -> bytes | None:
        try:
            data: bytes | None = self.runner.run(self.inner.aread_chunk())
        finally:
            self.done = self.inner.done
        return data

    def readinto(self, buffer: memoryview) -> int:
        try:
            n: int = self.runner.run(self.inner.areadinto(buffer))
        finally:
            self.done = self.inner.done
        return n

    def body_limit(self) -> int:
        limit: int = self.inner.body_limit()
        return limit

    def close_body(self) -> None:
        try:
            self.runner.run(self.inner.aclose_body())
        finally:
            self.done = self.inner.done

    def abandon(self) -> None:
        self.done = True
        if not self.runner.loop.is_closed():
            self.runner.loop.call_soon_threadsafe(self.inner.abandon)


def _blocking(response: Any, runner: _Loop) -> Any:
    """``response`` (and its history) readable from blocking code."""
    source = response._source
    if source is not None and not isinstance(source, _BlockingSource):
        response._source = _BlockingSource(source, runner)
    return response


def _unblocked(response: Any) -> Any:
    """The inverse of ``_blocking``, for a response a blocking interceptor hands back to the engine."""
    source = response._source
    if isinstance(source, _BlockingSource):
        response._source = source.inner
    return response


class _BlockingChain:
    """The chain a blocking interceptor sees: ``proceed`` awaits the asyncio chain on the loop."""

    def __init__(self, chain: Any, runner: _Loop) -> None:
        self._chain = chain
        self._runner = runner

    def proceed(self, request: fastnet.Request) -> fastnet.Response:
        return _blocking(self._runner.run(self._chain.proceed(request)), self._runner)  # type: ignore[no-any-return]

    def _wrap(self, chain: Any) -> _BlockingChain:
        return _BlockingChain(chain, self._runner)

    def with_connect_timeout(self, seconds: float | None) -> _BlockingChain:
        return self._wrap(self._chain.with_connect_timeout(seconds))

    def with_read_timeout(self, seconds: float | None) -> _BlockingChain:
        return self._wrap(self._chain.with_read_timeout(seconds))

    def with_write_timeout(self, seconds: float | None) -> _BlockingChain:
        return self._wrap(self._chain.with_write_timeout(seconds))

    def with_follow_redirects(self, follow: bool) -> _BlockingChain:
        return self._wrap(self._chain.with_follow_redirects(follow))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._chain, name)


class _BlockingInterceptor:
    """A blocking interceptor run for the asyncio client: on a worker thread, with a ``_BlockingChain``."""

    def __init__(self, interceptor: Any, runner: _Loop) -> None:
        self.interceptor = interceptor
        self.runner = runner
        self.function = getattr(interceptor, "intercept", interceptor)

    async def intercept(self, chain: Any) -> Any:
        loop = asyncio.get_running_loop()
        response = await loop.run_in_executor(
            self.runner.executor, self.function, _BlockingChain(chain, self.runner)
        )
        return _unblocked(response) if response is not None else None

    def __repr__(self) -> str:
        return repr(self.interceptor)


def _translate(items: Any, runner: _Loop) -> list[Any]:
    out = []
    for item in items:
        intercept = getattr(item, "intercept", None)
        is_async = (
            hasattr(item, "aintercept")
            or (intercept is not None and inspect.iscoroutinefunction(intercept))
            or (intercept is None and inspect.iscoroutinefunction(item))
        )
        out.append(item if is_async else _BlockingInterceptor(item, runner))
    return out


class _Call:
    """A facade over an ``AsyncCall``: ``execute()`` blocks, ``cancel()`` is the call's own."""

    def __init__(self, call: Any, runner: _Loop) -> None:
        self._call = call
        self._runner = runner

    def execute(self) -> fastnet.Response:
        return _blocking(self._runner.run(self._call.execute()), self._runner)  # type: ignore[no-any-return]

    def cancel(self) -> None:
        self._call.cancel()

    def clone(self) -> _Call:
        return _Call(self._call.clone(), self._runner)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._call, name)


class BlockingAsyncClient:
    """A ``fastnet.AsyncClient`` with ``fastnet.Client``'s blocking methods (see the module doc)."""

    is_asyncio = True

    def __init__(self, use_uvloop: bool = False, _runner: _Loop | None = None, **options: Any) -> None:
        self._owns_runner = _runner is None
        self._runner = _runner if _runner is not None else _Loop(use_uvloop)
        for name in ("interceptors", "network_interceptors"):
            if name in options:
                options[name] = _translate(options[name], self._runner)

        async def build() -> fastnet.AsyncClient:
            return fastnet.AsyncClient(**options)

        try:
            self.inner: fastnet.AsyncClient = self._runner.run(build())
        except BaseException:
            if self._owns_runner:
                self._runner.close()
            raise

    def _run(self, coro: Coroutine[Any, Any, Any]) -> Any:
        return self._runner.run(coro)

    # -- calls ------------------------------------------------------------------------------------

    def request(self, method: str, url: Any, **kwargs: Any) -> fastnet.Response:
        return self._run(self.inner.request(method, url, **kwargs))  # type: ignore[no-any-return]

    def stream(self, method: str, url: Any, **kwargs: Any) -> fastnet.Response:
        async def start() -> fastnet.Response:
            response: fastnet.Response = await self.inner.stream(method, url, **kwargs)
            return response

        return _blocking(self._run(start()), self._runner)  # type: ignore[no-any-return]

    def get(self, url: Any, **kwargs: Any) -> fastnet.Response:
        return self._run(self.inner.get(url, **kwargs))  # type: ignore[no-any-return]

    def head(self, url: Any, **kwargs: Any) -> fastnet.Response:
        return self._run(self.inner.head(url, **kwargs))  # type: ignore[no-any-return]

    def options(self, url: Any, **kwargs: Any) -> fastnet.Response:
        return self._run(self.inner.options(url, **kwargs))  # type: ignore[no-any-return]

    def delete(self, url: Any, **kwargs: Any) -> fastnet.Response:
        return self._run(self.inner.delete(url, **kwargs))  # type: ignore[no-any-return]

    def post(self, url: Any, **kwargs: Any) -> fastnet.Response:
        return self._run(self.inner.post(url, **kwargs))  # type: ignore[no-any-return]

    def put(self, url: Any, **kwargs: Any) -> fastnet.Response:
        return self._run(self.inner.put(url, **kwargs))  # type: ignore[no-any-return]

    def patch(self, url: Any, **kwargs: Any) -> fastnet.Response:
        return self._run(self.inner.patch(url, **kwargs))  # type: ignore[no-any-return]

    def new_call(self, request: fastnet.Request) -> _Call:
        return _Call(self.inner.new_call(request), self._runner)

    def with_options(self, **changes: Any) -> BlockingAsyncClient:
        for name in ("interceptors", "network_interceptors"):
            if name in changes:
                changes[name] = _translate(changes[name], self._runner)
        sibling = BlockingAsyncClient.__new__(BlockingAsyncClient)
        sibling._owns_runner = False
        sibling._runner = self._runner

        async def build() -> fastnet.AsyncClient:
            return self.inner.with_options(**changes)

        sibling.inner = self._run(build())
        return sibling

    # -- lifecycle --------------------------------------------------------------------------------

    def close(self) -> None:
        if self._runner.loop.is_closed():
            return
        self._run(self.inner.aclose())
        if self._owns_runner:
            self._runner.close()

    def __enter__(self) -> BlockingAsyncClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __getattr__(self, name: str) -> Any:
        # options, connection_pool, dns, route_database, config, is_closed: the asyncio client's own
        return getattr(self.inner, name)

    def __repr__(self) -> str:
        return f"<BlockingAsyncClient {self.inner!r}>"
