"""MockServers in a child process, for the thread-safety stress test (tests/test_thread_safety.py).

Run as ``python stress_server.py HOST...``: one MockServer per host, on one free port each; prints
``HOST PORT`` per server, then ``ready``, and serves until its stdin closes. In its own process the
servers neither share the client's GIL nor its file descriptors, so the test counts only its own.

Every answer names the request, so a client that mixed up two connections' bytes would be caught:

* ``/ok/ID?size=N``: 200, the body is ``ID`` padded with ``.`` to ``N`` bytes (at least ``ID``);
* ``/slow/ID?ms=N``: the same, after holding the head ``N`` milliseconds;
* ``/drip/ID?size=N``: the same body in four pieces with 20 ms between them.
"""

from __future__ import annotations

import sys
import urllib.parse

from fastnet.testing import MockResponse, MockServer, RecordedRequest

__all__ = ["answer", "body_for"]


def body_for(ident: str, size: int) -> bytes:
    """The body the server sends for request ``ident`` with ``size=``: ``ident`` padded to ``size``."""
    raw = ident.encode()
    return raw + b"." * max(0, size - len(raw))


def answer(request: RecordedRequest) -> MockResponse:
    _, kind, ident = request.path.split("/", 2)
    query = urllib.parse.parse_qs(request.query or "")
    size = int(query.get("size", ["0"])[0])
    body = body_for(ident, size)
    if kind == "slow":
        return MockResponse(200, body=body, head_delay=int(query["ms"][0]) / 1000)
    if kind == "drip":
        return MockResponse(200, body=body, throttle=(max(1, len(body) // 4 + 1), 0.02))
    return MockResponse(200, body=body)


def main(hosts: list[str]) -> int:
    servers = [MockServer(host=host) for host in hosts]
    for server in servers:
        server.dispatcher = answer
        server.start()
        print(server.host, server.port, flush=True)
    print("ready", flush=True)
    try:
        sys.stdin.read()  # until the test closes our stdin (or dies)
    finally:
        for server in servers:
            server.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or ["127.0.0.1"]))
