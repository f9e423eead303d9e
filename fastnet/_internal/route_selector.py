"""Dispatcher of the ``route_selector`` unit: the compiled ``_route_selector_c``, else the pure twin."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastnet import _compat

__all__ = ["RouteSelector", "ips_of", "reorder_for_happy_eyeballs"]

if TYPE_CHECKING:
    from fastnet._internal._route_selector_py import RouteSelector as RouteSelector
    from fastnet._internal._route_selector_py import ips_of as ips_of
    from fastnet._internal._route_selector_py import reorder_for_happy_eyeballs as reorder_for_happy_eyeballs
else:
    _compat.install(
        globals(),
        "fastnet._internal.route_selector",
        "fastnet._internal._route_selector_c",
        "fastnet._internal._route_selector_py",
    )
