"""``fastnet load [URL ...]``: the load generator's command line (options as in wrk, hey and oha).

Without a URL it starts the embedded ``MockServer`` on loopback and loads it, so it works on a machine
without any network. Bad option values are usage errors (exit status 2); a run that cannot start (a name
that does not resolve, a bad proxy) exits with 1; a run that ends prints its report and exits with 0,
whatever the server answered.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from fastnet.cli._text import printable
from fastnet.load import (
    DEFAULT_CONNECTIONS,
    DEFAULT_DURATION,
    DEFAULT_TIMEOUT,
    LoadError,
    MissingDependency,
    render,
    run,
    write_html,
)
from fastnet.load._progress import choose_display
from fastnet.load._targets import parse_resolve
from fastnet.testing import MockResponse, MockServer

__all__ = ["DEMO_BODY", "add_parser", "main", "parse_duration"]

_UNITS = {"": 1.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "m": 60.0, "h": 3600.0}
_DURATION = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*(ms|us|µs|s|m|h|)\s*$")
_MAX_CONNECTIONS = 100_000

DEMO_BODY = b"hello from fastnet's embedded MockServer\n"


def parse_duration(text: str) -> float:
    """``10``, ``10s``, ``1.5m``, ``250ms``, ``2h`` as seconds (positive)."""
    match = _DURATION.match(text)
    if match is None:
        raise argparse.ArgumentTypeError(f"not a duration: {text!r} (try 10s, 500ms, 2m)")
    value = float(match.group(1)) * _UNITS[match.group(2)]
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive: {text!r}")
    return value


def _positive_int(text: str) -> int:
    try:
        value = int(text.replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive: {text!r}")
    return value


def _connections(text: str) -> int:
    value = _positive_int(text)
    if value > _MAX_CONNECTIONS:
        raise argparse.ArgumentTypeError(f"at most {_MAX_CONNECTIONS:,} connections")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number: {text!r}")
    return value


def _header(text: str) -> tuple[str, str]:
    name, sep, value = text.partition(":")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"header must look like 'Name: value', not {text!r}")
    return name.strip(), value.strip()


def _resolve(text: str) -> tuple[str, int, str]:
    try:
        return parse_resolve(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """Register ``load`` on the ``fastnet`` command's subparsers."""
    p: argparse.ArgumentParser = sub.add_parser(
        "load",
        allow_abbrev=False,  # --connection is an unknown option (with a suggestion), not --connections
        help="load-test URLs with many concurrent connections and report throughput and latency",
        description=(
            "Load-test one or more URLs (round-robin) and report requests/s, latency percentiles, "
            "phases, status codes and errors. Without a URL, the embedded MockServer is started "
            f"and loaded. Runs {DEFAULT_DURATION:g} s unless -n or -z says otherwise."
        ),
    )
    p.add_argument("urls", nargs="*", metavar="URL", help="URLs to load (none: the embedded MockServer)")
    p.add_argument("--urls", dest="urls_file", metavar="FILE", help="read more URLs from FILE, one per line")
    p.add_argument(
        "-c",
        "--connections",
        type=_connections,
        default=DEFAULT_CONNECTIONS,
        help=f"concurrent connections (default {DEFAULT_CONNECTIONS})",
    )
    p.add_argument("-n", "--requests", type=_positive_int, help="total number of requests, then stop")
    p.add_argument(
        "-z",
        "--duration",
        type=parse_duration,
        help=f"run for this long (10s, 2m; default {DEFAULT_DURATION:g}s when -n is not given)",
    )
    p.add_argument(
        "-q",
        "--rate",
        type=_positive_float,
        help="open loop: start this many requests per second on a fixed timetable; latency counts from "
        "each request's intended start",
    )
    p.add_argument("-m", "--method", help="request method (default GET, or POST with a body)")
    p.add_argument(
        "-H",
        "--header",
        action="append",
        default=[],
        type=_header,
        help="request header 'Name: value' (repeatable)",
    )
    body = p.add_mutually_exclusive_group()
    body.add_argument("-d", "--data", help="request body")
    body.add_argument("-D", "--data-file", metavar="FILE", help="request body from FILE")
    p.add_argument(
        "--timeout",
        type=parse_duration,
        default=DEFAULT_TIMEOUT,
        help=f"connect and response timeout per request (default {DEFAULT_TIMEOUT:g}s)",
    )
    p.add_argument("--proxy", help="proxy URL: http://, https://, socks5://, socks5h://, socks4a://")
    p.add_argument(
        "--resolve",
        action="append",
        default=[],
        type=_resolve,
        metavar="HOST:PORT:ADDR",
        help="connect to ADDR for HOST on PORT (repeatable)",
    )
    p.add_argument("-k", "--insecure", action="store_true", help="do not verify TLS certificates")
    p.add_argument("--cacert", metavar="FILE", help="verify TLS certificates with this CA bundle")
    p.add_argument("--disable-keepalive", action="store_true", help="a new connection for every request")
    p.add_argument("--json", action="store_true", help="print the result as JSON instead of the report")
    p.add_argument("--html", metavar="FILE", help="also write a one-page HTML report with the plots")
    p.add_argument("--quiet", action="store_true", help="no progress display while running")
    p.add_argument(
        "--engine", choices=("auto", "c", "py"), default="auto", help="event loop twin (default: the build's)"
    )
    return p


