"""Dispatcher of the ``exchange_finder`` unit: the compiled ``_exchange_finder_c``, else the pure twin."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastnet import _compat

__all__ = [
    "PROBE_IDLE_AFTER",
    "ExchangeFinder",
    "SelectorEvents",
    "connect_failure",
    "connect_reason",
    "dialed",
    "find_connection",
    "slot_deadline",
    "socks_proxy_ip",
]

if TYPE_CHECKING:
    from fastnet._internal.connection._exchange_finder_py import PROBE_IDLE_AFTER as PROBE_IDLE_AFTER
    from fastnet._internal.connection._exchange_finder_py import ExchangeFinder as ExchangeFinder
    from fastnet._internal.connection._exchange_finder_py import SelectorEvents as SelectorEvents
    from fastnet._internal.connection._exchange_finder_py import connect_failure as connect_failure
    from fastnet._internal.connection._exchange_finder_py import connect_reason as connect_reason
    from fastnet._internal.connection._exchange_finder_py import dialed as dialed
    from fastnet._internal.connection._exchange_finder_py import find_connection as find_connection
    from fastnet._internal.connection._exchange_finder_py import slot_deadline as slot_deadline
    from fastnet._internal.connection._exchange_finder_py import socks_proxy_ip as socks_proxy_ip
else:
    _compat.install(
        globals(),
        "fastnet._internal.connection.exchange_finder",
        "fastnet._internal.connection._exchange_finder_c",
        "fastnet._internal.connection._exchange_finder_py",
    )
