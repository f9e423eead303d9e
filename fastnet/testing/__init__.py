"""Test helpers for code that uses fastnet (or any HTTP/1.1 client).

:class:`MockServer` is a scripted HTTP/1.1 server on loopback: enqueue :class:`MockResponse` objects,
point a client at :meth:`MockServer.url`, then inspect what arrived with
:meth:`MockServer.take_request`, which returns :class:`RecordedRequest` objects.

    >>> from fastnet.testing import MockServer, MockResponse
    >>> with MockServer() as server:                               # doctest: +SKIP
    ...     server.enqueue(MockResponse(200, body=b"hello"))
    ...     ...  # request server.url("/") with the client under test
    ...     assert server.take_request().path == "/"

TLS (``MockServer(tls=True)``) needs ``trustme``, from the ``testing`` extra.
"""

from __future__ import annotations

from fastnet.testing._mock_server import MockResponse, MockServer, RecordedRequest, SocketPolicy

__all__ = ["MockResponse", "MockServer", "RecordedRequest", "SocketPolicy"]
