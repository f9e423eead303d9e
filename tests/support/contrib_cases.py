"""The table of behaviours every integration runs, with fastnet's engine and with its framework's own.

Each ``Case`` is one exchange (a redirect is followed by the framework): where it goes (MockServer, the
testbed's nginx, squid and dante, a refused port, the blackhole), what is sent, and what is expected in
neutral terms (``Expect``): a status, a body, some headers, or an error *kind*. Each framework's test module
maps a kind to its own exception classes (``requests.ReadTimeout``, ``httpx.ReadTimeout``, a Locust
failure, Scrapy's errback) and runs every case with both engines; where the two engines differ on purpose,
the module lists the case in its ``DIFFERENCES`` with the reason, and that engine's expectation is
replaced there, so every difference is written down next to the test that shows it.

``Servers`` holds what the cases need: a plain and a TLS MockServer whose dispatcher answers by path (so
any number of clients, in this process or another, can run the table in any order), and the testbed.
"""

from __future__ import annotations

import gzip
import hashlib
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fastnet.testing import MockResponse, MockServer, SocketPolicy
from tests.support.testbed import Testbed

#: Error kinds a case may expect.
KINDS = (
    "connect_timeout",  # no TCP connection within the connect timeout
    "read_timeout",  # no response head within the read timeout
    "refused",  # nothing listens there
    "closed",  # the server closed before answering
    "protocol",  # the server's answer is not HTTP/1.1
    "body",  # the body broke off (fewer bytes than Content-Length)
    "ssl",  # the certificate is not trusted
    "proxy",  # the proxy refused the tunnel
)

STALL_BODY = b"s" * 20_000  # STALL_BODY sends half of it, then hangs


@dataclass(frozen=True)
class Expect:
    status: int | None = None
    reason: str | None = None
    body: bytes | None = None
    body_sha256: str | None = None
    body_length: int | None = None
    headers: dict[str, str] = field(
        default_factory=dict
    )  # name (lower case) -> value, as the framework joins
    header_contains: dict[str, str] = field(default_factory=dict)
    history: tuple[int, ...] | None = None  # statuses of the redirects followed
    first_chunk: bool = False  # streamed: the first piece arrives before the server finished the body
    error: str | None = None  # one of KINDS
    sent: dict[str, Any] = field(default_factory=dict)  # what the server must have received


@dataclass(frozen=True)
class Case:
    id: str
    target: str  # mock, mock_tls, nginx, nginx_tls, refused, blackhole
    path: str = "/"
    mock: MockResponse | None = None
    method: str = "GET"
    body: bytes | None = None
    body_chunks: tuple[bytes, ...] | None = None  # sent from a generator (chunked upload)
    headers: tuple[tuple[str, str], ...] = ()
    timeout: tuple[float, float] = (5.0, 5.0)  # (connect, read)
    proxy: str | None = None  # squid, squid_auth, squid_auth_creds, socks5, socks5h
    host: str = "127.0.0.1"  # the origin's host in the URL
    verify: bool = True  # trust the test CA (False: the default trust store, which does not)
    stream: bool = False  # read only the first piece of the body, then close
    expect: Expect = field(default_factory=Expect)
    needs: str | None = None  # "blackhole"

    def __str__(self) -> str:
        return self.id


_GZIPPED = gzip.compress(b"compressed " * 100)

