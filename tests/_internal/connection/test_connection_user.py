"""``ConnectionUser`` (``fastnet._internal.connection.connection_user``), both twins: what the connection
layer knows of the call it works for. The base class only declares the fields and the methods ``RealCall``
implements; through the real client against MockServer, the calls are ``ConnectionUser``s that hold one
connection at a time, keep it across a follow-up to the same address and give it back when the call
ends (OkHttp's rules, seen in the ``connection_acquired``/``connection_released`` events)."""

from __future__ import annotations

import types

import pytest

import fastnet
from fastnet._internal.connection.connection_user import ConnectionUser
from fastnet.testing import MockResponse, MockServer
from tests.support.clients import make_fast_client
from tests.support.fakes import RecordingListener
from tests.support.twins import Twins

FIELDS = (
    "events",
    "canceled",
    "timed_out",
    "deadline",
    "max_body_size",
    "connection",
    "reusable",
    "finder",
    "exchange",
    "last_failure",
    "retry_route",
    "started_at",
    "queued",
)


@pytest.fixture
def module(twins: Twins) -> types.ModuleType:
    return twins("fastnet._internal.connection.connection_user")


def test_connection_user_declares_the_fields_the_lower_layers_read(module: types.ModuleType) -> None:
    user = module.ConnectionUser()
    for value, name in enumerate(FIELDS):
        setattr(user, name, None if name in ("events", "connection", "finder", "exchange") else value)
    user.canceled = True
    user.deadline = 12.5
    assert (user.canceled, user.deadline, user.connection) == (True, 12.5, None)
    with pytest.raises(AttributeError):
        user.not_a_field = 1


def test_connection_user_methods_are_for_the_call_to_implement(module: types.ModuleType) -> None:
    user = module.ConnectionUser()
    request = fastnet.Request("GET", "http://a.test/")
    for method, args in (
        ("canceled_error", (request,)),
        ("exchange_done", (None, True)),
        ("body_failed", (None, None)),
        ("exchange_failed", (None, None)),
        ("release_connection", ()),
    ):
        with pytest.raises(NotImplementedError):
            getattr(user, method)(*args)


def test_connection_user_the_clients_calls_are_connection_users(server: MockServer) -> None:
    server.enqueue(MockResponse(200, body=b"ok"))
    seen: list[object] = []

    def network(chain: fastnet.Chain) -> fastnet.Response:
        call = chain.call
        seen.append((isinstance(call, ConnectionUser), call.connection is chain.connection, call.canceled))
        return chain.proceed(chain.request)

    with make_fast_client(network_interceptors=[network]) as client:
        call = client.new_call(fastnet.Request("GET", server.url("/")))
        assert isinstance(call, ConnectionUser) and call.connection is None
        response = call.execute()
        assert call.connection is not None  # held while the body is unread
        assert response.content == b"ok"
        assert call.connection is None  # body read: given back
        assert client.connection_pool.idle_connection_count() == 1
    assert seen == [(True, True, False)]


def _connection_events(listener: object) -> list[str]:
    names = listener.names()  # type: ignore[attr-defined]
    return [n for n in names if n in ("connection_acquired", "connection_released")]


def test_connection_user_keeps_its_connection_across_a_follow_up_to_the_same_address(
    server: MockServer,
) -> None:
    server.enqueue(MockResponse(302, headers={"Location": "/next"}), MockResponse(200, body=b"there"))
    listener = RecordingListener()
    with make_fast_client(event_listener=listener) as client:
        assert client.get(server.url("/")).content == b"there"
    assert _connection_events(listener) == ["connection_acquired", "connection_released"]
    assert [server.take_request().connection_index for _ in range(2)] == [0, 0]


def test_connection_user_gives_its_connection_back_before_moving_to_another_address(
    server: MockServer,
) -> None:
    with MockServer() as other:
        other.enqueue(MockResponse(200, body=b"moved"))
        server.enqueue(MockResponse(307, headers={"Location": other.url("/there")}))
        listener = RecordingListener()
        with make_fast_client(event_listener=listener) as client:
            assert client.get(server.url("/")).content == b"moved"
            assert client.connection_pool.idle_connection_count() == 2
    assert _connection_events(listener) == ["connection_acquired", "connection_released"] * 2
