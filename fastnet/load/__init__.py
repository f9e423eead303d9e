"""``fastnet load``: an HTTP/1.1 load generator on fastnet's engine, as a library.

>>> import fastnet.load
>>> result = fastnet.load.run("http://127.0.0.1:8080/", requests=10_000, connections=64)  # doctest: +SKIP
>>> result.requests_per_second, result.latency.p99, result.status_codes                  # doctest: +SKIP
(98213.4, 0.00121, {200: 10000})

``run()`` returns the :class:`LoadResult` that the command prints: ``render(result)`` is its text
report, ``result.to_json()`` the ``--json`` document and ``write_html(result, path)`` the ``--html``
page. It needs the ``hdrhistogram`` package (and ``rich`` for the live display):
``pip install 'fastnet-http[load]'`` (from a checkout: ``pip install -e '.[load]'``).
"""

from __future__ import annotations

from fastnet.load._hist import MissingDependency
from fastnet.load._html import render_html, write_html
from fastnet.load._report import render
from fastnet.load._result import ErrorGroup, Generator, LatencyStats, LoadResult
from fastnet.load._run import DEFAULT_CONNECTIONS, DEFAULT_DURATION, DEFAULT_TIMEOUT, run
from fastnet.load._targets import LoadError

__all__ = [
    "DEFAULT_CONNECTIONS",
    "DEFAULT_DURATION",
    "DEFAULT_TIMEOUT",
    "ErrorGroup",
    "Generator",
    "LatencyStats",
    "LoadError",
    "LoadResult",
    "MissingDependency",
    "render",
    "render_html",
    "run",
    "write_html",
]
