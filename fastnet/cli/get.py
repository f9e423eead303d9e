"""``fastnet get URL``: one request, as curl users expect it.

The body goes to stdout and nothing else does, so ``fastnet get URL | jq .`` works: ``-i`` adds the
status line and headers before it (``-I`` sends HEAD and prints only those), ``-v`` writes the request,
every event of the call and the timings to stderr. ``-o FILE`` writes the body to a file instead (with a
``rich`` progress bar on stderr when stdout is a terminal and rich is installed), ``-w`` prints curl's
``--write-out`` variables afterwards. What the server or a URL said is shown with its control characters
made visible (``fastnet/cli/_text.py``: always on stderr and in ``-w`` values, on a terminal for ``-i``),
and a body with control sequences is refused on a terminal unless ``-o -``. Options are curl's: ``-X -H
-d --json -u -x -k --cacert --cert --key -A -b -L --no-location --max-redirs -f -s -S --max-time
--connect-timeout``.

Redirects are followed by default, unlike curl (where ``-L`` turns that on): ``fastnet get`` makes the
same call ``client.get`` makes with default options, so what it shows is what your code would get.
``-L`` is accepted for curl habits; ``--no-location`` shows the 3xx itself.

Exit codes are curl's (the README has the table): 0 done; 1 an unsupported scheme; 2 a usage error (a
bad option value, or a method, header or cookie that cannot be sent); 3 a malformed URL; 5 a proxy URL
that does not parse; 6 the host name did not resolve; 7 no connection could be made (or a proxy scheme
fastnet lacks); 8 the server broke HTTP/1.1; 18 the body ended short of its length; 22 an HTTP error
status with ``-f``; 23 the output could not be written (or a body with control sequences was refused on
a terminal); 26 a ``@file`` could not be read; 28 a timeout; 35 a TLS failure; 47 too many redirects; 52
the server closed without answering; 56 the connection failed while reading; 58 the client certificate
could not be loaded; 60 the server's certificate was not trusted; 61 the body did not decode; 63 the
body was over ``max_body_size``; 77 the CA bundle could not be loaded; 97 a proxy failed. Every option
is checked before anything is sent. Errors print one line on stderr (not with ``-s``, unless ``-S``),
never a traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import getpass
import json
import logging
import sys
import zlib
from typing import IO, TYPE_CHECKING, Any

import fastnet
from fastnet._internal.http1.decoders import DecodeError
from fastnet.cli._text import BINARY_OUTPUT, TerminalGuard, printable
from fastnet.testing import MockResponse, MockServer

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

__all__ = ["EXIT_CODES", "add_parser", "exit_code", "run", "write_out"]

#: fastnet's errors and curl's exit codes for them (the first match wins).
EXIT_CODES: tuple[tuple[type[BaseException], int], ...] = (
    (fastnet.TlsVerificationError, 60),
    (fastnet.TlsError, 35),
    (fastnet.UnknownHostError, 6),
    (fastnet.TimeoutError, 28),
    (fastnet.ProxyError, 97),
    (fastnet.ConnectError, 7),
    (fastnet.BodyTooLargeError, 63),
    (fastnet.ConnectionClosedError, 52),
    (fastnet.ProtocolError, 8),
    (fastnet.NetworkError, 56),
)


def exit_code(error: BaseException, *, received: bool = False) -> int:
    """curl's exit code for ``error``; ``received``: it came after the response head (in the body)."""
    if isinstance(error, fastnet.ProtocolError) and "Too many follow-up requests" in str(error):
        return 47
    if received and isinstance(error, fastnet.ConnectionClosedError):
        return 56  # 52 is for a connection closed with nothing received
    if received and isinstance(error, fastnet.ProtocolError) and "unexpected end of stream" in str(error):
        return 18  # the body ended before its length: a partial file
    if isinstance(error, fastnet.ProtocolError) and isinstance(error.__cause__, (zlib.error, DecodeError)):
        return 61  # a Content-Encoding that does not decode
    for kind, code in EXIT_CODES:
        if isinstance(error, kind):
            return code
    if isinstance(error, ValueError) and ("scheme" in str(error).lower()):
        return 1
    if isinstance(error, ValueError):
        return 3
    return 1


_SECRET_HEADERS = frozenset(("authorization", "proxy-authorization"))


class _Usage(Exception):
    """A bad option value found after parsing: exit status 2."""


