"""A kernel socket timeout (``SO_RCVTIMEO`` or ``SO_SNDTIMEO``) set from seconds: ``set_kernel_timeout``.

Plain TCP sockets are bounded by kernel timeouts, set only when they change, so that a blocking send or
receive stays one system call (``settimeout`` would add a ``poll`` to each). Pure-Python twin of the
compiled ``_kernel_timeout_c``, which calls ``setsockopt(2)`` on the descriptor itself: given a bytes
value, ``socket.setsockopt`` first tries two other argument forms and formats a ``TypeError`` for each
before it takes the bytes, which costs more than the system call. Import through
``fastnet._internal.util.kernel_timeout``.
"""

from __future__ import annotations

import socket
import struct
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import _socket

__all__ = ["set_kernel_timeout"]


def set_kernel_timeout(sock: _socket.socket, optname: int, seconds: float) -> None:
    """Set ``optname`` (``SO_RCVTIMEO`` or ``SO_SNDTIMEO``) of ``sock`` to ``seconds``; 0 or less means
    no timeout, and a positive value is at least one microsecond (a zero ``timeval`` would mean none).
    Raises ``OSError`` as ``socket.setsockopt`` does (``EBADF`` on a closed socket)."""
    if seconds <= 0:
        whole = micros = 0
    else:
        whole = int(seconds)
        micros = int((seconds - whole) * 1_000_000)
        if whole == 0 and micros == 0:
            micros = 1
    sock.setsockopt(socket.SOL_SOCKET, optname, struct.pack("ll", whole, micros))
