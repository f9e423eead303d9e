"""The ``Interceptor`` and ``Chain`` protocols (``fastnet/interceptor.py``): what counts as an
interceptor, and that the chains the client hands its application and network interceptors really are
``Chain``s with the members the protocol promises. Through the real client against MockServer."""

from __future__ import annotations

from typing import Any

import fastnet
from fastnet.interceptor import Chain, Interceptor
from fastnet.testing import MockResponse, MockServer
from tests.support.clients import make_fast_client


class AddHeader:
    def __init__(self, name: str) -> None:
        self.name = name

    def intercept(self, chain: Chain) -> fastnet.Response:
        return chain.proceed(chain.request.replace(headers=chain.request.headers.add(self.name, "1")))


def test_interceptor_protocols_are_exported_and_runtime_checkable() -> None:
    assert fastnet.Interceptor is Interceptor and fastnet.Chain is Chain
    assert isinstance(AddHeader("X-A"), Interceptor)
    assert not isinstance(object(), Interceptor)
    assert not isinstance(lambda chain: chain.proceed(chain.request), Interceptor)  # accepted, not one
    assert not isinstance(object(), Chain)


def test_interceptor_objects_and_plain_functions_are_both_accepted(server: MockServer) -> None:
    def as_function(chain: Chain) -> fastnet.Response:
        return chain.proceed(chain.request.replace(headers=chain.request.headers.add("X-F", "1")))

    server.enqueue(MockResponse(200))
    with make_fast_client(interceptors=[AddHeader("X-A"), as_function]) as client:
        assert client.get(server.url("/")).status_code == 200
    recorded = server.take_request()
    assert (recorded.header("x-a"), recorded.header("x-f")) == ("1", "1")


def test_interceptor_chains_are_chains_with_the_promised_members(server: MockServer) -> None:
    seen: dict[str, Any] = {}

    def record(where: str) -> Any:
        def intercept(chain: Chain) -> fastnet.Response:
            seen[where] = (
                isinstance(chain, Chain),
                chain.request.url.path,
                chain.call is not None,
                chain.connection,
                (chain.connect_timeout, chain.read_timeout, chain.write_timeout),
            )
            return chain.proceed(chain.request)

        return intercept

    server.enqueue(MockResponse(200, body=b"ok"))
    with make_fast_client(
        interceptors=[record("application")], network_interceptors=[record("network")], write_timeout=7
    ) as client:
        assert client.get(server.url("/p")).content == b"ok"
    app_is_chain, app_path, app_call, app_connection, app_timeouts = seen["application"]
    net_is_chain, net_path, net_call, net_connection, net_timeouts = seen["network"]
    assert app_is_chain and net_is_chain
    assert app_path == net_path == "/p" and app_call and net_call
    assert app_connection is None  # application interceptors run before there is a connection
    assert net_connection is not None and net_connection.route.address.port == server.port
    assert app_timeouts == net_timeouts == (5, 5, 7)


def test_interceptor_with_timeout_returns_a_chain_with_that_timeout(server: MockServer) -> None:
    seen: list[tuple[bool, float, float, float]] = []

    def shorter(chain: Chain) -> fastnet.Response:
        narrowed = chain.with_read_timeout(1.5).with_connect_timeout(2).with_write_timeout(None)
        seen.append(
            (
                isinstance(narrowed, Chain),
                narrowed.read_timeout,
                narrowed.connect_timeout,
                narrowed.write_timeout,
            )
        )
        return narrowed.proceed(chain.request)

    server.enqueue(MockResponse(200))
    with make_fast_client(interceptors=[shorter]) as client:
        client.get(server.url("/")).close()
    assert seen == [(True, 1.5, 2, 0)]
