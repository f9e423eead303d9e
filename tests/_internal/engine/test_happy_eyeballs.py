from __future__ import annotations

import socket
import struct
import time
from collections.abc import Iterator
from typing import Any

import pytest

from fastnet._internal._sync.happy_eyeballs import connect_tcp
from fastnet._internal.connection.route_database import RouteDatabase
from fastnet._internal.connection.route_selector import RouteSelector
from fastnet.exceptions import CanceledError, ConnectError, ConnectTimeout
from fastnet.proxy import Proxy
from fastnet.route import Address, Route

ADDRESS = Address("http", "example.test", 80)


def has_ipv6() -> bool:
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


needs_ipv6 = pytest.mark.skipif(not has_ipv6(), reason="no IPv6 loopback")


def route(target: tuple[str, int]) -> Route:
    return Route(ADDRESS, Proxy.NO_PROXY, target)


@pytest.fixture
def listener() -> Iterator[Any]:
    """A factory of listening sockets (the kernel completes connects; nobody needs to accept)."""
    socks: list[socket.socket] = []

    def make(host: str = "127.0.0.1") -> tuple[str, int]:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        srv = socket.socket(family, socket.SOCK_STREAM)
        socks.append(srv)
        srv.bind((host, 0))
        srv.listen(16)
        return srv.getsockname()[:2]  # type: ignore[no-any-return]

    yield make
    for s in socks:
        s.close()


@pytest.fixture
def blackhole() -> Iterator[Any]:
    """A factory of addresses whose connects hang: backlog 0 and a full queue (the first connect fills
    the queue; later SYNs are dropped)."""
    socks: list[socket.socket] = []

    def make(host: str = "127.0.0.1") -> tuple[str, int]:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        srv = socket.socket(family, socket.SOCK_STREAM)
        socks.append(srv)
        srv.bind((host, 0))
        srv.listen(0)
        address = srv.getsockname()[:2]
        socks.append(socket.create_connection(address, timeout=2))
        # a second connection may still fit into the queue on some kernels: fill it too, bounded
        for _ in range(3):
            probe = socket.socket(family, socket.SOCK_STREAM)
            probe.settimeout(0.2)
            try:
                probe.connect(address)
            except (TimeoutError, OSError):
                probe.close()
                break
            socks.append(probe)
        return address  # type: ignore[no-any-return]

    yield make
    for s in socks:
        s.close()


