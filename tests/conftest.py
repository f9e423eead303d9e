"""Shared fixtures: the real-server testbed, both builds' twins of every compiled unit, and servers.

``twins`` (multidict's pattern) gives a test the pure (``py``) and the compiled (``c``) twin of a unit
side by side: ``twins("fastnet.route")`` is ``fastnet.route`` or ``fastnet.route``. The compiled
run is skipped in a pure build and when the extension was not built (an error instead when
``FASTNET_REQUIRE_EXTENSIONS=1``), so a pure build never imports a compiled module. A test that compares
the twins within one run takes them all from ``available_twins(dispatcher)``.

``server`` is a fresh ``MockServer`` per test and ``client`` a client that trusts nothing from the
environment; ``tls_server`` and ``tls_client`` are their HTTPS counterparts (the client trusts the
server's test CA). ``fast_client`` is ``client`` with 5 s connect and read timeouts instead of 10 s, so
a test whose server stops answering fails sooner. ``make_client(**options)`` and
``make_fast_client(**options)`` build those two kinds of client with more options, for a test that
opens its own (``with make_client(proxy=...) as client:``); ``assert_pool_clean(client)`` checks that
no call left a connection in use.

Both clients: a module (or test) marked ``both_clients`` runs each test three times, with
``make_client()`` (and the fixtures built on it) giving a ``fastnet.Client``, then an
``fastnet.AsyncClient`` on the default event loop, then one on uvloop, each behind the blocking facade
of ``async_facade.py`` so one test body checks both engines. ``client_kind`` says which run this is; a
test that only makes sense for one client skips the other with ``blocking_only(client_kind)``.

Layout: the tests mirror the package. ``fastnet/x.py`` is tested in ``tests/test_x.py``,
``fastnet/_internal/...`` under ``tests/_internal/`` (``connection/``, ``http1/``), ``fastnet/dns`` under
``tests/dns/`` and ``fastnet/testing`` under ``tests/testing/``; ``tests/integration/`` holds the tests
that need the testbed's real servers. The helpers stay here in ``tests/`` (conftest, fakes, dnsfaults,
http1_corpus, testbed), which pytest's ``pythonpath`` puts on ``sys.path``: any test imports them as
``from conftest import make_client`` or ``from fakes import FakeDns``. Test directories are not packages,
so every test module's file name must be unique in the tree.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

import pytest
from async_support import run  # noqa: F401  (fixture: a coroutine on asyncio's loop, then on uvloop)
from testbed import testbed  # noqa: F401  (session fixture: nginx, squid, dante, unbound, dnsdist)

import fastnet
from fastnet import _compat
from fastnet.testing import MockServer

Twins = Callable[[str], ModuleType]

#: The clients a ``both_clients`` test runs with.
CLIENT_KINDS = ("blocking", "asyncio", "asyncio+uvloop")
_client_kind = "blocking"  # what make_client() builds, set by the client_kind fixture


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if metafunc.definition.get_closest_marker("both_clients") is not None:
        if "client_kind" not in metafunc.fixturenames:
            metafunc.fixturenames.insert(0, "client_kind")
        metafunc.parametrize("client_kind", CLIENT_KINDS, indirect=True)


@pytest.fixture
def client_kind(request: pytest.FixtureRequest) -> Iterator[str]:
    """Which client ``make_client()`` builds in this test: one of ``CLIENT_KINDS``."""
    global _client_kind
    kind: str = getattr(request, "param", "blocking")
    if kind == "asyncio+uvloop":
        pytest.importorskip("uvloop")
    _client_kind = kind
    try:
        yield kind
    finally:
        _client_kind = "blocking"


def blocking_only(kind: str, why: str = "tests the blocking client only") -> None:
    if kind != "blocking":
        pytest.skip(why)


def _loop_twin_name(unit: str, kind: str) -> str | None:
    """The module name of the ``kind`` twin of a unit that keeps both in the package (the load loop's
    ``_loop_py``/``_loop_c``), or None for an in-place unit."""
    package, _, leaf = unit.rpartition(".")
    name = f"{package}._{leaf}_{kind}"
    return name if importlib.util.find_spec(f"{package}._{leaf}_py") is not None else None


def compiled_twin(unit: str) -> ModuleType | None:
    """The compiled module of ``unit``, or None in a pure build or when it was not built (an error instead
    when ``FASTNET_REQUIRE_EXTENSIONS=1``)."""
    if _compat.NO_EXTENSIONS:
        return None
    name = _loop_twin_name(unit, "c")
    try:
        module = importlib.import_module(name or unit)
    except ImportError:
        if _compat.REQUIRE_EXTENSIONS:
            raise
        return None
    if name is None and not _compat.is_compiled(unit):
        if _compat.REQUIRE_EXTENSIONS:
            raise ImportError(f"{unit} is not compiled")
        return None
    return module


def pure_twin(unit: str) -> ModuleType:
    """The pure-Python module of ``unit``: the module itself in a pure build, else its ``.py`` loaded under
    another name (``_compat.pure_twin``), so that one process holds both builds of a unit."""
    name = _loop_twin_name(unit, "py")
    if name is not None:
        return importlib.import_module(name)
    if _compat.NO_EXTENSIONS or not _compat.is_compiled(unit):
        return importlib.import_module(unit)
    return _compat.pure_twin(unit)


def twin_module(unit: str, kind: str) -> ModuleType:
    """The ``kind`` ("py" or "c") build of ``unit``."""
    if kind == "c":
        if _compat.NO_EXTENSIONS:
            pytest.skip("pure-Python build: no compiled units")
        module = compiled_twin(unit)
        if module is None:
            pytest.skip(f"{unit} is not built")
        return module
    return pure_twin(unit)


def available_twins(unit: str) -> dict[str, ModuleType]:
    """The builds of ``unit`` this process can load, by kind: always "py", and "c" when ``compiled_twin``
    finds it. For a test that holds the two against each other in one run (``twins`` runs a test once per
    build)."""
    twins = {"py": pure_twin(unit)}
    compiled = compiled_twin(unit)
    if compiled is not None:
        twins["c"] = compiled
    return twins


@pytest.fixture(params=["py", "c"])
def twins(request: pytest.FixtureRequest) -> Twins:
    """``twins(unit)``: that unit's pure-Python module, then (a second run) its compiled one."""
    kind = request.param
    return lambda dispatcher: twin_module(dispatcher, kind)


@pytest.fixture
def server() -> Iterator[MockServer]:
    with MockServer() as s:
        yield s


def make_client(**options: Any) -> fastnet.Client:
    """A client that ignores the proxy environment variables (``trust_env=False``), with ``options``;
    in a ``both_clients`` test, an ``AsyncClient`` behind the blocking facade on the asyncio runs."""
    options.setdefault("trust_env", False)
    if _client_kind != "blocking":
        from async_facade import BlockingAsyncClient

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
