"""Dispatcher of the load generator's event loop: compiled ``_loop_c`` or pure ``_loop_py``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastnet import _compat

__all__ = [
    "BUSY",
    "CHECK_NS",
    "CLOSED",
    "CONNECTING",
    "HEAD_READ",
    "IMPLEMENTATION",
    "MAX_WAIT_NS",
    "OPEN_BACKOFF_NS",
    "READY",
    "RECV_SIZE",
    "SETUP",
    "Engine",
    "Recorder",
]

if TYPE_CHECKING:
    from fastnet.load._loop_py import BUSY as BUSY
    from fastnet.load._loop_py import CHECK_NS as CHECK_NS
    from fastnet.load._loop_py import CLOSED as CLOSED
    from fastnet.load._loop_py import CONNECTING as CONNECTING
    from fastnet.load._loop_py import HEAD_READ as HEAD_READ
    from fastnet.load._loop_py import IMPLEMENTATION as IMPLEMENTATION
    from fastnet.load._loop_py import MAX_WAIT_NS as MAX_WAIT_NS
    from fastnet.load._loop_py import OPEN_BACKOFF_NS as OPEN_BACKOFF_NS
    from fastnet.load._loop_py import READY as READY
    from fastnet.load._loop_py import RECV_SIZE as RECV_SIZE
    from fastnet.load._loop_py import SETUP as SETUP
    from fastnet.load._loop_py import Engine as Engine
    from fastnet.load._loop_py import Recorder as Recorder
else:
    _compat.install(globals(), "fastnet.load.loop", "fastnet.load._loop_c", "fastnet.load._loop_py")
