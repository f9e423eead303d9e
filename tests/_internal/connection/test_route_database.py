from __future__ import annotations

import threading
import types

import pytest

from fastnet.proxy import Proxy
from fastnet.route import Address, Route
from tests.support.twins import Twins

DIRECT = Proxy.NO_PROXY


@pytest.fixture
def rdb(twins: Twins) -> types.ModuleType:
    """The pure and the compiled twin of the ``route_database`` unit."""
    return twins("fastnet._internal.connection.route_database")


def test_route_database_failed_connected(rdb: types.ModuleType) -> None:
    db = rdb.RouteDatabase()
    route = Route(Address("http", "h", 80), DIRECT, ("10.0.0.1", 80))
    twin = Route(Address("http", "h", 80), DIRECT, ("10.0.0.1", 80))
    assert not db.should_postpone(route)
    db.failed(route)
    assert db.should_postpone(twin) and len(db) == 1
    db.failed(twin)
    assert len(db) == 1
    db.connected(twin)
    assert not db.should_postpone(route) and len(db) == 0
    db.connected(route)  # absent: no error


def test_route_database_is_bounded(rdb: types.ModuleType) -> None:
    db = rdb.RouteDatabase(max_size=3)
    address = Address("http", "h", 80)
    routes = [Route(address, DIRECT, (f"10.0.0.{i}", 80)) for i in range(5)]
    for route in routes[:3]:
        db.failed(route)
    db.failed(routes[0])  # refreshed: now the newest
    db.failed(routes[3])
    db.failed(routes[4])
    assert db.failed_routes() == [routes[0], routes[3], routes[4]]
    with pytest.raises(ValueError):
        rdb.RouteDatabase(max_size=0)


def test_route_database_is_thread_safe(rdb: types.ModuleType) -> None:
    db = rdb.RouteDatabase(max_size=50)
    address = Address("http", "h", 80)
    routes = [Route(address, DIRECT, (f"10.0.{i // 250}.{i % 250}", 80)) for i in range(400)]
    errors: list[BaseException] = []

    def work(offset: int) -> None:
        try:
            for i in range(2000):
                route = routes[(i * 7 + offset) % len(routes)]
                if i % 3:
                    db.failed(route)
                else:
                    db.connected(route)
                db.should_postpone(route)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert not errors
    assert len(db) <= 50
