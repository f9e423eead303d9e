"""The clients tests make: ``make_client``, ``make_fast_client``, and what runs a test on both clients.

``make_client(**options)`` is a client that trusts nothing from the environment (``trust_env=False``);
``make_fast_client(**options)`` has 5 s connect and read timeouts instead of 10 s, so a test whose
server stops answering fails sooner. ``assert_pool_clean(client)`` checks that no call left a connection
in use.

Both clients: in a test marked ``both_clients`` (``tests/conftest.py`` parametrizes it over
``CLIENT_KINDS``), ``make_client()`` gives a ``fastnet.Client``, then an ``fastnet.AsyncClient`` on the
default event loop, then one on uvloop, each behind the blocking facade of ``async_facade.py``, so one
test body checks both engines. ``blocking_only(kind)`` skips a test that only makes sense for the
blocking client.
"""

from __future__ import annotations

from typing import Any

import pytest

import fastnet
from fastnet.route import Route
from fastnet.testing import MockServer

__all__ = [
    "CLIENT_KINDS",
    "assert_pool_clean",
    "ca_path",
    "route_of",
    "blocking_only",
    "client_kind_now",
    "make_client",
    "make_fast_client",
    "set_client_kind",
]

#: The clients a ``both_clients`` test runs with.
CLIENT_KINDS = ("blocking", "asyncio", "asyncio+uvloop")
_client_kind = "blocking"  # what make_client() builds, set by conftest's client_kind fixture


def set_client_kind(kind: str) -> None:
    """What ``make_client()`` builds from now on: one of ``CLIENT_KINDS``."""
    global _client_kind
    if kind not in CLIENT_KINDS:
        raise ValueError(f"unknown client kind {kind!r}")
    _client_kind = kind


def client_kind_now() -> str:
    return _client_kind


def blocking_only(kind: str, why: str = "tests the blocking client only") -> None:
    if kind != "blocking":
        pytest.skip(why)


def make_client(**options: Any) -> fastnet.Client:
    """A client that ignores the proxy environment variables (``trust_env=False``), with ``options``;
    in a ``both_clients`` test, an ``AsyncClient`` behind the blocking facade on the asyncio runs."""
    options.setdefault("trust_env", False)
    if _client_kind != "blocking":
        from tests.support.async_facade import BlockingAsyncClient

        facade: Any = BlockingAsyncClient(use_uvloop=_client_kind == "asyncio+uvloop", **options)
        return facade  # type: ignore[no-any-return]
    return fastnet.Client(**options)


def make_fast_client(**options: Any) -> fastnet.Client:
    """``make_client`` with 5 s connect and read timeouts (the defaults are 10 s), with ``options``."""
    options.setdefault("connect_timeout", 5)
    options.setdefault("read_timeout", 5)
    return make_client(**options)


def assert_pool_clean(client: fastnet.Client) -> None:
    """No connection of ``client``'s pool is in use: every call gave its connection back or closed it."""
    pool = client.connection_pool
    assert pool.connection_count() == pool.idle_connection_count()


def ca_path(server: MockServer) -> str:
    """The PEM file of the CA a ``MockServer(tls=True)`` was issued by (a plain server has none)."""
    path = server.ca_path
    assert path is not None, "a MockServer without TLS has no CA"
    return path


def route_of(carrier: Any) -> Route:
    """The route of a response or a connection: always there for one that went over the network."""
    route: Route | None = carrier.route
    assert route is not None, f"{carrier!r} has no route"
    return route
