"""What requests and httpx put on the wire for a call, to hold fastnet's against.

``sent_by(library, server, method, path, **options)`` makes the call with ``requests`` or ``httpx`` (no
environment, no redirects) against a ``MockServer`` and returns the request the server recorded;
``comparable(recorded)`` keeps what the three clients must agree on: the request line, the headers that
describe the body and the credentials, and the body, with a multipart boundary replaced by
``BOUNDARY`` (each client picks its own at random).
"""

from __future__ import annotations

import re
import warnings
from typing import Any

from fastnet.testing import MockResponse, MockServer
from fastnet.testing._mock_server import RecordedRequest

__all__ = ["COMPARED_HEADERS", "comparable", "sent_by"]

#: The headers the three clients set the same way for the same call.
COMPARED_HEADERS = ("content-type", "content-length", "authorization", "cookie", "transfer-encoding")


def sent_by(library: str, server: MockServer, method: str, path: str, **options: Any) -> RecordedRequest:
    """The request ``library`` ("requests" or "httpx") sends for ``method path`` with ``options``."""
    server.enqueue(MockResponse(200, body=b"ok"))
    url = path if "://" in path else server.url(path)
    if library == "requests":
        import requests

        with requests.Session() as session:
            session.trust_env = False
            session.request(method, url, allow_redirects=False, timeout=10, **options).close()
    else:
        import httpx

        with httpx.Client(trust_env=False, timeout=10) as client, warnings.catch_warnings():
            # httpx deprecates per-request cookies= and data= for raw bytes, but still sends them
            warnings.simplefilter("ignore", DeprecationWarning)
            client.request(method, url, **options).close()
    return server.take_request()


def _boundary(recorded: RecordedRequest) -> str | None:
    ctype = recorded.header("content-type") or ""
    found = re.search(r"boundary=([^;\s]+)", ctype)
    return found.group(1).strip('"') if found else None


def comparable(recorded: RecordedRequest) -> dict[str, Any]:
    """The request line, ``COMPARED_HEADERS`` and the body, boundary replaced by ``BOUNDARY``."""
    boundary = _boundary(recorded)
    body = recorded.body
    headers = {name: recorded.header(name) for name in COMPARED_HEADERS}
    if headers["content-length"] is not None:
        assert int(headers["content-length"]) == len(body), "the body does not match its Content-Length"
    if boundary is not None:
        body = body.replace(boundary.encode("ascii"), b"BOUNDARY")
        headers["content-type"] = (headers["content-type"] or "").replace(boundary, "BOUNDARY")
        if headers["content-length"] is not None:  # each boundary's length is its client's
            headers["content-length"] = str(len(body))
    return {"request_line": recorded.request_line, "headers": headers, "body": body}
