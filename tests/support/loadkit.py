"""Helpers shared by the load generator's tests: groups, driving an engine to its end, free ports.

A test imports it as ``from tests.support.loadkit import ...``.
"""

from __future__ import annotations

import socket
import time
from types import ModuleType, SimpleNamespace
from typing import Any

from fastnet.load._hist import Histograms

__all__ = ["drive", "group", "refused_port", "request_bytes"]


def request_bytes(port: int, path: str = "/", method: str = "GET", extra: str = "") -> bytes:
    return f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{extra}\r\n".encode()


def group(port: int, *paths: str, method: str = "GET", extra: str = "", address: bool = True) -> Any:
    """A group of requests to 127.0.0.1:``port`` (``paths`` default to ``/``)."""
    return SimpleNamespace(
        requests=[request_bytes(port, p, method, extra) for p in (paths or ("/",))],
        address=(socket.AF_INET, "127.0.0.1", port) if address else None,
        label=f"127.0.0.1:{port}",
    )


def drive(
    module: ModuleType, groups: list[Any], connections: list[int], **options: Any
) -> tuple[Any, Histograms]:
    """Run an ``Engine`` of ``module`` to its end (at most 20 s), close it, return it and its histograms."""
    histograms = Histograms.new()
    settings: dict[str, Any] = {"total": -1, "duration": 0.0, "rate": 0.0, "timeout": 5.0, "head": False}
    settings.update(options)
    engine = module.Engine(groups, connections, recorders=histograms, **settings)
    limit = time.monotonic() + 20
    try:
        while not engine.run(time.monotonic_ns() + 100_000_000):
            assert time.monotonic() < limit, "the engine did not finish in 20 s"
    finally:
        engine.close()
    return engine, histograms


def refused_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