def _demo_server() -> MockServer:
    server = MockServer()
    server.default_response = MockResponse(200, headers={"Content-Type": "text/plain"}, body=DEMO_BODY)
    server.start()
    return server


def main(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Run ``fastnet load`` with parsed ``args``; ``parser.error`` reports usage errors (exit 2)."""
    urls: list[str] = list(args.urls)
    if args.urls_file:
        try:
            lines = Path(args.urls_file).read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            parser.error(printable(f"--urls: {exc}"))
        urls += [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]
        if not urls:
            parser.error(printable(f"--urls: no URLs in {args.urls_file}"))
    body: bytes | None = None
    if args.data is not None:
        body = args.data.encode("utf-8")
    elif args.data_file is not None:
        try:
            body = Path(args.data_file).read_bytes()
        except OSError as exc:
            parser.error(printable(f"-D: {exc}"))
    if args.insecure and args.cacert:
        parser.error("-k and --cacert contradict each other")
    method = (args.method or ("POST" if body is not None else "GET")).upper()
    out = sys.stdout
    progress_file = sys.stderr if args.json else sys.stdout
    server = None
    if not urls:
        server = _demo_server()
        urls = [server.url("/")]
        if not args.quiet and not args.json:
            print(f"fastnet load: no URL given, loading the embedded MockServer at {urls[0]}", file=out)
    try:
        display = choose_display(progress_file, quiet=args.quiet)
        result = run(
            urls,
            connections=args.connections,
            requests=args.requests,
            duration=args.duration,
            rate=args.rate,
            method=method,
            headers=args.header,
            body=body,
            timeout=args.timeout,
            proxy=args.proxy,
            resolve=args.resolve,
            insecure=args.insecure,
            cacert=args.cacert,
            keepalive=not args.disable_keepalive,
            engine=None if args.engine == "auto" else args.engine,
            display=display,
        )
    except (LoadError, MissingDependency) as exc:
        print(f"fastnet load: {printable(str(exc))}", file=sys.stderr)
        return 1
    except (ValueError, TypeError) as exc:
        parser.error(printable(str(exc)))
    finally:
        if server is not None:
            server.shutdown()
    if args.json:
        out.write(result.to_json() + "\n")
    else:
        out.write(printable(render(result), lines=True))  # URLs and error messages come from outside
    out.flush()
    if args.html:
        try:
            write_html(result, args.html)
        except OSError as exc:
            print(printable(f"fastnet load: cannot write {args.html}: {exc}"), file=sys.stderr)
            return 1
        if not args.json and not args.quiet:
            print(f"HTML report written to {printable(args.html)}", file=out)
    return 0
