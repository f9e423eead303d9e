"""``Timings``: how long each phase of a response took, like curl's ``-w`` variables.

The engine records raw monotonic timestamps as it goes (no event listener needed): the call's start
and its wait in the dispatcher, the phases of opening the connection (measured once, when it was new),
and for this response the request write, the first byte and the end of the body. The durations are
worked out when read. Every phase a response did not go through is ``0.0``: a reused connection had no
DNS, connect or TLS phase.

Compiled in place, typed by its ``.pxd``, in the compiled build.

>>> r = client.get(url)
>>> t = r.timings
>>> t.connect, t.time_to_first_byte, t.reused, t.remote_address
(0.00021, 0.00043, False, ('127.0.0.1', 8080))
"""

from __future__ import annotations

from fastnet._internal.util.clock import monotonic

__all__ = ["Timings", "new_timings"]


class Timings:
    """The phases of one response, in seconds (``0.0`` for a phase that did not happen).

    Durations: ``queue`` (waiting in the dispatcher), ``dns``, ``connect`` (TCP, SOCKS and CONNECT
    tunnel), ``tls``, ``request_write``, ``time_to_first_byte`` (from the end of the request to the first
    byte of the response), ``body_read`` (from the first byte to the end of the body) and ``total`` (from
    the start of the call, queue excluded, to the end of the body, or to now while it streams). A body
    closed early or cut off ends where it was given up.

    Points in time since the call started, as curl's ``-w`` has them: ``name_lookup``, ``connected``,
    ``tls_done``, ``request_sent``, ``first_byte``. ``reused`` says whether the connection had carried
    an exchange before; ``remote_address`` is the ``(host, port)`` the socket is connected to (a proxy's,
    through a proxy).
    """

    __slots__ = (
        "call_start",
        "queue",
        "dns",
        "connect",
        "tls",
        "reused",
        "remote_address",
        "request_start",
        "request_end",
        "first_byte_at",
        "body_end",
    )
    call_start: float  # monotonic timestamps below; 0.0 when the point was not reached
    queue: float
    dns: float
    connect: float
    tls: float
    reused: bool
    remote_address: tuple[str, int] | None
    request_start: float
    request_end: float
    first_byte_at: float
    body_end: float

    @property
    def request_write(self) -> float:
        return _between(self.request_start, self.request_end)

    @property
    def time_to_first_byte(self) -> float:
        return _between(self.request_end, self.first_byte_at)

    @property
    def body_read(self) -> float:
        return _between(self.first_byte_at, self.body_end)

    @property
    def total(self) -> float:
        if self.call_start <= 0:
            return 0.0
        end = self.body_end
        if end <= 0:
            end = monotonic()
        return max(0.0, end - self.call_start)

    @property
    def name_lookup(self) -> float:
        return self.dns

    @property
    def connected(self) -> float:
        return self.dns + self.connect

    @property
    def tls_done(self) -> float:
        return self.dns + self.connect + self.tls

    @property
    def request_sent(self) -> float:
        return _between(self.call_start, self.request_end)

    @property
    def first_byte(self) -> float:
        return _between(self.call_start, self.first_byte_at)

    def as_dict(self) -> dict[str, object]:
        """Every duration and point in time, ``reused`` and ``remote_address``, by name."""
        return {
            "queue": self.queue,
            "dns": self.dns,
            "connect": self.connect,
            "tls": self.tls,
            "request_write": self.request_write,
            "time_to_first_byte": self.time_to_first_byte,
            "body_read": self.body_read,
            "total": self.total,
            "name_lookup": self.name_lookup,
            "connected": self.connected,
            "tls_done": self.tls_done,
            "request_sent": self.request_sent,
            "first_byte": self.first_byte,
            "reused": self.reused,
            "remote_address": self.remote_address,
        }

    def __repr__(self) -> str:
        reused = " reused" if self.reused else ""
        return (
            f"<Timings total={self.total * 1000:.3f} ms dns={self.dns * 1000:.3f} "
            f"connect={self.connect * 1000:.3f} tls={self.tls * 1000:.3f} "
            f"ttfb={self.time_to_first_byte * 1000:.3f}{reused}>"
        )


def _between(start: float, end: float) -> float:
    return end - start if start > 0 and end >= start else 0.0


def new_timings(call_start: float, queue: float) -> Timings:
    """The timings of a response whose call started at ``call_start`` after ``queue`` s in a dispatcher."""
    t = Timings.__new__(Timings)
    t.call_start = call_start
    t.queue = queue
    t.dns = 0.0
    t.connect = 0.0
    t.tls = 0.0
    t.reused = False
    t.remote_address = None
    t.request_start = 0.0
    t.request_end = 0.0
    t.first_byte_at = 0.0
    t.body_end = 0.0
    return t
