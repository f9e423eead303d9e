"""The ``fastnet`` command line: ``fastnet get URL [-H 'Name: value'] [-d DATA] [-X METHOD] [-v]``, and
``fastnet load [URL ...]``, the load generator (``fastnet/cli/load.py``).

Prints the status line, the response headers and the body. ``-v`` adds the request that was sent and
every event of the call with its time (``LoggingEventListener``), then the response's timings. With no
URL it starts the embedded ``MockServer`` on loopback and fetches from it, so ``fastnet get`` works on a
machine without any network.
"""

from __future__ import annotations

import argparse
import logging
import sys
from typing import Any

import fastnet
from fastnet.cli import load as load_command
from fastnet.testing import MockResponse, MockServer

__all__ = ["main"]


def _event_log() -> fastnet.LoggingEventListener:
    """``-v``: every event of the call on stderr, with the milliseconds since it started."""
    logger = logging.getLogger("fastnet.events.cli")
    logger.propagate = False
    logger.setLevel(logging.DEBUG)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("* %(message)s"))
    logger.handlers[:] = [handler]
    return fastnet.LoggingEventListener(logger)


def _demo_server() -> Any:
    server = MockServer()
    server.start()
    server.default_response = MockResponse(
        200,
        headers={"Content-Type": "text/plain; charset=utf-8", "X-Served-By": "fastnet.testing.MockServer"},
        body="hello from fastnet's embedded MockServer\n",
    )
    return server


def _parse_header(text: str) -> tuple[str, str]:
    name, sep, value = text.partition(":")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"header must look like 'Name: value', not {text!r}")
    return name.strip(), value.strip()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="fastnet", description="A fast HTTP/1.1 client.")
    sub = parser.add_subparsers(dest="command", required=True)
    get = sub.add_parser("get", help="fetch a URL and print status, headers and body")
    get.add_argument("url", nargs="?", help="the URL; without one, an embedded loopback server is used")
    get.add_argument(
        "-H",
        "--header",
        action="append",
        default=[],
        type=_parse_header,
        help="request header 'Name: value' (repeatable)",
    )
    get.add_argument("-d", "--data", help="request body (makes the method POST unless -X is given)")
    get.add_argument("-X", "--method", help="request method (default GET, or POST with -d)")
    get.add_argument("-v", "--verbose", action="store_true", help="show the request and each phase's timing")
    get.add_argument("-k", "--insecure", action="store_true", help="do not verify TLS certificates")
    get.add_argument("--timeout", type=float, default=10.0, help="connect/read/write timeout in seconds")
    load_parser = load_command.add_parser(sub)
    args = parser.parse_args(argv)
    if args.command == "load":
        return load_command.main(args, load_parser)

    server = None
    url = args.url
    if url is None:
        server = _demo_server()
        url = server.url("/")
    method = args.method or ("POST" if args.data is not None else "GET")
    listener = _event_log() if args.verbose else None
    sent: list[Any] = []

    def capture(chain: Any) -> Any:  # a network interceptor: sees the request as it goes on the wire
        sent.append(chain.request)
        return chain.proceed(chain.request)

    try:
        with fastnet.Client(
            connect_timeout=args.timeout,
            read_timeout=args.timeout,
            write_timeout=args.timeout,
            event_listener=listener,
            network_interceptors=[capture] if args.verbose else [],
            verify=not args.insecure,
        ) as client:
            try:
                response = client.request(
                    method,
                    url,
                    headers=args.header or None,
                    body=args.data.encode() if args.data is not None else None,
                )
            except (fastnet.NetworkError, ValueError, TypeError) as exc:
                print(f"fastnet: {type(exc).__name__}: {exc}", file=sys.stderr)
                return 1
            out = sys.stdout
            if args.verbose and sent:
                request = sent[-1]
                out.write(f"> {request.method} {request.url} HTTP/1.1\n")
                for name, value in request.headers.items():
                    out.write(f"> {name}: {value}\n")
                out.write(">\n")
            out.write(f"{response.protocol} {response.status_code} {response.reason}\n")
            for name, value in response.headers.items():
                out.write(f"{name}: {value}\n")
            out.write("\n")
            out.flush()
            sys.stdout.buffer.write(response.content)
            sys.stdout.buffer.flush()
            if args.verbose and response.timings is not None:
                print(f"* {response.timings!r}", file=sys.stderr)
    finally:
        if server is not None:
            server.shutdown()
    return 0