CASES: tuple[Case, ...] = (
    Case("status-200", "nginx", "/index.html", expect=Expect(200, "OK", b"hello from nginx")),
    Case("status-404", "nginx", "/status/404", expect=Expect(404, "Not Found")),
    Case(
        "head",
        "nginx",
        "/index.html",
        method="HEAD",
        expect=Expect(200, body=b"", headers={"content-length": "16"}),
    ),
    Case(
        "repeated-headers",
        "mock",
        "/headers",
        MockResponse(200, headers=[("X-Dup", "a"), ("X-Dup", "b"), ("X-Case", "MiXeD")], body=b"h"),
        expect=Expect(200, body=b"h", headers={"x-dup": "a, b", "x-case": "MiXeD"}),
    ),
    Case(
        "reason-phrase",
        "mock",
        "/reason",
        MockResponse(299, reason="Custom Reason", body=b"r"),
        expect=Expect(299, "Custom Reason", b"r"),
    ),
    Case(
        "body-1mib", "nginx", "/1m.bin", expect=Expect(200, body_length=1 << 20, body_sha256="nginx:1m.bin")
    ),
    Case(
        "chunked",
        "mock",
        "/chunked",
        MockResponse(200, body=b"0123456789" * 300, chunked=True, chunk_size=1000),
        expect=Expect(200, body=b"0123456789" * 300),
    ),
    Case(
        "gzip",
        "mock",
        "/gzip",
        MockResponse(200, headers={"Content-Encoding": "gzip"}, body=_GZIPPED),
        expect=Expect(200, body=b"compressed " * 100),
    ),
    Case(
        "post-bytes",
        "mock",
        "/post",
        MockResponse(201, body=b"created"),
        method="POST",
        body=b"payload=1",
        headers=(("Content-Type", "application/x-www-form-urlencoded"),),
        expect=Expect(201, body=b"created", sent={"body": b"payload=1", "content-length": "9"}),
    ),
    Case(
        "post-stream",
        "mock",
        "/upload",
        MockResponse(200, body=b"got it"),
        method="POST",
        body_chunks=(b"part1,", b"part2,", b"part3"),
        expect=Expect(200, body=b"got it", sent={"body": b"part1,part2,part3", "chunked": True}),
    ),
    Case(
        "stream-first-piece",
        "mock",
        "/stall",
        MockResponse(200, body=STALL_BODY, policy=SocketPolicy.STALL_BODY),
        stream=True,
        expect=Expect(200, first_chunk=True),
    ),
    Case(
        "read-timeout",
        "mock",
        "/slow",
        MockResponse(200, body=b"late", head_delay=3.0),
        timeout=(5.0, 0.3),
        expect=Expect(error="read_timeout"),
    ),
    Case(
        "connect-timeout",
        "blackhole",
        timeout=(0.3, 5.0),
        expect=Expect(error="connect_timeout"),
        needs="blackhole",
    ),
    Case("refused", "refused", expect=Expect(error="refused")),
    Case(
        "closed-before-response",
        "mock",
        "/close",
        MockResponse(policy=SocketPolicy.DISCONNECT_AFTER_REQUEST),
        expect=Expect(error="closed"),
    ),
    Case(
        "not-http",
        "mock",
        "/garbage",
        MockResponse(raw=b"SSH-2.0-OpenSSH_9.2\r\n\r\n", policy=SocketPolicy.CLOSE_AFTER_RESPONSE),
        expect=Expect(error="protocol"),
    ),
    Case(
        "truncated-body",
        "mock",
        "/short",
        MockResponse(
            raw=b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly this",
            policy=SocketPolicy.CLOSE_AFTER_RESPONSE,
        ),
        expect=Expect(error="body"),
    ),
    Case("tls", "nginx_tls", "/index.html", expect=Expect(200, body=b"hello from nginx")),
    Case("tls-untrusted", "nginx_tls", "/index.html", verify=False, expect=Expect(error="ssl")),
    Case("redirect", "nginx", "/redirect", expect=Expect(200, history=(302,), header_contains={})),
    Case(
        "proxy-http",
        "nginx",
        "/whoami",
        proxy="squid",
        host="127.0.0.2",
        expect=Expect(200, header_contains={"via": "fastnet-squid"}),
    ),
    Case(
        "proxy-connect",
        "nginx_tls",
        "/index.html",
        proxy="squid",
        expect=Expect(200, body=b"hello from nginx"),
    ),
    Case(
        "proxy-auth-creds",
        "nginx_tls",
        "/index.html",
        proxy="squid_auth_creds",
        expect=Expect(200, body=b"hello from nginx"),
    ),
    Case("proxy-auth-missing-http", "nginx", "/whoami", proxy="squid_auth", expect=Expect(407)),
    Case(
        "proxy-auth-missing-connect",
        "nginx_tls",
        "/index.html",
        proxy="squid_auth",
        expect=Expect(error="proxy"),
    ),
    Case("proxy-socks5", "nginx", "/whoami", proxy="socks5", expect=Expect(200, header_contains={})),
    Case(
        "proxy-socks5h",
        "nginx",
        "/whoami",
        proxy="socks5h",
        host="localhost",
        expect=Expect(200, header_contains={}),
    ),
)

