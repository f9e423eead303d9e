"""The user-space cost of fastnet's per-request stack, without the kernel or a server.

A keep-alive connection whose socket is an in-memory stand-in (``sendall`` discards, ``recv_into``
copies a canned nginx response) is put in the pool, then ``client.get`` runs in a loop. What remains is
exactly the work fastnet does per request: chain, bridge, pool, serialise, parse, body, release. This
is a profiling aid for the hot path, not a comparison with peers (bench_http.py does that).

    python benchmarks/bench_stack.py [--quick] [--headers 40] [--asyncio]
    python benchmarks/bench_stack.py --instructions [--compare-with ../before] [--asyncio]

``--asyncio`` measures ``AsyncClient`` the same way: its connection's transport is a stand-in that
answers each write at once, so ``await client.get()`` never waits for the loop; what remains is the
asyncio engine's own work per request (coroutines, chain, bridge, pool, serialise, parse, release).

``--instructions`` counts instructions per request with valgrind's callgrind instead of timing: two runs
of different lengths, the difference divided by the extra requests (so start-up cancels out). The count
is the same whatever else the machine is doing, which makes it the measure to trust for a small change
on a shared machine; ``--compare-with TREE`` counts another checkout the same way. The runs use
``PYTHONHASHSEED=0`` unless it is set: string hashing differs per process otherwise, and with it the
dict probes, which moves the count by a few hundred instructions from one run to the next.
"""

from __future__ import annotations

import argparse
import statistics
import time

import fastnet

try:
    from fastnet._internal._sync.real_connection import RealConnection
except ImportError:  # a checkout from before the engine's own folders (--compare-with)
    from fastnet._internal.connection.real_connection import RealConnection  # type: ignore[no-redef]

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

    def settimeout(self, seconds: float | None) -> None:
        pass  # not a C socket, so the connection treats it as a cooperative one (set once, then skipped)

    def setsockopt(self, *args: object) -> None:
        pass

    def recv(self, n: int, flags: int = 0) -> bytes:
        raise BlockingIOError

    def close(self) -> None:
        pass

    def shutdown(self, how: int) -> None:
        pass


class CannedTransport:
    """An asyncio transport stand-in: each write is answered at once through the protocol."""

    def __init__(self, protocol: object, response: bytes) -> None:
        self.protocol = protocol
        self.response = response

    def write(self, data: bytes) -> None:
        view = self.protocol.get_buffer(-1)  # type: ignore[attr-defined]
        n = len(self.response)
        view[:n] = self.response
        self.protocol.buffer_updated(n)  # type: ignore[attr-defined]

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def abort(self) -> None:
        pass

    def close(self) -> None:
        pass


def _asyncio_loop(url: str, response: bytes, n: int, rounds: int) -> list[float]:
    """``n`` awaited GETs per round over a canned transport; µs per request of each round."""
    import asyncio

    try:
        from fastnet._internal._async.real_connection import new_async_connection
    except ImportError:  # a checkout from before the engine's own folders (--compare-with)
        from fastnet._internal.connection.async_real_connection import new_async_connection  # type: ignore[no-redef]

    async def run() -> list[float]:
        client = fastnet.AsyncClient()
        core = client._core
        address = core.connector.address_of(fastnet.URL(url), None)
        conn = new_async_connection(asyncio.get_running_loop(), None, address, False)
        conn.transport = CannedTransport(conn.protocol, response)
        core.pool.reserve(address.host, 0.0)
        core.pool.register(conn)
        core.pool.release(conn, True)
        get = client.get
        out = []
        for _ in range(rounds):
            start = time.perf_counter()
            for _ in range(n):
                _ = (await get(url)).content
            out.append((time.perf_counter() - start) / n * 1e6)
        return out

    return asyncio.run(run())


def _instructions(tree: str, headers: int, use_asyncio: bool = False) -> float:
    """Instructions per request of the checkout at ``tree``, counted by callgrind (see the module doc)."""
    import os
    import re
    import subprocess
    import sys
    import tempfile

    counts = []
    for n in (2000, 12000):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "callgrind.out")
            done = subprocess.run(
                ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable,
                 os.path.abspath(__file__), "--loop", str(n), "--headers", str(headers)]
                + (["--asyncio"] if use_asyncio else []),
                env=dict(os.environ, PYTHONPATH=os.path.abspath(tree),
                         PYTHONHASHSEED=os.environ.get("PYTHONHASHSEED", "0")), cwd=tmp,
                capture_output=True, text=True, timeout=600, check=True,
            )  # fmt: skip
            found = re.search(r"Collected : (\d+)", done.stderr)
            if found is None:
                raise RuntimeError(f"no callgrind total in: {done.stderr[-500:]}")
            counts.append(int(found.group(1)))
    return (counts[1] - counts[0]) / 10000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--headers", type=int, default=0, help="extra response headers (W2 uses 40)")
    parser.add_argument("--instructions", action="store_true", help="count instructions with callgrind")
    parser.add_argument("--compare-with", action="append", default=[], metavar="TREE")
    parser.add_argument("--asyncio", action="store_true", help="measure AsyncClient (see the module doc)")
    parser.add_argument("--loop", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    kind = "AsyncClient" if args.asyncio else "Client"
    if args.instructions:
        import os

        for tree in [os.path.dirname(os.path.dirname(os.path.abspath(__file__))), *args.compare_with]:
            per = _instructions(tree, args.headers, args.asyncio)
            print(f"{tree}: {per:,.0f} instructions per {kind} request ({args.headers} extra headers)")
        return
    extra = b"".join(b"X-Header-%02d: value-of-header-%02d\r\n" % (i, i) for i in range(args.headers))
    response = HEAD + extra + b"\r\nok"
    url = "http://127.0.0.1:19080/2b"
    build = "compiled" if fastnet.compiled else "pure"
    if args.asyncio:
        if args.loop:
            _asyncio_loop(url, response, args.loop, 1)
            return
        n = 20_000 if args.quick else 100_000
        rounds = _asyncio_loop(url, response, n, 3 if args.quick else 7)
        print(
            f"{build} build, AsyncClient, {args.headers} extra headers: {statistics.median(rounds):.2f} µs "
            f"per request (median of {len(rounds)} rounds; min {min(rounds):.2f})"
        )
        return
    client = fastnet.Client()
    core = client._core
    find = getattr(core.connector, "address_of", None) or core.connector.address_for
    address = find(fastnet.URL(url), None)
    conn = RealConnection(CannedSocket(response), None, address, False, False)
    core.pool.reserve(address.host, 0.0)
    core.pool.register(conn)
    core.pool.release(conn, True)
    get = client.get
    if args.loop:  # one run for --instructions
        for _ in range(args.loop):
            _ = get(url).content
        return
    n = 20_000 if args.quick else 200_000
    rounds = []
    for _ in range(3 if args.quick else 7):
        start = time.perf_counter()
        for _ in range(n):
            _ = get(url).content
        rounds.append((time.perf_counter() - start) / n * 1e6)
    print(
        f"{build} build, {args.headers} extra headers: {statistics.median(rounds):.2f} µs per request "
        f"(median of {len(rounds)} rounds; min {min(rounds):.2f})"
    )


if __name__ == "__main__":
    main()
