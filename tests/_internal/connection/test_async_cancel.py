"""Cancelling the asyncio connect path in each phase (name lookup, TCP connect, SOCKS, CONNECT, TLS to a
proxy, TLS to the origin), by the call's ``cancel()`` and by ``task.cancel()``: the finder stops at once,
raises ``CanceledError`` (or lets ``CancelledError`` through), gives the host's slot back and leaves no
socket open and no task pending (``run`` checks the tasks). The servers are real ones on loopback that
stop answering at the phase under test; the test cancels once the server saw the phase begin.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from fastnet.exceptions import CanceledError
from fastnet.proxy import Proxy
from tests.support.async_support import (
    User,
    client_sockets,
    drain_until_eof,
    find,
    make_connector,
    serve,
)
from tests.support.fakes import RecordingListener

HOW = ["cancel", "task"]


async def cancel_when(
    how: str,
    reached: asyncio.Event,
    connector: Any,
    url: str,
    events: Any = None,
    connect_timeout: float = 30.0,
) -> None:
    """Run a find for ``url``; once ``reached`` is set, cancel it (``user.cancel()`` or ``task.cancel()``)
    and check that it ended as a cancel does, with the slot given back."""
    user = User(connector.pool, events)
    task = asyncio.ensure_future(find(connector, user, url, connect_timeout, 30.0))
    waiting = asyncio.ensure_future(reached.wait())
    try:
        done, _ = await asyncio.wait({task, waiting}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiting.cancel()
    if task.done():
        task.result()  # raises what ended it
        raise AssertionError("the find connected before the phase was reached")
    assert not task.done()
    if how == "cancel":
        user.cancel()
        with pytest.raises(CanceledError) as info:
            await task
        assert info.value.message == "Canceled" or "Canceled" in info.value.message
    else:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert connector.pool.connection_count() == 0
    await asyncio.sleep(0)  # transports aborted by the cancel close their sockets in the next iteration


async def silent_after(
    first: Callable[[asyncio.StreamReader], Awaitable[Any]],
) -> tuple[Any, asyncio.Event]:
    """A server that runs ``first(reader)`` (read what the phase sends), says so, then never answers."""
    reached = asyncio.Event()

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await first(reader)
        reached.set()
        await drain_until_eof(reader)

    return await serve(handler), reached


@pytest.mark.parametrize("how", HOW)
def test_async_cancel_during_tcp_connect(run: Any, testbed: Any, how: str) -> None:
    if not testbed.blackhole_available:
        pytest.skip("nft blackhole not available")
    hole, port = testbed.blackhole_host, testbed.http_port

    async def main() -> None:
        reached = asyncio.Event()

        class Started(RecordingListener):  # type: ignore[misc, valid-type]
            def connect_start(self, call: Any, route: Any) -> None:
                reached.set()

        connector = make_connector()
        await cancel_when(how, reached, connector, f"http://{hole}:{port}/", Started())
        assert client_sockets(hole, port) == 0
        assert connector.route_database.failed_routes() == []  # a cancel is no route failure

    run(main)


@pytest.mark.parametrize("how", HOW)
def test_async_cancel_during_name_lookup(run: Any, how: str) -> None:
    async def main() -> None:
        reached = asyncio.Event()
        never: asyncio.Future[list[str]] = asyncio.get_running_loop().create_future()

        class StuckDns:
            def lookup(self, host: str) -> list[str]:
                raise AssertionError("the asyncio finder must not call the blocking lookup")

            async def alookup(self, host: str) -> list[str]:
                reached.set()
                return await never

        connector = make_connector(dns=StuckDns())
        await cancel_when(how, reached, connector, "http://stuck.test:80/")
        assert never.cancelled()

    run(main)


@pytest.mark.parametrize("how", HOW)
@pytest.mark.parametrize("version", [5, 4])
def test_async_cancel_during_socks_handshake(run: Any, how: str, version: int) -> None:
    async def main() -> None:
        server, reached = await silent_after(lambda reader: reader.readexactly(3 if version == 5 else 9))
        try:
            proxy = Proxy.socks(*server.address, version=version)
            connector = make_connector(proxy=proxy)
            await cancel_when(how, reached, connector, "http://127.0.0.2:8080/")
            assert client_sockets(*server.address) == 0
        finally:
            await server.close()

    run(main)


@pytest.mark.parametrize("how", HOW)
def test_async_cancel_during_connect_tunnel(run: Any, how: str) -> None:
    async def main() -> None:
        server, reached = await silent_after(lambda reader: reader.readuntil(b"\r\n\r\n"))
        try:
            connector = make_connector(proxy=Proxy.http(*server.address))
            await cancel_when(how, reached, connector, "https://127.0.0.2:4443/")
            assert client_sockets(*server.address) == 0
        finally:
            await server.close()

    run(main)


@pytest.mark.parametrize("how", HOW)
@pytest.mark.parametrize("to", ["origin", "proxy"])
def test_async_cancel_during_tls_handshake(run: Any, how: str, to: str) -> None:
    async def main() -> None:
        # a TLS server that reads the ClientHello's record header and says nothing
        server, reached = await silent_after(lambda reader: reader.readexactly(5))
        try:
            if to == "origin":
                connector = make_connector()
                url = f"https://{server.address[0]}:{server.address[1]}/"
            else:
                connector = make_connector(proxy=Proxy.https(*server.address))
                url = "http://127.0.0.2:8080/"
            events = RecordingListener()
            await cancel_when(how, reached, connector, url, events)
            assert "secure_connect_start" in events.names()
            assert client_sockets(*server.address) == 0
        finally:
            await server.close()

    run(main)


def test_async_cancel_before_the_find_starts(run: Any) -> None:
    async def main() -> None:
        connector = make_connector()
        user = User(connector.pool)
        user.cancel()
        with pytest.raises(CanceledError):
            await find(connector, user, "http://127.0.0.1:9/")
        assert connector.pool.connection_count() == 0

    run(main)
