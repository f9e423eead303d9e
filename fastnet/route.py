"""``Address`` (the pooling key) and ``Route`` (one way to reach it), compiled in the compiled build.

The dispatcher of the ``route`` unit: ``_route_c`` when the compiled build is in use, else ``_route_py``.

>>> from fastnet.route import Address, Route
>>> from fastnet.proxy import Proxy
>>> str(Route(Address("https", "example.com", 1003), Proxy.http("1.2.3.4", 5678), ("1.2.3.4", 5678)))
'example.com:1003 via proxy 1.2.3.4:5678'
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastnet import _compat

__all__ = ["Address", "Route"]

if TYPE_CHECKING:
    from fastnet._route_py import Address as Address
    from fastnet._route_py import Route as Route
    from fastnet._route_py import is_ip_literal as is_ip_literal
else:
    _compat.install(globals(), "fastnet.route", "fastnet._route_c", "fastnet._route_py")
