"""Public value types of connection routing: :class:`Address` (the pooling key) and :class:`Route`.

Both are defined in the compiled unit ``fastnet._internal.route_selector`` (so route iteration and
address hashing stay in C) and re-exported here; import them from this module.

>>> from fastnet.route import Address, Route
>>> from fastnet.proxy import Proxy
>>> str(Route(Address("https", "example.com", 1003), Proxy.http("1.2.3.4", 5678), ("1.2.3.4", 5678)))
'example.com:1003 via proxy 1.2.3.4:5678'
"""

from __future__ import annotations

from fastnet._internal.route_selector import Address, Route

__all__ = ["Address", "Route"]