BY_ID = {case.id: case for case in CASES}


class Servers:
    """The servers the table runs against: two MockServers answering by path, and the testbed."""

    def __init__(self, testbed: Testbed, extra: tuple[Case, ...] = ()) -> None:
        self.testbed = testbed
        self.mock = MockServer()
        self.mock_tls = MockServer(tls=True)
        routes = {case.path: case.mock for case in (*CASES, *extra) if case.mock is not None}
        for server in (self.mock, self.mock_tls):
            server.dispatcher = lambda request, routes=routes: routes.get(request.path) or MockResponse(404)
            server.start()
        self._records: dict[str, list[Any]] = {}

    def close(self) -> None:
        self.mock.shutdown()
        self.mock_tls.shutdown()

    def url(self, case: Case) -> str:
        tb = self.testbed
        if case.target == "mock":
            return self.mock.url(case.path)
        if case.target == "mock_tls":
            return self.mock_tls.url(case.path)
        if case.target == "nginx":
            return tb.url(case.path, host=case.host)
        if case.target == "nginx_tls":
            return tb.url(case.path, host=case.host, tls=True)
        if case.target == "refused":
            return f"http://{tb.refused[0]}:{tb.refused[1]}/"
        if case.target == "blackhole":
            return f"http://{tb.blackhole_host}:{tb.blackhole_port}/"
        raise ValueError(case.target)

    def proxy_url(self, case: Case) -> str | None:
        tb = self.testbed
        if case.proxy is None:
            return None
        if case.proxy == "squid":
            return f"http://{tb.squid_open[0]}:{tb.squid_open[1]}"
        if case.proxy == "squid_auth":
            return f"http://{tb.squid[0]}:{tb.squid[1]}"
        if case.proxy == "squid_auth_creds":
            return f"http://{tb.squid_user}:{tb.squid_password}@{tb.squid[0]}:{tb.squid[1]}"
        if case.proxy == "socks5":
            return f"socks5://{tb.socks5[0]}:{tb.socks5[1]}"
        if case.proxy == "socks5h":
            return f"socks5h://{tb.socks5[0]}:{tb.socks5[1]}"
        raise ValueError(case.proxy)

    @property
    def ca_path(self) -> str:
        return str(self.testbed.ca_path)

    def expected_sha256(self, marker: str) -> str:
        kind, _, name = marker.partition(":")
        assert kind == "nginx"
        return hashlib.sha256((Path(self.testbed.root) / "nginx" / "www" / name).read_bytes()).hexdigest()

    def skip_reason(self, case: Case) -> str | None:
        if case.needs == "blackhole" and not self.testbed.blackhole_available:
            return "the testbed's blackhole (nft) is not available"
        return None

    def recorded(self, case: Case) -> Any:
        """The request the MockServer received for ``case`` (the last one on its path)."""
        server = self.mock_tls if case.target == "mock_tls" else self.mock
        while True:
            found = self._records.get(case.path)
            try:
                request = server.take_request(timeout=0.01 if found else 5.0)
            except TimeoutError:
                break
            self._records.setdefault(request.path, []).append(request)
        assert found, f"the server received no request for {case.path}"
        return found[-1]