class _Failure(Exception):
    """An error with its own exit code and message."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def _header(text: str) -> tuple[str, str]:
    name, sep, value = text.partition(":")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"header must look like 'Name: value', not {text!r}")
    return name.strip(), value.strip()


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds: {text!r}")
    return value


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more: {text!r}")
    return value


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """Register ``get`` on the ``fastnet`` command's subparsers."""
    p: argparse.ArgumentParser = sub.add_parser(
        "get",
        allow_abbrev=False,  # --includ is an unknown option (with a suggestion), not --include
        help="fetch a URL as curl does: the body on stdout",
        description=(
            "Fetch one URL and write the body to stdout (-i: headers too). Without a URL, an embedded "
            "MockServer on loopback answers. Redirects are followed unless --no-location."
        ),
        epilog=(
            "exit codes (curl's): 0 ok, 1 unsupported scheme, 2 usage, 3 malformed URL, 5 bad proxy, "
            "6 DNS, 7 connect, 8 bad HTTP, 18 partial body, 22 HTTP error with -f, 23 write error, "
            "26 read error, 28 timeout, 35 TLS, 47 too many redirects, 52 empty reply, 56 receive error, "
            "58 client certificate, 60 certificate, 61 bad content encoding, 63 body too large, "
            "77 CA bundle, 97 proxy"
        ),
    )
    p.add_argument(
        "url", nargs="?", help="the URL (http:// is assumed without a scheme); none: the embedded server"
    )
    p.add_argument(
        "-X", "--request", "--method", dest="method", help="request method (GET, or POST with a body)"
    )
    p.add_argument(
        "-H",
        "--header",
        action="append",
        default=[],
        type=_header,
        help="request header 'Name: value' (repeatable)",
    )
    p.add_argument(
        "-d",
        "--data",
        action="append",
        help="form data, sent as application/x-www-form-urlencoded (repeatable, joined with '&'; @FILE, @-)",
    )
    p.add_argument(
        "--json",
        action="append",
        metavar="DATA",
        help="a JSON body, with Content-Type and Accept set (@FILE, @-)",
    )
    p.add_argument(
        "-i", "--include", action="store_true", help="print the status line and headers before the body"
    )
    p.add_argument(
        "-I", "--head", action="store_true", help="send HEAD and print the status line and headers"
    )
    p.add_argument(
        "-o", "--output", metavar="FILE", help="write the body to FILE (a progress bar on a terminal)"
    )
    p.add_argument(
        "-f", "--fail", action="store_true", help="exit 22 without printing the body on a 4xx/5xx status"
    )
    p.add_argument(
        "-L", "--location", action="store_true", help="follow redirects (the default; for curl habits)"
    )
    p.add_argument("--no-location", action="store_true", help="do not follow redirects: show the 3xx")
    p.add_argument("--max-redirs", type=_count, metavar="N", help="follow at most N redirects (default 20)")
    p.add_argument(
        "-u", "--user", metavar="USER[:PASSWORD]", help="Basic credentials (asked for without ':')"
    )
    p.add_argument(
        "-x", "--proxy", metavar="URL", help="proxy: http://, https://, socks5://, socks5h://, socks4a://"
    )
    p.add_argument("-k", "--insecure", action="store_true", help="do not verify TLS certificates")
    p.add_argument("--cacert", metavar="FILE", help="verify the server with these CA certificates (PEM)")
    p.add_argument("-E", "--cert", metavar="FILE", help="client certificate (PEM; with its key unless --key)")
    p.add_argument("--key", metavar="FILE", help="the client certificate's private key (PEM)")
    p.add_argument("-A", "--user-agent", metavar="NAME", help="the User-Agent header")
    p.add_argument("-b", "--cookie", metavar="'N=V; N2=V2'", help="cookies to send")
    p.add_argument(
        "-w", "--write-out", metavar="FORMAT", help="print FORMAT after the transfer (%%{http_code}, ...)"
    )
    p.add_argument("-s", "--silent", action="store_true", help="no progress bar, no error message")
    p.add_argument("-S", "--show-error", action="store_true", help="with -s, still print errors")
    p.add_argument(
        "-v", "--verbose", action="store_true", help="the request, each event and the timings on stderr"
    )
    p.add_argument("--compressed", action="store_true", help="accepted for curl habits: fastnet always asks")
    p.add_argument(
        "--max-time", type=_seconds, metavar="S", help="the whole call, body included, in S seconds"
    )
    p.add_argument(
        "--connect-timeout", type=_seconds, metavar="S", help="connect timeout (default: --timeout)"
    )
    p.add_argument(
        "--timeout", type=_seconds, default=10.0, metavar="S", help="connect/read/write timeout (10)"
    )
    p.add_argument(
        "-V",
        "--version",
        dest="show_version",
        action="store_true",
        help="print the version and build, then exit",
    )
    return p


