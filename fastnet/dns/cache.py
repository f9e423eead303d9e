"""Dispatcher for the DNS cache unit: ``DnsCache``, ``IpBlacklist`` and ``CachingDns``.

The compiled twin ``_cache_c`` is used unless ``FASTNET_NO_EXTENSIONS`` is set or it was not built;
``_cache_py`` is the pure-Python source of both.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastnet import _compat

__all__ = ["CachingDns", "DnsCache", "IpBlacklist", "IMPLEMENTATION"]

if TYPE_CHECKING:
    from fastnet.dns._cache_py import CachingDns as CachingDns
    from fastnet.dns._cache_py import DnsCache as DnsCache
    from fastnet.dns._cache_py import IpBlacklist as IpBlacklist
else:
    _compat.install(globals(), "fastnet.dns.cache", "fastnet.dns._cache_c", "fastnet.dns._cache_py")

#: ``"c"`` or ``"py"``: which twin this process uses.
IMPLEMENTATION: str = "c" if "fastnet.dns.cache" in _compat.loaded_compiled else "py"
