"""``HoldingServer``: MockServers whose answers wait until the test releases them, request by request.

Each request's path names it (``/a``, ``/b``...). When a request arrives the server records
``(host, path)`` in ``arrived`` and holds the answer until ``release(path)`` (or ``release_all()``);
then it answers ``200`` with the path as the body. So a test sees exactly which requests reached the
network, in what order, and decides when each one may finish. ``hosts`` starts one MockServer per
loopback address (``127.0.0.1``, ``127.0.0.2``, ``127.0.0.3`` are all loopback on Linux), for tests of
per-host limits; ``url(path, host)`` picks one.

The servers are real sockets on loopback (MockServer's ``dispatcher`` hook runs on the connection's own
thread, so holding one answer blocks nothing else). Every wait is bounded; leaving the ``with`` block
releases whatever is still held and shuts the servers down.

>>> with HoldingServer() as held:                               # doctest: +SKIP
...     future = client.new_call(fastnet.Request("GET", held.url("/a"))).enqueue()
...     held.wait_for(1)
...     held.release("/a")
...     future.result().content
b'/a'
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence

from fastnet.testing import MockResponse, MockServer, RecordedRequest

__all__ = ["HoldingServer"]

_HOLD_SECONDS = 30.0  # the longest any answer is held, so a failing test cannot hang a server thread


class HoldingServer:
    """One MockServer per host in ``hosts``, holding each answer until the test releases its path."""

    def __init__(self, hosts: Sequence[str] = ("127.0.0.1",)) -> None:
        self.servers = {host: MockServer(host=host) for host in hosts}
        self.arrived: list[tuple[str, str]] = []
        self.held = 0  # answers held right now
        self.max_held = 0  # the most answers ever held at once
        self._cond = threading.Condition()
        self._gates: dict[str, threading.Event] = {}
        self._open = False
        for host, server in self.servers.items():
            server.dispatcher = self._answerer(host)

    def _gate(self, path: str) -> threading.Event:
        gate = self._gates.get(path)
        if gate is None:
            gate = self._gates[path] = threading.Event()
            if self._open:
                gate.set()
        return gate

    def _answerer(self, host: str) -> Callable[[RecordedRequest], MockResponse]:
        def answer(request: RecordedRequest) -> MockResponse:
            path = request.path
            with self._cond:
                self.arrived.append((host, path))
                gate = self._gate(path)
                self.held += 1
                self.max_held = max(self.max_held, self.held)
                self._cond.notify_all()
            try:
                gate.wait(_HOLD_SECONDS)
            finally:
                with self._cond:
                    self.held -= 1
                    self._cond.notify_all()
            return MockResponse(200, body=path.encode())

        return answer

    def __enter__(self) -> HoldingServer:
        for server in self.servers.values():
            server.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release_all()
        for server in self.servers.values():
            server.shutdown()

    def url(self, path: str, host: str | None = None) -> str:
        server = self.servers[host] if host is not None else next(iter(self.servers.values()))
        return server.url(path)

    @property
    def paths(self) -> list[str]:
        """The paths of the requests that arrived, in order of arrival."""
        with self._cond:
            return [path for _, path in self.arrived]

    def release(self, *paths: str) -> None:
        """Let the answers to ``paths`` go (now, or as soon as they arrive)."""
        with self._cond:
            for path in paths:
                self._gate(path).set()

    def release_all(self) -> None:
        """Let every answer go, those held now and those to come."""
        with self._cond:
            self._open = True
            for gate in self._gates.values():
                gate.set()

    def wait_for(self, count: int, timeout: float = 10.0) -> list[str]:
        """Wait until ``count`` requests have arrived (an AssertionError after ``timeout``); their paths."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while len(self.arrived) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"{len(self.arrived)} requests arrived, not {count}: {self.arrived}")
                self._cond.wait(left)
            return [path for _, path in self.arrived]

    def wait_idle(self, timeout: float = 10.0) -> None:
        """Wait until no answer is held (an AssertionError after ``timeout``)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self.held:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"{self.held} answers still held")
                self._cond.wait(left)

    def settle(self, seconds: float = 0.3) -> list[str]:
        """The arrived paths after ``seconds`` without waiting for more: for "nothing else arrives"."""
        time.sleep(seconds)
        return self.paths
