"""The user-space cost of fastnet's per-request stack, without the kernel or a server.

A keep-alive connection whose socket is an in-memory stand-in (``sendall`` discards, ``recv_into``
copies a canned nginx response) is put in the pool, then ``client.get`` runs in a loop. What remains is
exactly the work fastnet does per request: chain, bridge, pool, serialise, parse, body, release. This
is a profiling aid for the hot path, not a comparison with peers (bench_http.py does that).

    python benchmarks/bench_stack.py [--quick] [--headers 40]
"""

from __future__ import annotations

import argparse
import statistics
import time

import fastnet
from fastnet._internal.connection.real_connection import RealConnection

HEAD = (
    b"HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nDate: Mon, 30 Nov 2026 09:40:05 GMT\r\n"
    b"Content-Type: text/plain\r\nContent-Length: 2\r\nConnection: keep-alive\r\n"
)


class CannedSocket:
    """Answers every request with the same bytes; never blocks."""

    def __init__(self, response: bytes) -> None:
        self.response = response

    def sendall(self, data: bytes) -> None:
        pass

    def recv_into(self, buffer: bytearray) -> int:
        n = len(self.response)
        buffer[:n] = self.response
        return n

    def setsockopt(self, *args: object) -> None:
        pass

    def recv(self, n: int, flags: int = 0) -> bytes:
        raise BlockingIOError

    def close(self) -> None:
        pass

    def shutdown(self, how: int) -> None:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--headers", type=int, default=0, help="extra response headers (W2 uses 40)")
    args = parser.parse_args()
    extra = b"".join(b"X-Header-%02d: value-of-header-%02d\r\n" % (i, i) for i in range(args.headers))
    response = HEAD + extra + b"\r\nok"
    url = "http://127.0.0.1:19080/2b"
    client = fastnet.Client()
    core = client._core
    address = core.connector.address_of(fastnet.URL(url), None)
    conn = RealConnection(CannedSocket(response), None, address, False, False)
    core.pool.reserve(address.host, 0.0)
    core.pool.register(conn)
    core.pool.release(conn, True)
    get = client.get
    n = 20_000 if args.quick else 200_000
    rounds = []
    for _ in range(3 if args.quick else 7):
        start = time.perf_counter()
        for _ in range(n):
            _ = get(url).content
        rounds.append((time.perf_counter() - start) / n * 1e6)
    build = "compiled" if fastnet.compiled else "pure"
    print(
        f"{build} build, {args.headers} extra headers: {statistics.median(rounds):.2f} µs per request "
        f"(median of {len(rounds)} rounds; min {min(rounds):.2f})"
    )


if __name__ == "__main__":
    main()
