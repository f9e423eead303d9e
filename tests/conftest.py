"""Shared fixtures: the real-server testbed (tests/testbed.py) and both builds' twins."""

from __future__ import annotations

from testbed import testbed  # noqa: F401  (session fixture: nginx, squid, dante, unbound, dnsdist)