@dataclass
class Observed:
    """What a framework made of one case: a response, or an error of some kind."""

    status: int | None = None
    reason: str | None = None
    body: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)  # lower-case name -> the framework's value
    history: tuple[int, ...] = ()
    first_chunk: bytes | None = None
    error: str | None = None  # the kind, as the framework module classified it
    error_type: str | None = None  # the exception's class, for the failure message

    def to_json(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        for key in ("body", "first_chunk"):
            if out[key] is not None:
                out[key] = out[key].decode("latin-1")
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Observed:
        for key in ("body", "first_chunk"):
            if data.get(key) is not None:
                data[key] = data[key].encode("latin-1")
        data["history"] = tuple(data.get("history") or ())
        return cls(**data)


def check(case: Case, expect: Expect, seen: Observed, servers: Servers) -> list[str]:
    """What differs between ``expect`` and ``seen`` (empty when the case passed)."""
    problems: list[str] = []
    if expect.error is not None:
        if seen.error != expect.error:
            problems.append(
                f"expected a {expect.error} error, got {seen.error or seen.status} ({seen.error_type})"
            )
        return problems
    if seen.error is not None:
        return [f"expected a response, got a {seen.error} error ({seen.error_type})"]
    if expect.status is not None and seen.status != expect.status:
        problems.append(f"status {seen.status} != {expect.status}")
    if expect.reason is not None and seen.reason != expect.reason:
        problems.append(f"reason {seen.reason!r} != {expect.reason!r}")
    if expect.body is not None and seen.body != expect.body:
        problems.append(f"body {seen.body[:60] if seen.body else seen.body!r} != {expect.body[:60]!r}")
    if expect.body_length is not None and (seen.body is None or len(seen.body) != expect.body_length):
        problems.append(
            f"body length {None if seen.body is None else len(seen.body)} != {expect.body_length}"
        )
    if expect.body_sha256 is not None:
        digest = hashlib.sha256(seen.body or b"").hexdigest()
        if digest != servers.expected_sha256(expect.body_sha256):
            problems.append("body differs from the file nginx served")
    for name, value in expect.headers.items():
        if seen.headers.get(name) != value:
            problems.append(f"header {name}: {seen.headers.get(name)!r} != {value!r}")
    for name, part in expect.header_contains.items():
        if part not in (seen.headers.get(name) or ""):
            problems.append(f"header {name}: {seen.headers.get(name)!r} lacks {part!r}")
    if expect.history is not None and seen.history != expect.history:
        problems.append(f"history {seen.history} != {expect.history}")
    if expect.first_chunk and not seen.first_chunk:
        problems.append("no first piece of the streamed body")
    if expect.sent:
        recorded = servers.recorded(case)
        for key, value in expect.sent.items():
            if key == "body":
                got: Any = recorded.body
            elif key == "chunked":
                got = recorded.chunked
            else:
                got = recorded.header(key)
            if got != value:
                problems.append(f"server received {key}={got!r}, expected {value!r}")
    return problems


def body_chunks(case: Case) -> Iterator[bytes]:
    """The upload of a ``body_chunks`` case, as a one-shot generator."""
    yield from case.body_chunks or ()


#: CONNECT answers a proxy may get wrong, by the port the CONNECT asks for (``ConnectProxy``).
BAD_CONNECT_REPLIES: dict[int, bytes] = {
    10001: b"garbage that is not HTTP\r\n\r\n",
    10002: b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n",
    10003: b"HTTP/1.1 200 Conn",  # cut short, then closed
    10004: b"SSH-2.0-OpenSSH_9.6\r\n",  # another protocol's banner, then closed
}


class ConnectProxy:
    """A proxy on loopback that answers each CONNECT with ``replies[port]`` (the port it asks for) and
    closes; ``url`` is its address."""

    def __init__(self, replies: dict[int, bytes]) -> None:
        self.replies = replies
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.2)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(5)
                head = b""
                try:
                    while b"\r\n\r\n" not in head and len(head) < 65536:
                        data = conn.recv(4096)
                        if not data:
                            break
                        head += data
                    conn.sendall(self.replies[int(head.split(b" ", 2)[1].rpartition(b":")[2])])
                except (OSError, ValueError, IndexError, KeyError):
                    pass

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self._listener.close()
