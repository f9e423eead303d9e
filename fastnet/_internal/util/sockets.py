"""The socket helpers the connect path shares, blocking and asyncio: closing without raising, naming an
endpoint, a TCP socket bound to the client's local address, and the errors of failed connects."""

from __future__ import annotations

import os
import socket
from typing import TYPE_CHECKING, Protocol

from fastnet.exceptions import ConnectError, ConnectTimeout

if TYPE_CHECKING:
    from collections.abc import Sequence

    class Closable(Protocol):
        def close(self) -> None: ...


__all__ = ["all_failed", "close_quietly", "connect_error", "hostport", "new_socket"]

_AF_INET6 = int(socket.AF_INET6)
_SOCK_STREAM = int(socket.SOCK_STREAM)


def close_quietly(sock: Closable) -> None:
    """Close ``sock``, ignoring the errors a half-open or already closed socket raises."""
    try:
        sock.close()
    except OSError:
        pass


def hostport(host: str, port: int) -> str:
    """``host:port``, with an IPv6 literal in brackets: ``[::1]:443``."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def new_socket(family: int, local_address: str | None) -> socket.socket:
    """A TCP socket of ``family``, bound to ``local_address`` (any port) when one is given; an address of
    the other family is an ``OSError`` that says so, which fails that route like a refused connect."""
    sock = socket.socket(family, _SOCK_STREAM)
    if local_address is not None:
        try:
            if (":" in local_address) != (family == _AF_INET6):
                version = 6 if family == _AF_INET6 else 4
                raise OSError(f"local address {local_address} cannot connect to an IPv{version} address")
            sock.bind((local_address, 0))
        except BaseException:
            sock.close()
            raise
    return sock


def connect_error(code: int) -> OSError:
    """The ``OSError`` (``ConnectionRefusedError`` for ECONNREFUSED, ...) for a connect's errno."""
    try:
        reason = os.strerror(code)
    except ValueError:  # pragma: no cover
        reason = f"error {code}"
    return OSError(code, reason)


def all_failed(failures: Sequence[tuple[object, BaseException]]) -> ConnectError | ConnectTimeout:
    """The error of a connect race whose every attempt failed: ``ConnectTimeout`` when each timed out,
    else ``ConnectError``; both carry ``attempts`` = [(route, error)]."""
    first_route, first_error = failures[0]
    if len(failures) == 1:
        message = f"Failed to connect to {first_route}: {first_error}"
    else:
        message = f"Failed to connect: all {len(failures)} routes failed"
    if all(isinstance(error, (ConnectTimeout, TimeoutError)) for _, error in failures):
        if len(failures) > 1:
            message += " [tried " + "; ".join(f"{route}: {error}" for route, error in failures) + "]"
        timeout_error = ConnectTimeout(message, phase="connect")
        timeout_error.attempts = list(failures)  # type: ignore[attr-defined]
        timeout_error.__cause__ = first_error
        return timeout_error
    # the routes are the caller's (``Route`` in the engine; connect_tcp is generic in them)
    error = ConnectError(message, phase="connect", attempts=failures)  # type: ignore[arg-type]
    error.__cause__ = first_error
    return error
