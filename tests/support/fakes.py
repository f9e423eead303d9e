"""Shared test fakes with honest names (no network mocking: these stand in for policy objects only)."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any

from fastnet.exceptions import UnknownHostError

__all__ = ["FakeDns", "RecordingEventListener", "RecordingProxySelector"]


class FakeDns:
    """A ``Dns`` answering from a dict ``{host: [ip, ...]}`` in the given order; records every lookup.

    An unknown host raises :class:`UnknownHostError`; ``fail[host] = exc`` makes a lookup raise ``exc``.
    """

    def __init__(self, answers: dict[str, Iterable[str]] | None = None) -> None:
        self.answers: dict[str, list[str]] = {k: list(v) for k, v in (answers or {}).items()}
        self.fail: dict[str, BaseException] = {}
        self.lookups: list[str] = []
        self._lock = threading.Lock()

    def __setitem__(self, host: str, ips: Iterable[str]) -> None:
        self.answers[host] = list(ips)

    def lookup(self, host: str) -> list[str]:
        with self._lock:
            self.lookups.append(host)
        if host in self.fail:
            raise self.fail[host]
        if host not in self.answers:
            raise UnknownHostError(f"FakeDns has no answer for {host}")
        return list(self.answers[host])

    def __repr__(self) -> str:
        return "FakeDns"


class RecordingProxySelector:
    """A proxy selector that answers ``proxies`` (or raises ``error``) and records its calls."""

    def __init__(self, proxies: Any = None, *, error: BaseException | None = None) -> None:
        self.proxies = proxies
        self.error = error
        self.requests: list[Any] = []
        self.failures: list[tuple[Any, tuple[str, int], BaseException]] = []

    def select(self, url: Any) -> Any:
        self.requests.append(url)
        if self.error is not None:
            raise self.error
        return list(self.proxies) if isinstance(self.proxies, list) else self.proxies

    def connect_failed(self, url: Any, address: tuple[str, int], error: BaseException) -> None:
        self.failures.append((url, address, error))

    def __repr__(self) -> str:
        return "RecordingProxySelector"


class RecordingEventListener:
    """Records every event method called on it as ``(name, args)``; any method name is accepted."""

    def __init__(self) -> None:
        self.events: list[tuple[str, tuple[Any, ...]]] = []

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)

        def record(*args: Any, **kwargs: Any) -> None:
            self.events.append((name, args + tuple(kwargs.values())))

        return record

    def names(self) -> list[str]:
        return [name for name, _ in self.events]


def _recording_listener_class() -> type:
    from fastnet.events import EventListener

    def make(name: str) -> Any:
        def method(self: Any, *args: Any) -> None:
            self.events.append((name, args))

        method.__name__ = name
        return method

    names = [n for n in vars(EventListener) if not n.startswith("_")]
    namespace: dict[str, Any] = {name: make(name) for name in names}

    def __init__(self: Any) -> None:  # noqa: N807
        self.events = []

    def event_names(self: Any) -> list[str]:
        return [name for name, _ in self.events]

    namespace["__init__"] = __init__
    namespace["names"] = event_names
    namespace["__doc__"] = (
        "A real ``fastnet.EventListener`` (accepted by ``Client(event_listener=...)``) recording every event "
        "as ``(name, args)``; ``names()`` lists the event names in order."
    )
    return type("RecordingListener", (EventListener,), namespace)


#: An ``EventListener`` subclass that records ``(name, args)`` for every event; see ``names()``.
RecordingListener: Any = _recording_listener_class()
__all__.append("RecordingListener")
