"""``set_kernel_timeout``: both twins set the same ``struct timeval`` and fail the same way."""

from __future__ import annotations

import errno
import socket
import struct
import types

import pytest

from tests.support.twins import Twins


@pytest.fixture
def kt(twins: Twins) -> types.ModuleType:
    return twins("fastnet._internal.util.kernel_timeout")


def _read(sock: socket.socket, optname: int) -> tuple[int, int]:
    return struct.unpack("ll", sock.getsockopt(socket.SOL_SOCKET, optname, 16))


@pytest.mark.parametrize(
    ("seconds", "expected"),
    [
        (10.0, (10, 0)),
        (2.5, (2, 500000)),
        (0.25, (0, 250000)),
        (1e-9, (0, 1)),  # a positive timeout never becomes "none"
        (0.0, (0, 0)),
        (-1.0, (0, 0)),
    ],
)
@pytest.mark.parametrize("optname", [socket.SO_RCVTIMEO, socket.SO_SNDTIMEO])
def test_kernel_timeout_sets_the_timeval(
    kt: types.ModuleType, optname: int, seconds: float, expected: tuple[int, int]
) -> None:
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, optname, struct.pack("ll", 7, 7))  # something to overwrite
        kt.set_kernel_timeout(sock, optname, seconds)
        sec, usec = _read(sock, optname)
        # the kernel rounds to its clock tick; the whole seconds and the "none" case are exact
        assert sec == expected[0]
        assert (usec == 0) == (expected[1] == 0)
        assert abs(usec - expected[1]) < 10_000


def test_kernel_timeout_on_a_closed_socket_is_ebadf(kt: types.ModuleType) -> None:
    sock = socket.socket()
    sock.close()
    with pytest.raises(OSError) as info:
        kt.set_kernel_timeout(sock, socket.SO_RCVTIMEO, 1.0)
    assert info.value.errno == errno.EBADF


def test_kernel_timeout_bad_option_is_an_oserror(kt: types.ModuleType) -> None:
    with socket.socket() as sock, pytest.raises(OSError) as info:
        kt.set_kernel_timeout(sock, 9999, 1.0)
    assert info.value.errno in (errno.ENOPROTOOPT, errno.EINVAL)
