"""``Timeout``: the four timeouts of a call as one value, for ``timeout=`` on a client or a request.

``Timeout(5)`` is 5 s to connect, 5 s for each read and 5 s for each write, as httpx reads it; the
keywords set one phase (``Timeout(5, connect=2)``, ``Timeout(read=60)``) and ``call`` bounds the whole
call, body included (OkHttp's ``callTimeout``). A phase left out keeps what the client has: for
``Client(timeout=...)`` its defaults (10 s each, no call timeout), for a request the client's settings.
``None`` means no timeout for that phase.

A plain number is ``Timeout(number)``, a ``(connect, read)`` pair is requests' form, and ``None`` for a
request means no timeout at all, the call timeout included. ``USE_CLIENT_DEFAULT`` (the default of every
request's ``timeout=``) keeps the client's four.

>>> Timeout(5)
Timeout(connect=5, read=5, write=5)
>>> Timeout(10, call=60).call
60
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final, TypeAlias

from fastnet._internal.util.timeouts import timeout_seconds

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["USE_CLIENT_DEFAULT", "Timeout", "TimeoutTypes", "UseClientDefault", "as_timeout"]


class UseClientDefault:
    """The type of ``USE_CLIENT_DEFAULT``: "this request takes the client's setting"."""

    __slots__ = ()
    _instance: UseClientDefault | None = None

    def __new__(cls) -> UseClientDefault:
        if cls._instance is None:
            cls._instance = object.__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "USE_CLIENT_DEFAULT"

    def __reduce__(self) -> str:
        return "USE_CLIENT_DEFAULT"

    def __bool__(self) -> bool:
        return False


#: The default of a request's ``timeout=``: the client's timeouts apply.
USE_CLIENT_DEFAULT: Final = UseClientDefault()

_UNSET: Final = USE_CLIENT_DEFAULT
_PHASES = ("connect", "read", "write", "call")
#: One phase's value: seconds, ``None`` (no timeout) or ``USE_CLIENT_DEFAULT``.
_Phase: TypeAlias = "float | None | UseClientDefault"


class Timeout:
    """Connect, read, write and whole-call timeouts in seconds (``None``: no timeout; a phase not given:
    the client's). Immutable and hashable.

    >>> fastnet.Client(timeout=fastnet.Timeout(5, read=30))
    >>> client.get(url, timeout=fastnet.Timeout(call=2))     # this request: the whole call in 2 s
    """

    __slots__ = ("connect", "read", "write", "call")
    connect: float | None | UseClientDefault
    read: float | None | UseClientDefault
    write: float | None | UseClientDefault
    call: float | None | UseClientDefault

    def __init__(
        self,
        timeout: float | None | UseClientDefault = USE_CLIENT_DEFAULT,
        *,
        connect: float | None | UseClientDefault = USE_CLIENT_DEFAULT,
        read: float | None | UseClientDefault = USE_CLIENT_DEFAULT,
        write: float | None | UseClientDefault = USE_CLIENT_DEFAULT,
        call: float | None | UseClientDefault = USE_CLIENT_DEFAULT,
    ) -> None:
        if isinstance(timeout, Timeout):
            raise TypeError("Timeout(Timeout(...)): pass the Timeout itself")
        values = {"connect": connect, "read": read, "write": write, "call": call}
        for name in ("connect", "read", "write"):
            if values[name] is _UNSET:
                values[name] = timeout
        for name, value in values.items():
            if value is not _UNSET:
                timeout_seconds(f"timeout {name}", value)  # checks it
            object.__setattr__(self, name, value)

    def merged(
        self, connect: float, read: float, write: float, call: float
    ) -> tuple[float, float, float, float]:
        """The four timeouts as the engine takes them (seconds, 0.0 for none), starting from these."""
        values = [connect, read, write, call]
        for i, name in enumerate(_PHASES):
            value = getattr(self, name)
            if value is not _UNSET:
                values[i] = timeout_seconds(name, value)
        return values[0], values[1], values[2], values[3]

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("Timeout is immutable: make a new one")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Timeout):
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n) for n in _PHASES)

    def __hash__(self) -> int:
        return hash(tuple(getattr(self, n) for n in _PHASES))

    def __repr__(self) -> str:
        parts = [f"{n}={getattr(self, n)!r}" for n in _PHASES if getattr(self, n) is not _UNSET]
        return f"Timeout({', '.join(parts)})"

    def __reduce__(self) -> tuple[Callable[[dict[str, _Phase]], Timeout], tuple[dict[str, _Phase]]]:
        kwargs = {n: getattr(self, n) for n in _PHASES}
        return (_rebuild, (kwargs,))


def _rebuild(kwargs: dict[str, _Phase]) -> Timeout:
    return Timeout(**kwargs)


#: What ``timeout=`` accepts: seconds, ``None``, a ``(connect, read)`` pair or a ``Timeout``.
TimeoutTypes: TypeAlias = float | None | tuple[float | None, float | None] | Timeout

#: No timeout at all: what ``timeout=None`` on a request means.
_NONE = Timeout(None, call=None)


def as_timeout(value: object, where: str = "timeout") -> Timeout:
    """``timeout=`` as a ``Timeout``: a number, ``None`` (no timeouts, the call's included), a
    ``(connect, read)`` pair, or a ``Timeout``."""
    if isinstance(value, Timeout):
        return value
    if value is None:
        return _NONE
    if isinstance(value, tuple):
        if len(value) != 2:
            raise ValueError(f"{where}: a tuple must be (connect, read), not {len(value)} values")
        return Timeout(connect=value[0], read=value[1])
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(
            f"{where} must be a number of seconds, None, a (connect, read) pair or a fastnet.Timeout, "
            f"not {type(value).__name__}"
        )
    return Timeout(value)
