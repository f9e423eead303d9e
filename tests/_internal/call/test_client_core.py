"""``ClientCore`` (``fastnet._internal.core.client_core``), both builds: the settings and shared state every
call reads, its defaults, the per-call ``copy`` that shares everything, which event listener a new call gets,
and the process's one call-timeout watchdog. Then, through the real client against MockServer, the
client's options landing in its core."""

from __future__ import annotations

import threading
import types

import pytest

import fastnet
from fastnet._internal._sync.pool import RealConnectionPool
from fastnet._internal.util.watchdog import Watchdog
from fastnet._version import __version__
from fastnet.testing import MockResponse, MockServer
from tests.support.fakes import RecordingListener
from tests.support.twins import Twins


@pytest.fixture
def module(twins: Twins) -> types.ModuleType:
    return twins("fastnet._internal.core.client_core")


def test_client_core_defaults(module: types.ModuleType) -> None:
    core = module.ClientCore()
    assert (core.connect_timeout, core.read_timeout, core.write_timeout, core.call_timeout) == (10, 10, 10, 0)
    assert core.follow_redirects and core.follow_ssl_redirects and core.retry_on_connection_failure
    assert core.max_follow_ups == module.MAX_FOLLOW_UPS == 20
    assert core.max_body_size == module.MAX_BODY_SIZE == 1 << 30
    assert core.user_agent == module.USER_AGENT == f"fastnet/{__version__}"
    assert core.interceptors == [] and core.sensitive_headers == frozenset()
    assert core.cookie_jar is None and core.event_listener is None and core.factory is None
    assert not core.closed and not core.factory_builds


def test_client_core_copy_shares_everything_but_the_factory(module: types.ModuleType) -> None:
    core = module.ClientCore()
    core.read_timeout = 3.5
    core.follow_redirects = False
    core.interceptors = [object()]
    core.sensitive_headers = frozenset({"x-key"})
    core.max_body_size = 99
    core.closed = True
    core.factory = object()
    core.factory_builds = True
    core.dispatcher = shared = object()
    core.pool = pool = RealConnectionPool(5, 300.0, 0)  # the client always sets pool and connector
    core.connector = None
    copy = core.copy()
    assert copy is not core and type(copy) is type(core)
    assert (copy.read_timeout, copy.follow_redirects, copy.max_body_size, copy.closed) == (
        3.5,
        False,
        99,
        True,
    )
    assert copy.interceptors is core.interceptors and copy.dispatcher is shared and copy.pool is pool
    assert copy.sensitive_headers == {"x-key"}
    assert copy.factory is None and not copy.factory_builds  # a per-call copy builds no requests
    copy.read_timeout = 1.0
    assert core.read_timeout == 3.5


def test_client_core_new_events_the_factorys_listener_else_the_shared_one(module: types.ModuleType) -> None:
    core = module.ClientCore()
    assert core.new_events(object()) is None
    shared = RecordingListener()
    core.event_listener = shared
    assert core.new_events(object()) is shared
    calls: list[object] = []

    def per_call(call: object) -> object:
        calls.append(call)
        return RecordingListener()

    core.event_listener_factory = per_call
    call = object()
    listener = core.new_events(call)
    assert listener is not shared and calls == [call]


def test_client_core_one_watchdog_for_the_process(module: types.ModuleType) -> None:
    found: list[Watchdog] = []
    barrier = threading.Barrier(8)

    def first_use() -> None:
        barrier.wait()
        found.append(module.watchdog())

    threads = [threading.Thread(target=first_use) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(found) == 8 and all(w is found[0] for w in found) and isinstance(found[0], Watchdog)


def test_client_core_holds_the_clients_options(server: MockServer) -> None:
    listener = recorded = RecordingListener()  # (``recorded`` stays a RecordingListener to mypy)
    with fastnet.Client(
        trust_env=False,
        connect_timeout=2,
        read_timeout=None,
        call_timeout=30,
        follow_redirects=False,
        max_body_size=1000,
        event_listener=listener,
        user_agent="agent/1",
    ) as client:
        core = client._core
        assert (core.connect_timeout, core.read_timeout, core.call_timeout) == (2, 0, 30)
        assert not core.follow_redirects and core.max_body_size == 1000 and core.event_listener is listener
        server.enqueue(MockResponse(200, body=b"x" * 2000))
        with pytest.raises(fastnet.FastnetError, match="1000"):
            client.get(server.url("/"))  # the core's max_body_size is the one the call reads
        assert server.take_request().header("user-agent") == "agent/1"
        assert "call_start" in recorded.names()
    assert core.closed