class _PrintableFormatter(logging.Formatter):
    """A log line with its control characters made visible (URLs, hosts and errors come from outside)."""

    def format(self, record: logging.LogRecord) -> str:
        return printable(super().format(record))


def _event_log() -> fastnet.LoggingEventListener:
    """``-v``: every event of the call on stderr, with the milliseconds since it started."""
    logger = logging.getLogger("fastnet.events.cli")
    logger.propagate = False
    logger.setLevel(logging.DEBUG)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_PrintableFormatter("* %(message)s"))
    logger.handlers[:] = [handler]
    return fastnet.LoggingEventListener(logger)


def _demo_server() -> MockServer:
    server = MockServer()
    server.start()
    server.default_response = MockResponse(
        200,
        headers={"Content-Type": "text/plain; charset=utf-8", "X-Served-By": "fastnet.testing.MockServer"},
        body="hello from fastnet's embedded MockServer\n",
    )
    return server


def _read_arg(value: str) -> bytes:
    """A ``-d``/``--json`` value: the text, or ``@FILE``'s bytes (``@-``: stdin)."""
    if not value.startswith("@"):
        return value.encode("utf-8")
    name = value[1:]
    try:
        if name == "-":
            return sys.stdin.buffer.read()
        with open(name, "rb") as f:
            return f.read()
    except OSError as exc:
        raise _Failure(26, f"cannot read {name}: {exc.strerror or exc}") from None


def _cookies(text: str) -> dict[str, str]:
    out = {}
    for part in text.split(";"):
        name, sep, value = part.strip().partition("=")
        if not sep or not name:
            raise _Usage(f"-b: cookies must look like 'name=value; name2=value2', not {text!r}")
        out[name] = value
    return out


