"""Route selection: :class:`RouteSelector` and :class:`RouteDatabase` (compiled when available).

The only module others import; it picks ``_route_selector_c`` (Cython) or ``_route_selector_py``.
:class:`~fastnet.route.Address` and :class:`~fastnet.route.Route` live in the same compiled unit so
that route iteration and address hashing never leave C; ``fastnet.route`` re-exports them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastnet import _compat

__all__ = [
    "Address",
    "Route",
    "RouteDatabase",
    "RouteSelector",
    "is_ip_literal",
    "reorder_for_happy_eyeballs",
]

if TYPE_CHECKING:
    from fastnet._internal._route_selector_py import (
        Address,
        Route,
        RouteDatabase,
        RouteSelector,
        is_ip_literal,
        reorder_for_happy_eyeballs,
    )
else:
    _impl = _compat.pick(
        "fastnet._internal.route_selector",
        lambda: __import__("fastnet._internal._route_selector_c", fromlist=["*"]),
        lambda: __import__("fastnet._internal._route_selector_py", fromlist=["*"]),
    )
    Address = _impl.Address
    Route = _impl.Route
    RouteDatabase = _impl.RouteDatabase
    RouteSelector = _impl.RouteSelector
    is_ip_literal = _impl.is_ip_literal
    reorder_for_happy_eyeballs = _impl.reorder_for_happy_eyeballs