@pytest.fixture
def refused() -> tuple[str, int]:
    """A loopback port nobody listens on (bound, then closed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()  # type: ignore[no-any-return]


class Recorder:
    """``target_of`` that records the order attempts were launched in; ``on_failure`` likewise."""

    def __init__(self) -> None:
        self.launched: list[tuple[str, int]] = []
        self.failed: list[tuple[Any, BaseException]] = []

    def target_of(self, r: Route) -> tuple[str, int]:
        self.launched.append(r.socket_address)
        return r.socket_address

    def on_failure(self, r: Route, error: BaseException) -> None:
        self.failed.append((r, error))


def test_happy_eyeballs_single_route_connects(listener: Any) -> None:
    good = route(listener())
    sock, winner, failures = connect_tcp([good], connect_timeout=5)
    with sock:
        assert winner is good and failures == []
        assert sock.getpeername()[:2] == good.socket_address
        assert sock.gettimeout() is None  # blocking
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0


def _send_timeout(sock: socket.socket) -> float:
    seconds, micros = struct.unpack("ll", sock.getsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, 16))
    return float(seconds + micros / 1e6)


def test_happy_eyeballs_leaves_the_connect_timeout_as_send_timeout(
    listener: Any, refused: tuple[str, int]
) -> None:
    """Both ways of connecting hand back a socket whose SO_SNDTIMEO is the connect timeout (the
    exchange finder relies on it to skip setting an equal write timeout again), and none without one."""
    port = listener()
    for routes in ([route(port)], [route(refused), route(port)]):
        sock, _winner, _failures = connect_tcp(routes, connect_timeout=2.5)
        with sock:
            assert _send_timeout(sock) == 2.5
    sock, _winner, _failures = connect_tcp([route(refused), route(port)], connect_timeout=None)
    with sock:
        assert _send_timeout(sock) == 0.0


def test_happy_eyeballs_refused_then_next_route(listener: Any, refused: tuple[str, int]) -> None:
    rec = Recorder()
    bad, good = route(refused), route(listener())
    sock, winner, failures = connect_tcp(
        [bad, good], connect_timeout=5, attempt_delay=30, target_of=rec.target_of, on_failure=rec.on_failure
    )
    sock.close()
    # the failure left nothing in flight, so the next attempt started at once despite a 30 s delay
    assert winner is good
    assert rec.launched == [bad.socket_address, good.socket_address]
    assert [(r, type(e)) for r, e in failures] == [(bad, ConnectionRefusedError)]
    assert rec.failed == failures


def test_happy_eyeballs_all_refused(refused: tuple[str, int]) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.2", 0))
        other = s.getsockname()
    routes = [route(refused), route(other)]
    with pytest.raises(ConnectError) as info:
        connect_tcp(routes, connect_timeout=5)
    error = info.value
    assert not isinstance(error, ConnectTimeout)
    assert [r for r, _ in error.attempts] == routes
    assert all(isinstance(e, ConnectionRefusedError) for _, e in error.attempts)
    text = str(error)
    assert str(routes[0]) in text and str(routes[1]) in text
    assert error.phase == "connect"


def test_happy_eyeballs_single_refused_message(refused: tuple[str, int]) -> None:
    r = route(refused)
    with pytest.raises(ConnectError, match=f"Failed to connect to {r}") as info:
        connect_tcp([r], connect_timeout=5)
    assert info.value.attempts[0][0] is r
    assert isinstance(info.value.__cause__, ConnectionRefusedError)


def test_happy_eyeballs_blackhole_loses_race(listener: Any, blackhole: Any) -> None:
    rec = Recorder()
    slow, good = route(blackhole()), route(listener())
    sock, winner, failures = connect_tcp(
        [slow, good],
        connect_timeout=10,
        attempt_delay=0.05,
        target_of=rec.target_of,
        on_failure=rec.on_failure,
    )
    sock.close()
    assert winner is good
    assert rec.launched == [slow.socket_address, good.socket_address]
    assert failures == [] and rec.failed == []  # the loser was closed, not failed


def test_happy_eyeballs_launches_in_order_every_delay(listener: Any, blackhole: Any) -> None:
    rec = Recorder()
    holes = [route(blackhole()) for _ in range(3)]
    good = route(listener())
    started = time.monotonic()
    sock, winner, failures = connect_tcp(
        [*holes, good], connect_timeout=10, attempt_delay=0.05, target_of=rec.target_of
    )
    sock.close()
    assert winner is good and failures == []
    assert rec.launched == [r.socket_address for r in [*holes, good]]
    # attempts are staggered: the good route cannot have started before three delays passed
    assert time.monotonic() - started >= 0.15


def test_happy_eyeballs_sequential_waits_for_each_attempt(listener: Any, blackhole: Any) -> None:
    rec = Recorder()
    slow, good = route(blackhole()), route(listener())
    sock, winner, failures = connect_tcp(
        [slow, good], connect_timeout=0.3, happy_eyeballs=False, attempt_delay=0.01, target_of=rec.target_of
    )
    sock.close()
    assert winner is good
    assert rec.launched == [slow.socket_address, good.socket_address]
    assert len(failures) == 1 and failures[0][0] is slow
    assert isinstance(failures[0][1], ConnectTimeout)


def test_happy_eyeballs_sequential_first_success_stops(listener: Any) -> None:
    rec = Recorder()
    first, second = route(listener()), route(listener())
    sock, winner, _ = connect_tcp(
        [first, second], connect_timeout=5, happy_eyeballs=False, target_of=rec.target_of
    )
    sock.close()
    assert winner is first and rec.launched == [first.socket_address]


def test_happy_eyeballs_every_attempt_timing_out_is_a_connect_timeout(blackhole: Any) -> None:
    routes = [route(blackhole()), route(blackhole())]
    with pytest.raises(ConnectTimeout) as info:
        connect_tcp(routes, connect_timeout=0.3, attempt_delay=0.05)
    attempts = info.value.attempts  # type: ignore[attr-defined]
    assert [r for r, _ in attempts] == routes
    assert all(isinstance(e, ConnectTimeout) for _, e in attempts)
    assert str(routes[1]) in str(info.value)


def test_happy_eyeballs_each_attempt_gets_the_full_timeout(blackhole: Any, listener: Any) -> None:
    # the second attempt starts 0.2 s after the first and must not be cut off when the first times out
    routes = [route(blackhole()), route(blackhole())]
    started = time.monotonic()
    with pytest.raises(ConnectTimeout):
        connect_tcp(routes, connect_timeout=0.3, attempt_delay=0.2)
    assert time.monotonic() - started >= 0.5


def test_happy_eyeballs_mixed_failures_are_a_connect_error(blackhole: Any, refused: tuple[str, int]) -> None:
    routes = [route(refused), route(blackhole())]
    with pytest.raises(ConnectError) as info:
        connect_tcp(routes, connect_timeout=0.3)
    assert not isinstance(info.value, ConnectTimeout)
    assert [type(e) for _, e in info.value.attempts] == [ConnectionRefusedError, ConnectTimeout]


def test_happy_eyeballs_cancel(blackhole: Any) -> None:
    calls = []

    def canceled() -> bool:
        calls.append(time.monotonic())
        return len(calls) > 3

    started = time.monotonic()
    with pytest.raises(CanceledError):
        connect_tcp([route(blackhole())], connect_timeout=30, is_canceled=canceled)
    assert len(calls) == 4
    # polled at least every 50 ms, so cancellation did not wait for the 30 s connect timeout
    assert time.monotonic() - started < 10


def test_happy_eyeballs_canceled_before_start(listener: Any) -> None:
    with pytest.raises(CanceledError):
        connect_tcp([route(listener())], connect_timeout=5, is_canceled=lambda: True)


def test_happy_eyeballs_no_routes() -> None:
    with pytest.raises(ConnectError):
        connect_tcp([], connect_timeout=1)


def test_happy_eyeballs_no_timeout(listener: Any) -> None:
    for timeout in (None, 0):
        sock, _, _ = connect_tcp([route(listener())], connect_timeout=timeout)
        sock.close()


def test_happy_eyeballs_target_of_maps_any_object(listener: Any) -> None:
    target = listener()
    names = {"proxy": target}
    sock, winner, _ = connect_tcp(["proxy"], connect_timeout=5, target_of=names.__getitem__)
    sock.close()
    assert winner == "proxy"


def test_happy_eyeballs_target_of_may_name_a_host(listener: Any) -> None:
    port = listener()[1]
    sock, _, _ = connect_tcp(["p"], connect_timeout=5, target_of=lambda _: ("localhost", port))
    with sock:
        assert sock.getpeername()[1] == port


@needs_ipv6
def test_happy_eyeballs_ipv6_first_when_listed_first(listener: Any) -> None:
    v6, v4 = route(listener("::1")), route(listener("127.0.0.1"))
    sock, winner, _ = connect_tcp([v6, v4], connect_timeout=5)
    with sock:
        assert winner is v6 and sock.family == socket.AF_INET6


@needs_ipv6
def test_happy_eyeballs_ipv6_blackhole_falls_back_to_ipv4(listener: Any, blackhole: Any) -> None:
    rec = Recorder()
    v6, v4 = route(blackhole("::1")), route(listener("127.0.0.1"))
    sock, winner, failures = connect_tcp(
        [v6, v4], connect_timeout=10, attempt_delay=0.05, target_of=rec.target_of
    )
    with sock:
        assert winner is v4 and sock.family == socket.AF_INET
    assert rec.launched == [v6.socket_address, v4.socket_address] and failures == []


@needs_ipv6
def test_happy_eyeballs_with_route_selector_order(listener: Any, blackhole: Any) -> None:
    v4_hole = blackhole("127.0.0.1")
    v6_good = listener("::1")
    v4_good = listener("127.0.0.1")
    port_map = {"127.0.0.1": v4_hole[1], "::1": v6_good[1], "127.0.0.2": v4_good[1]}
    address = Address("http", "dual.test", 80)
    selector = RouteSelector(address, RouteDatabase(), dns=lambda h: ["127.0.0.1", "127.0.0.2", "::1"])
    routes = next(selector)
    assert [r.socket_address[0] for r in routes] == ["127.0.0.1", "::1", "127.0.0.2"]
    rec: list[str] = []

    def target_of(r: Route) -> tuple[str, int]:
        rec.append(r.socket_address[0])
        host = r.socket_address[0]
        return ("127.0.0.1" if host == "127.0.0.2" else host, port_map[host])

    sock, winner, _ = connect_tcp(routes, connect_timeout=10, attempt_delay=0.05, target_of=target_of)
    sock.close()
    assert winner.socket_address[0] == "::1"
    assert rec == ["127.0.0.1", "::1"]