def _build(args: argparse.Namespace, url: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The client options and the request options the command line asks for."""
    headers = list(args.header)
    names = {name.lower() for name, _ in headers}
    body = None
    if args.data is not None and args.json is not None:
        raise _Usage("use -d or --json, not both")
    if args.data is not None:
        body = b"&".join(_read_arg(d) for d in args.data)
        if "content-type" not in names:
            headers.append(("Content-Type", "application/x-www-form-urlencoded"))
    elif args.json is not None:
        body = b"".join(_read_arg(d) for d in args.json)
        if "content-type" not in names:
            headers.append(("Content-Type", "application/json"))
        if "accept" not in names:
            headers.append(("Accept", "application/json"))
    if args.user_agent is not None:
        headers = [(n, v) for n, v in headers if n.lower() != "user-agent"] + [
            ("User-Agent", args.user_agent)
        ]
    method = args.method or ("HEAD" if args.head else "POST" if body is not None else "GET")
    auth = None
    if args.user is not None:
        user, sep, password = args.user.partition(":")
        if not sep:
            password = ""
            if not sys.stdin.isatty():  # no terminal to ask on: never a silent empty password
                raise _Usage(
                    f"-u {user}: no password given and stdin is not a terminal to ask for one: "
                    f"pass -u '{user}:PASSWORD' (or -u '{user}:' for an empty password)"
                )
            try:
                password = getpass.getpass(f"password for {printable(user)}: ")
            except EOFError:  # Ctrl-D at the prompt: no password, as curl
                pass
        auth = (user, password)
    cert: str | tuple[str, str] | None = None
    if args.cert is not None:
        cert = (args.cert, args.key) if args.key is not None else args.cert
    elif args.key is not None:
        raise _Usage("--key needs --cert")
    connect = args.connect_timeout if args.connect_timeout is not None else args.timeout
    client: dict[str, Any] = {
        "connect_timeout": connect,
        "read_timeout": args.timeout,
        "write_timeout": args.timeout,
        "call_timeout": args.max_time,
        "follow_redirects": not args.no_location,
        "verify": False if args.insecure else (args.cacert if args.cacert is not None else True),
        "cert": cert,
        "proxy": args.proxy,
    }
    if args.max_redirs is not None:
        client["max_follow_ups"] = args.max_redirs
    request: dict[str, Any] = {
        "method": method,
        "url": url,
        "headers": headers or None,
        "body": body,
        "auth": auth,
        "cookies": _cookies(args.cookie) if args.cookie else None,
    }
    _check(args, request)
    return client, request


def _check(args: argparse.Namespace, request: dict[str, Any]) -> None:
    """Find what cannot be sent before anything is: each with curl's exit code, or a usage error."""
    try:
        fastnet.URL(request["url"])
    except ValueError as exc:
        raise _Failure(1 if "scheme" in str(exc).lower() else 3, _one_line(exc)) from None
    if args.proxy is not None:
        try:
            fastnet.Proxy.from_url(args.proxy)
        except ValueError as exc:  # curl: 7 for a proxy scheme it lacks, 5 for a proxy it cannot parse
            raise _Failure(7 if "scheme" in str(exc).lower() else 5, _one_line(exc)) from None
    try:
        fastnet.Request(**request)  # a method, a header or a cookie that cannot go on the wire
    except (ValueError, TypeError) as exc:
        raise _Usage(str(exc)) from None


# -- --write-out ----------------------------------------------------------------------------------------


def _variables(
    response: fastnet.Response | None, error: BaseException | None, code: int, downloaded: int
) -> dict[str, str | int | float]:
    """curl's ``--write-out`` variables for what happened (``downloaded``: the body bytes written)."""
    t = response.timings if response is not None else None
    tls = t is not None and t.tls > 0
    values: dict[str, str | int | float] = {
        "http_code": f"{response.status_code:03d}" if response is not None else "000",
        "response_code": response.status_code if response is not None else 0,
        "http_version": (response.protocol.split("/")[-1] if response is not None else "0"),
        "method": response.request.method if response is not None and response.request is not None else "",
        "url_effective": str(response.url.redacted()) if response is not None and response.url else "",
        "url": str(response.history[0].url.redacted())
        if response is not None and response.history and response.history[0].url
        else (str(response.url.redacted()) if response is not None and response.url else ""),
        "num_redirects": len(response.history) if response is not None else 0,
        "redirect_url": "",
        "content_type": (response.headers.get("content-type") or "") if response is not None else "",
        "size_download": downloaded,
        "size_header": 0,
        "time_namelookup": t.name_lookup if t is not None else 0.0,
        "time_connect": t.connected if t is not None else 0.0,
        "time_appconnect": t.tls_done if tls and t is not None else 0.0,
        "time_pretransfer": max(t.connected, t.tls_done) if t is not None else 0.0,
        "time_starttransfer": t.first_byte if t is not None else 0.0,
        "time_total": t.total if t is not None else 0.0,
        "time_redirect": 0.0,
        "remote_ip": (t.remote_address[0] if t is not None and t.remote_address else ""),
        "remote_port": (t.remote_address[1] if t is not None and t.remote_address else ""),
        "num_connects": 0 if t is None or t.reused else 1,
        "exitcode": code,
        "errormsg": _one_line(error) if error is not None else "",
        "speed_download": 0.0,
    }
    if response is not None:
        location = response.headers.get("location")
        if location and response.request is not None and response.is_redirect:
            try:
                values["redirect_url"] = str(response.request.url.resolve(location))
            except ValueError:
                values["redirect_url"] = location
        head = f"{response.protocol} {response.status_code} {response.reason}\r\n"
        head += "".join(f"{n}: {v}\r\n" for n, v in response.headers.items()) + "\r\n"
        values["size_header"] = len(head.encode("latin-1", "replace"))
        if response.history and t is not None and t.request_start > 0:
            # the final exchange started after the redirects (and its own connection, if it made one)
            values["time_redirect"] = max(0.0, t.request_start - t.call_start - (t.dns + t.connect + t.tls))
        total = t.total if t is not None else 0.0  # values["time_total"]
        values["speed_download"] = int(downloaded / total) if total > 0 else 0
    return values


def write_out(
    fmt: str,
    response: fastnet.Response | None,
    error: BaseException | None,
    code: int,
    downloaded: int = 0,
    *,
    warn: bool = True,
) -> str:
    """curl's ``-w``: ``%{name}`` variables (times in seconds with 6 decimals), ``%{json}`` for all of
    them, ``%%``, and ``\\n``, ``\\r``, ``\\t``. An unknown variable is left as it is and, with
    ``warn``, named on stderr once, as curl does."""
    values = _variables(response, error, code, downloaded)
    unknown: set[str] = set()
    out: list[str] = []
    i = 0
    while i < len(fmt):
        ch = fmt[i]
        if ch == "%" and fmt.startswith("%%", i):
            out.append("%")
            i += 2
            continue
        if ch == "%" and fmt.startswith("%{", i):
            end = fmt.find("}", i)
            if end > 0:
                name = fmt[i + 2 : end]
                if name == "json":
                    out.append(json.dumps(values, sort_keys=True))
                elif name in values:
                    value = values[name]
                    out.append(f"{value:.6f}" if isinstance(value, float) else printable(str(value)))
                else:
                    out.append(fmt[i : end + 1])  # an unknown variable is left as it is
                    if warn and name not in unknown:
                        unknown.add(name)
                        print(f"fastnet: unknown --write-out variable: '{printable(name)}'", file=sys.stderr)
                i = end + 1
                continue
        if ch == "\\" and i + 1 < len(fmt) and fmt[i + 1] in "nrt\\":
            out.append({"n": "\n", "r": "\r", "t": "\t", "\\": "\\"}[fmt[i + 1]])
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


# -- running --------------------------------------------------------------------------------------------


def _one_line(error: BaseException) -> str:
    text = str(error)
    if isinstance(error, fastnet.TlsVerificationError):  # the hint in the command line's words
        hint = error.hint
        text = text.removesuffix(hint) + _cli_hint(hint)
    return " ".join(f"{type(error).__name__}: {text}".split())


def _cli_hint(hint: str) -> str:
    """A :class:`fastnet.TlsVerificationError` hint, which names the Python options, with the command
    line's options instead (``--cacert FILE``, ``-k/--insecure``)."""
    return hint.replace("verify='/path/to/ca.pem'", "--cacert FILE").replace(
        "verify=False turns verification off", "-k/--insecure turns verification off"
    )


def _head_bytes(response: fastnet.Response, terminal: bool) -> bytes:
    """The status line and headers as received, or made printable for a ``terminal``."""
    lines = [f"{response.protocol} {response.status_code} {response.reason}".rstrip()]
    lines += [f"{name}: {value}" for name, value in response.headers.items()]
    if terminal:
        lines = [printable(line) for line in lines]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1", "replace")


class _Progress:
    """A rich progress bar on stderr for ``-o`` (a no-op when rich is missing or not wanted)."""

    def __init__(self, wanted: bool, total: int | None, name: str) -> None:
        self.bar: Progress | None = None
        self.task: TaskID | None = None
        if not wanted:
            return
        try:
            from rich import progress  # optional: fastnet-http[cli]
            from rich.console import Console
            from rich.markup import escape
        except ImportError:
            return
        self.bar = progress.Progress(
            progress.TextColumn("[bold]{task.description}"),
            progress.BarColumn(),
            progress.DownloadColumn(),
            progress.TransferSpeedColumn(),
            progress.TimeRemainingColumn(),
            console=Console(file=sys.stderr),
            transient=False,
        )
        self.bar.start()
        self.task = self.bar.add_task(escape(printable(name)), total=total)  # no markup either

    def advance(self, n: int) -> None:
        if self.bar is not None:
            self.bar.update(self.task, advance=n)  # type: ignore[arg-type]  # with the bar

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


def _declared_length(response: fastnet.Response) -> int | None:
    head = response.network_response if response.network_response is not None else response
    value = head.headers.get("content-length")
    if response.network_response is not None:
        return None  # the bar counts decoded bytes; the declared length is the compressed one
    return int(value) if value is not None and value.isdigit() else None


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """``fastnet get`` with parsed ``args``."""
    quiet_errors = args.silent and not args.show_error
    server = None
    url = args.url
    if url is None:
        server = _demo_server()
        url = server.url("/")
    elif "://" not in url:
        url = "http://" + url  # as curl does
    response: fastnet.Response | None = None
    error: BaseException | None = None
    code = 0
    downloaded = 0
    out = sys.stdout.buffer
    fmt = args.write_out
    try:
        try:
            client_options, request = _build(args, url)
        except _Usage as exc:
            parser.error(printable(str(exc)))
        if fmt is not None and fmt.startswith("@"):  # read before the transfer, as curl does
            fmt = _read_arg(fmt).decode("utf-8", "replace")
        sent: list[fastnet.Request] = []

        def capture(
            chain: fastnet.Chain,
        ) -> fastnet.Response:  # a network interceptor: the request as it goes on the wire
            sent.append(chain.request)
            return chain.proceed(chain.request)

        try:
            client = fastnet.Client(
                event_listener=_event_log() if args.verbose else None,
                network_interceptors=[capture] if args.verbose else [],
                **client_options,
            )
        except ValueError as exc:  # a CA bundle (77) or a client certificate (58) that cannot be loaded
            text = str(exc)
            raise _Failure(
                77 if text.startswith("verify") else 58 if text.startswith(("cert", "key")) else 2,
                _one_line(exc),
            ) from None
        target: IO[bytes] | None = None
        try:
            with client:
                method = request.pop("method")
                with client.stream(method, request.pop("url"), **request) as response:
                    if args.verbose:
                        _show_exchange(sent, response)
                    if args.fail and response.status_code >= 400:
                        raise _Failure(
                            22, f"The requested URL returned error: {response.status_code} {response.reason}"
                        )
                    if args.output is not None and args.output != "-":
                        try:
                            target = open(args.output, "wb")  # noqa: SIM115 - closed in the finally below
                        except OSError as exc:
                            raise _Failure(23, f"cannot write {args.output}: {exc.strerror or exc}") from None
                    sink = target if target is not None else out
                    terminal = target is None and out.isatty()
                    if args.include or args.head:
                        for prior in response.history:
                            _write(sink, _head_bytes(prior, terminal))
                        _write(sink, _head_bytes(response, terminal))
                    if not args.head:
                        # to a terminal, a body with control sequences is refused, unless -o - asks for it
                        guard = TerminalGuard() if terminal and args.output is None else None
                        progress = _Progress(
                            target is not None and not args.silent and sys.stdout.isatty(),
                            _declared_length(response),
                            args.output or "",
                        )
                        try:
                            for chunk in response.iter_bytes():
                                if guard is not None and not guard.safe(chunk):
                                    raise _Failure(23, BINARY_OUTPUT)
                                _write(sink, chunk)
                                downloaded += len(chunk)
                                progress.advance(len(chunk))
                        finally:
                            progress.close()
                    _write(sink, b"")  # flushes: a full disk shows here at the latest
        finally:
            if target is not None:
                with contextlib.suppress(OSError):  # flushed above, or already failing
                    target.close()
    except _Failure as exc:
        error = exc
        code = exc.code
        if not quiet_errors:
            print(f"fastnet: ({code}) {printable(str(exc))}", file=sys.stderr)
    except (fastnet.NetworkError, ValueError, TypeError) as exc:
        error = exc
        code = exit_code(exc, received=response is not None)
        if not quiet_errors:
            print(f"fastnet: ({code}) {printable(_one_line(exc))}", file=sys.stderr)
    finally:
        if server is not None:
            server.shutdown()
    if args.verbose and response is not None and response.timings is not None:
        print(printable(f"* {response.timings!r}"), file=sys.stderr)
    if fmt is not None:
        try:
            sys.stdout.write(write_out(fmt, response, error, code, downloaded, warn=not quiet_errors))
            sys.stdout.flush()
        except OSError as exc:
            if code == 0:
                code = 23
                if not quiet_errors:
                    print(f"fastnet: (23) write error: {exc.strerror or exc}", file=sys.stderr)
    return code


def _write(sink: IO[bytes], data: bytes) -> None:
    """Write ``data`` (nothing: flush) to the output; a failure is curl's write error, 23."""
    try:
        if data:
            sink.write(data)
        else:
            sink.flush()
    except OSError as exc:
        raise _Failure(23, f"write error: {exc.strerror or exc}") from None


def _show_exchange(sent: list[fastnet.Request], response: fastnet.Response) -> None:
    """``-v``: the request as sent and the response head, curl-style, on stderr."""
    lines = []
    if sent:
        request = sent[-1]
        lines.append(f"> {request.method} {request.url.target} HTTP/1.1")
        for name, value in request.headers.items():
            if name.lower() in _SECRET_HEADERS:
                scheme, _, _ = value.partition(" ")
                value = f"{scheme} ***" if scheme != value else "***"  # no credentials in the log
            lines.append(f"> {name}: {value}")
        lines.append(">")
    lines.append(f"< {response.protocol} {response.status_code} {response.reason}")
    lines += [f"< {name}: {value}" for name, value in response.headers.items()]
    lines.append("<")
    sys.stderr.write("".join(printable(line) + "\n" for line in lines))
    sys.stderr.flush()
