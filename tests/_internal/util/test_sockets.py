"""``fastnet._internal.util.sockets``: ``close_quietly`` closes real sockets whatever state they
are in, and ``hostport`` names an endpoint (IPv6 literals in brackets)."""

from __future__ import annotations

import socket

import pytest

from fastnet._internal.util.sockets import close_quietly, hostport


def test_sockets_close_quietly_closes_a_connected_socket() -> None:
    with socket.create_server(("127.0.0.1", 0)) as listener:
        client = socket.create_connection(listener.getsockname())
        peer, _ = listener.accept()
        with peer:
            close_quietly(client)
            assert client.fileno() == -1
            assert peer.recv(1) == b""  # the peer sees the end of the stream


def test_sockets_close_quietly_twice_and_after_a_reset_is_harmless() -> None:
    with socket.create_server(("127.0.0.1", 0)) as listener:
        client = socket.create_connection(listener.getsockname())
        peer, _ = listener.accept()
        peer.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        peer.close()  # RST
        close_quietly(client)
        close_quietly(client)
        assert client.fileno() == -1


def test_sockets_close_quietly_swallows_only_os_errors() -> None:
    class Failing:
        def __init__(self, error: BaseException) -> None:
            self.error = error

        def close(self) -> None:
            raise self.error

    close_quietly(Failing(OSError("already gone")))
    close_quietly(Failing(ConnectionResetError()))
    with pytest.raises(ValueError):
        close_quietly(Failing(ValueError("a bug must not be hidden")))


@pytest.mark.parametrize(
    "host, port, text",
    [
        ("127.0.0.1", 80, "127.0.0.1:80"),
        ("example.test", 8443, "example.test:8443"),
        ("::1", 443, "[::1]:443"),
        ("fe80::1%eth0", 8080, "[fe80::1%eth0]:8080"),
    ],
)
def test_sockets_hostport(host: str, port: int, text: str) -> None:
    assert hostport(host, port) == text
