"""Test certificate authority helpers for :class:`~fastnet.testing.MockServer`.

Everything here wraps ``trustme``, which is imported lazily (only when TLS is asked for) because it is
an optional dependency: install the ``testing`` extra (``pip install 'fastnet-http[testing]'``;
from a checkout: ``pip install -e '.[testing]'``) to get it.

    >>> from fastnet.testing._tls import new_ca, server_context, client_context
    >>> ca = new_ca()
    >>> server_ctx = server_context(ca)   # leaf certificate for LEAF_IDENTITIES
    >>> client_ctx = client_context(ca)   # trusts only ``ca``
"""

from __future__ import annotations

import os
import ssl
import tempfile
from collections.abc import Iterable
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import trustme

__all__ = ["LEAF_IDENTITIES", "client_context", "new_ca", "server_context", "write_ca_pem"]

#: Names and addresses the generated leaf certificate is valid for. OpenSSL (so Python's ``ssl``) refuses
#: a wildcard directly under a top-level label, so ``*.test`` only helps lenient verifiers: the ``.test``
#: names of the test suite's loopback testbed are listed one by one, and ``*.example.test`` covers any
#: other name.
LEAF_IDENTITIES: tuple[str, ...] = (
    "localhost",
    "127.0.0.1",
    "127.0.0.2",
    "127.0.0.3",
    "::1",
    "*.test",
    "*.example.test",
    "example.test",
    "origin.test",
    "proxy.test",
    "app.test",
    "multi.test",
    "v6.test",
    "dual.test",
    "failover.test",
    "blackhole.test",
    "alias.test",
    "ttl1.test",
    "doh.test",
)


def _trustme() -> ModuleType:
    try:
        import trustme
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "MockServer(tls=True) needs the 'trustme' package: "
            "pip install 'fastnet-http[testing]' (from a checkout: pip install -e '.[testing]')"
        ) from exc
    return trustme


def new_ca() -> trustme.CA:
    """Return a fresh throw-away certificate authority."""
    ca: trustme.CA = _trustme().CA()
    return ca


def server_context(ca: trustme.CA, identities: Iterable[str] = LEAF_IDENTITIES) -> ssl.SSLContext:
    """A server-side context presenting a leaf certificate issued by ``ca`` for ``identities``.

    ALPN offers ``http/1.1`` so clients that negotiate ALPN see the protocol they speak.
    """
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    leaf = ca.issue_cert(*identities)
    leaf.configure_cert(ctx)
    ctx.set_alpn_protocols(["http/1.1"])
    return ctx


def client_context(ca: trustme.CA) -> ssl.SSLContext:
    """A client-side context that trusts ``ca`` only, with hostname verification on."""
    # An empty store rather than create_default_context(): a test must not pass by accident against a
    # publicly trusted certificate.
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = True
    ctx.verify_mode = ssl.CERT_REQUIRED
    ca.configure_trust(ctx)
    return ctx


def write_ca_pem(ca: trustme.CA) -> str:
    """Write the CA certificate as PEM to a new temporary file and return its path (caller deletes it)."""
    fd, path = tempfile.mkstemp(prefix="fastnet-mockserver-ca-", suffix=".pem")
    try:
        os.write(fd, ca.cert_pem.bytes())
    finally:
        os.close(fd)
    return path
