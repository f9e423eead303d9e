"""Dispatcher of the HTTP/1.1 ``exchange`` unit: compiled ``_exchange_c`` or pure ``_exchange_py``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastnet import _compat

__all__ = ["DECODED_CHUNK", "DRAIN_TIMEOUT", "Exchange", "new_exchange"]

if TYPE_CHECKING:
    from fastnet._internal.http1._exchange_py import DECODED_CHUNK as DECODED_CHUNK
    from fastnet._internal.http1._exchange_py import DRAIN_TIMEOUT as DRAIN_TIMEOUT
    from fastnet._internal.http1._exchange_py import Exchange as Exchange
    from fastnet._internal.http1._exchange_py import new_exchange as new_exchange
else:
    _compat.install(
        globals(),
        "fastnet._internal.http1.exchange",
        "fastnet._internal.http1._exchange_c",
        "fastnet._internal.http1._exchange_py",
    )
