"""The test CA helpers behind ``MockServer(tls=True)`` (``fastnet/testing/_tls.py``): a throw-away CA, a
server context whose leaf certificate covers ``LEAF_IDENTITIES`` and offers ALPN ``http/1.1``, a client
context that trusts that CA only, and the CA written as a PEM file. Real TLS handshakes on loopback."""

from __future__ import annotations

import os
import socket
import ssl
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from fastnet.testing._tls import LEAF_IDENTITIES, client_context, new_ca, server_context, write_ca_pem

pytest.importorskip("trustme")


@pytest.fixture(scope="module")
def ca() -> Any:
    return new_ca()


@pytest.fixture
def tls_listener(ca: Any) -> Iterator[tuple[int, list[str]]]:
    """A one-connection TLS server on loopback with ``server_context(ca)``; yields its port and the
    errors its side of the handshake saw."""
    context = server_context(ca)
    errors: list[str] = []
    with socket.create_server(("127.0.0.1", 0)) as listener:
        listener.settimeout(10)

        def serve() -> None:
            try:
                raw, _ = listener.accept()
            except OSError:
                return
            raw.settimeout(10)
            try:
                with context.wrap_socket(raw, server_side=True) as tls:
                    tls.sendall((tls.selected_alpn_protocol() or "-").encode())
            except (OSError, ssl.SSLError) as exc:
                errors.append(type(exc).__name__)

        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        yield listener.getsockname()[1], errors
        thread.join(10)


def _handshake(context: ssl.SSLContext, port: int, server_hostname: str) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        context.set_alpn_protocols(["http/1.1"])
        with context.wrap_socket(raw, server_hostname=server_hostname) as tls:
            return tls.recv(16)


@pytest.mark.parametrize("name", ["localhost", "127.0.0.1", "app.test", "any.example.test"])
def test_tls_the_client_context_trusts_the_servers_leaf(ca: Any, tls_listener: Any, name: str) -> None:
    port, errors = tls_listener
    assert _handshake(client_context(ca), port, name) == b"http/1.1"
    assert errors == []


def test_tls_a_name_the_leaf_does_not_cover_is_refused(ca: Any, tls_listener: Any) -> None:
    port, _ = tls_listener
    assert "other.invalid" not in LEAF_IDENTITIES
    with pytest.raises(ssl.SSLCertVerificationError, match="match"):
        _handshake(client_context(ca), port, "other.invalid")


def test_tls_another_ca_is_not_trusted(tls_listener: Any) -> None:
    port, _ = tls_listener
    with pytest.raises(ssl.SSLCertVerificationError):
        _handshake(client_context(new_ca()), port, "localhost")


def test_tls_the_client_context_verifies(ca: Any) -> None:
    context = client_context(ca)
    assert context.check_hostname and context.verify_mode == ssl.CERT_REQUIRED
    assert len(context.get_ca_certs()) == 1  # that CA only: nothing publicly trusted


def test_tls_server_context_for_other_identities(ca: Any) -> None:
    context = server_context(ca, ["only.test"])
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]

        def serve() -> None:
            raw, _ = listener.accept()
            try:
                with context.wrap_socket(raw, server_side=True) as tls:
                    tls.sendall(b"ok")
            except (OSError, ssl.SSLError):
                pass

        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        assert _handshake(client_context(ca), port, "only.test") == b"ok"
        thread.join(10)


def test_tls_write_ca_pem_is_a_file_a_client_can_trust(ca: Any, tls_listener: Any) -> None:
    port, _ = tls_listener
    path = write_ca_pem(ca)
    try:
        with open(path, "rb") as f:
            assert f.read() == ca.cert_pem.bytes()
        context = ssl.create_default_context(cafile=path)
        assert _handshake(context, port, "localhost") == b"http/1.1"
    finally:
        os.unlink(path)
