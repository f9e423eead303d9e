"""Two socket helpers the connect path shares: closing without raising, and naming an endpoint."""

from __future__ import annotations

from typing import Any

__all__ = ["close_quietly", "hostport"]


def close_quietly(sock: Any) -> None:
    """Close ``sock``, ignoring the errors a half-open or already closed socket raises."""
    try:
        sock.close()
    except OSError:
        pass


def hostport(host: str, port: int) -> str:
    """``host:port``, with an IPv6 literal in brackets: ``[::1]:443``."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
