"""Shared fixtures: the real-server testbed, both builds' twins of every compiled unit, and servers.

``twins`` gives a test the pure (``py``) and the compiled (``c``) build of a unit, one run each:
``twins("fastnet.route")`` is ``fastnet/route.py`` loaded as Python, then the compiled ``fastnet.route``
(``support/twins.py`` says when the compiled run is skipped).

``server`` is a fresh ``MockServer`` per test and ``client`` a client that trusts nothing from the
environment; ``tls_server`` and ``tls_client`` are their HTTPS counterparts (the client trusts the
server's test CA). ``fast_client`` is ``client`` with 5 s connect and read timeouts instead of 10 s. A
test that opens its own client uses ``make_client(**options)`` or ``make_fast_client(**options)`` from
``tests.support.clients``.

Both clients: a module (or test) marked ``both_clients`` runs each test three times, with
``make_client()`` (and the fixtures built on it) giving a ``fastnet.Client``, then an
``fastnet.AsyncClient`` on the default event loop, then one on uvloop, each behind the blocking facade
of ``support/async_facade.py`` so one test body checks both engines. ``client_kind`` says which run this
is; a test that only makes sense for one client skips the other with ``blocking_only(client_kind)``.

Layout: the tests mirror the package. ``fastnet/x.py`` is tested in ``tests/test_x.py``, a unit of a
subpackage in the same place under ``tests/`` (``fastnet/_internal/util/clock.py`` in
``tests/_internal/util/test_clock.py``, ``fastnet/dns/_udp.py`` in ``tests/dns/test_udp.py``); the
engine, whose asyncio units (``_async/``) and blocking twins (``_sync/``) share their file names, in
``tests/_internal/engine/``, where one test body checks both. ``tests/integration/`` holds the tests of
no one unit: the whole client against the testbed's real servers, and behaviours that cross units. The
helpers live in ``tests/support/``. Every test directory is a package (``tests.dns``...), so test modules
of two subpackages may share a name, and a test imports a helper as ``tests.support.x``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import fastnet
from fastnet.testing import MockServer
from tests.support.async_support import run  # noqa: F401  (fixture: a coroutine on asyncio's loop, then on uvloop)
from tests.support.clients import CLIENT_KINDS, make_client, make_fast_client, set_client_kind
from tests.support.testbed import testbed  # noqa: F401  (session fixture: nginx, squid, dante, unbound, dnsdist)
from tests.support.twins import Twins, twin_module


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if metafunc.definition.get_closest_marker("both_clients") is not None:
        if "client_kind" not in metafunc.fixturenames:
            metafunc.fixturenames.insert(0, "client_kind")
        metafunc.parametrize("client_kind", CLIENT_KINDS, indirect=True)


@pytest.fixture
def client_kind(request: pytest.FixtureRequest) -> Iterator[str]:
    """Which client ``make_client()`` builds in this test: one of ``CLIENT_KINDS``."""
    kind: str = getattr(request, "param", "blocking")
    if kind == "asyncio+uvloop":
        pytest.importorskip("uvloop")
    set_client_kind(kind)
    try:
        yield kind
    finally:
        set_client_kind("blocking")


@pytest.fixture(params=["py", "c"])
def twins(request: pytest.FixtureRequest) -> Twins:
    """``twins(unit)``: that unit's pure-Python module, then (a second run) its compiled one."""
    kind = request.param
    return lambda dispatcher: twin_module(dispatcher, kind)


@pytest.fixture
def server() -> Iterator[MockServer]:
    with MockServer() as s:
        yield s


@pytest.fixture
def client() -> Iterator[fastnet.Client]:
    with make_client() as c:
        yield c


@pytest.fixture
def fast_client() -> Iterator[fastnet.Client]:
    with make_fast_client() as c:
        yield c


@pytest.fixture
def tls_server() -> Iterator[MockServer]:
    with MockServer(tls=True) as s:
        yield s


@pytest.fixture
def tls_client(tls_server: MockServer) -> Iterator[fastnet.Client]:
    with make_client(verify=tls_server.ca_path) as c:
        yield c
