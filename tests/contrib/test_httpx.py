"""``fastnet.contrib.httpx``: ``FastnetTransport`` against ``httpx.HTTPTransport`` and
``AsyncFastnetTransport`` against httpx's async transport, on the shared table of behaviours
(``contrib_cases.CASES``); then what the table does not cover: cookies and redirects left to httpx,
streaming uploads from files, the transport's options, errors while a body streams.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

import fastnet
from fastnet.testing import MockResponse, MockServer, SocketPolicy
from tests.support.contrib_cases import (
    BAD_CONNECT_REPLIES,
    CASES,
    Case,
    ConnectProxy,
    Observed,
    Servers,
    body_chunks,
    check,
)
from tests.support.testbed import Testbed

httpx = pytest.importorskip("httpx")
pytest.importorskip("socksio")  # httpx's SOCKS support

from fastnet.contrib.httpx import AsyncFastnetTransport, FastnetTransport  # noqa: E402

pytestmark = pytest.mark.testbed

ENGINES = ("fastnet", "stock", "fastnet-async", "stock-async")

#: Where fastnet's transports differ from httpx's own on purpose: (case, engine) -> (why, expectation).
DIFFERENCES: dict[tuple[str, str], tuple[str, dict[str, Any]]] = {}

#: httpx raises RemoteProtocolError for all three; the table's kinds collapse into it.
_COLLAPSED = {"closed": "remote_protocol", "protocol": "remote_protocol", "body": "remote_protocol"}


def _caused_by_tls(exc: BaseException) -> bool:
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, (ssl.SSLError, fastnet.TlsError)):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def kind(exc: BaseException) -> str:
    if isinstance(exc, httpx.ConnectTimeout):
        return "connect_timeout"
    if isinstance(exc, httpx.ReadTimeout):
        return "read_timeout"
    if isinstance(exc, httpx.ProxyError):
        return "proxy"
    if isinstance(exc, httpx.ConnectError):
        return "ssl" if _caused_by_tls(exc) else "refused"
    if isinstance(exc, httpx.RemoteProtocolError):
        return "remote_protocol"
    return type(exc).__name__


@pytest.fixture(scope="module")
def servers(testbed: Testbed) -> Iterator[Servers]:
    s = Servers(testbed)
    yield s
    s.close()


class Clients:
    """One httpx client per (proxy, verify) for an engine, as httpx users mount a transport per proxy."""

    def __init__(self, engine: str) -> None:
        self.engine = engine
        self.is_async = engine.endswith("async")
        self.clients: dict[tuple[str | None, Any], Any] = {}
        self.loop = asyncio.new_event_loop() if self.is_async else None

    def get(self, proxy: str | None, verify: Any) -> Any:
        key = (proxy, verify)
        client = self.clients.get(key)
        if client is None:
            if self.engine == "fastnet":
                transport: Any = FastnetTransport(verify=verify, proxy=proxy)
            elif self.engine == "stock":
                transport = httpx.HTTPTransport(verify=verify, proxy=proxy)
            elif self.engine == "fastnet-async":
                transport = AsyncFastnetTransport(verify=verify, proxy=proxy)
            else:
                transport = httpx.AsyncHTTPTransport(verify=verify, proxy=proxy)
            kind_ = httpx.AsyncClient if self.is_async else httpx.Client
            client = kind_(transport=transport, follow_redirects=True)
            self.clients[key] = client
        return client

    def close(self) -> None:
        for client in self.clients.values():
            if self.is_async:
                assert self.loop is not None
                self.loop.run_until_complete(client.aclose())
            else:
                client.close()
        if self.loop is not None:
            self.loop.close()


@pytest.fixture(scope="module", params=ENGINES)
def clients(request: pytest.FixtureRequest) -> Iterator[Clients]:
    c = Clients(request.param)
    yield c
    c.close()


_CONTEXTS: dict[str, ssl.SSLContext] = {}


def _context(ca_path: str) -> ssl.SSLContext:
    """httpx deprecates ``verify=<path>``: both engines get the same context trusting the test CA."""
    if ca_path not in _CONTEXTS:
        _CONTEXTS[ca_path] = ssl.create_default_context(cafile=ca_path)
    return _CONTEXTS[ca_path]


def _kwargs(case: Case, servers: Servers) -> dict[str, Any]:
    kwargs: dict[str, Any] = {"timeout": httpx.Timeout(5.0, connect=case.timeout[0], read=case.timeout[1])}
    kwargs["headers"] = dict(case.headers)
    if case.body is not None:
        kwargs["content"] = case.body
    return kwargs


def run_sync(client: Any, case: Case, url: str, kwargs: dict[str, Any]) -> Observed:
    if case.body_chunks is not None:
        kwargs["content"] = body_chunks(case)
    with client.stream(case.method, url, **kwargs) as r:
        seen = Observed(r.status_code, r.reason_phrase, headers={k: v for k, v in r.headers.items()})
        seen.history = tuple(h.status_code for h in r.history)
        if case.stream:
            seen.first_chunk = next(r.iter_bytes(), None)
        else:
            seen.body = r.read()
    return seen


async def _agen(case: Case) -> AsyncIterator[bytes]:
    for chunk in case.body_chunks or ():
        yield chunk


async def run_async(client: Any, case: Case, url: str, kwargs: dict[str, Any]) -> Observed:
    if case.body_chunks is not None:
        kwargs["content"] = _agen(case)
    async with client.stream(case.method, url, **kwargs) as r:
        seen = Observed(r.status_code, r.reason_phrase, headers={k: v for k, v in r.headers.items()})
        seen.history = tuple(h.status_code for h in r.history)
        if case.stream:
            async for chunk in r.aiter_bytes():
                seen.first_chunk = chunk
                break
        else:
            seen.body = await r.aread()
    return seen


def run_case(clients: Clients, case: Case, servers: Servers) -> Observed:
    url = servers.url(case)
    client = clients.get(servers.proxy_url(case), _context(servers.ca_path) if case.verify else True)
    kwargs = _kwargs(case, servers)
    try:
        if clients.is_async:
            assert clients.loop is not None
            return clients.loop.run_until_complete(asyncio.wait_for(run_async(client, case, url, kwargs), 20))
        return run_sync(client, case, url, kwargs)
    except httpx.TransportError as exc:
        return Observed(error=kind(exc), error_type=type(exc).__name__)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_table(clients: Clients, case: Case, servers: Servers) -> None:
    reason = servers.skip_reason(case)
    if reason:
        pytest.skip(reason)
    expect = case.expect
    if expect.error in _COLLAPSED:
        expect = type(expect)(error=_COLLAPSED[expect.error])
    difference = DIFFERENCES.get((case.id, clients.engine))
    if difference is not None:
        expect = type(expect)(**{**expect.__dict__, **difference[1]})
    problems = check(case, expect, run_case(clients, case, servers), servers)
    assert not problems, f"{clients.engine}: {problems}"


# ------------------------------------------------------------------------------ beyond the table


@pytest.fixture
def client() -> Iterator[Any]:
    with httpx.Client(transport=FastnetTransport()) as c:
        yield c


def test_cookies_and_redirects_are_httpx_own(client: Any, server: MockServer) -> None:
    server.enqueue(
        MockResponse(302, headers=[("Location", "/next"), ("Set-Cookie", "sid=42; Path=/")]),
        MockResponse(200, body=b"done"),
    )
    r = client.get(server.url("/start"), follow_redirects=True)
    assert r.text == "done" and [h.status_code for h in r.history] == [302]
    assert client.cookies.get("sid") == "42"
    server.take_request()
    assert server.take_request().header("Cookie") == "sid=42"


def test_wire_headers_are_httpx_own(client: Any, server: MockServer) -> None:
    server.enqueue(MockResponse(200))
    client.get(server.url("/"))
    sent = server.take_request()
    assert (sent.header("User-Agent") or "").startswith("python-httpx/")
    assert (sent.header("Accept-Encoding") or "").startswith("gzip, deflate")
    assert [name for name, _ in sent.headers][0].lower() == "host"


def test_upload_from_a_file_keeps_httpx_content_length(
    client: Any, server: MockServer, tmp_path: Any
) -> None:
    path = tmp_path / "upload.bin"
    path.write_bytes(b"x" * 100_000)
    server.enqueue(MockResponse(200))
    with open(path, "rb") as f:
        client.post(server.url("/"), content=f)
    sent = server.take_request()
    assert sent.header("Content-Length") == "100000" and sent.body == b"x" * 100_000


def test_streamed_body_error_is_httpx_error(client: Any, server: MockServer) -> None:
    server.enqueue(MockResponse(200, body=b"y" * 20_000, policy=SocketPolicy.STALL_BODY))
    with client.stream("GET", server.url("/"), timeout=httpx.Timeout(5, read=0.3)) as r:
        with pytest.raises(httpx.ReadTimeout):
            r.read()


def test_unsupported_options_and_schemes() -> None:
    with pytest.raises(ValueError, match="HTTP/1.1"):
        FastnetTransport(http2=True)
    with pytest.raises(ValueError, match="uds"):
        FastnetTransport(uds="/tmp/x.sock")
    with pytest.raises(ValueError, match="scheme"):
        FastnetTransport(proxy="ftp://127.0.0.1:21")
    with httpx.Client(transport=FastnetTransport()) as c, pytest.raises(httpx.UnsupportedProtocol):
        c.get("ftp://127.0.0.1/")


def test_local_address(server: MockServer) -> None:
    server.enqueue(MockResponse(200, body=b"ok"))
    with httpx.Client(transport=FastnetTransport(local_address="127.0.0.2")) as c:
        assert c.get(server.url("/")).text == "ok"
    assert server.take_request().client_address[0] == "127.0.0.2"  # type: ignore[index]


def test_limits_and_given_client(server: MockServer) -> None:
    transport = FastnetTransport(limits=httpx.Limits(max_connections=3, max_keepalive_connections=7))
    pool = transport.client.connection_pool
    assert pool.max_idle_connections == 7 and pool.max_connections_per_host == 3
    transport.close()
    base = fastnet.Client(trust_env=False, follow_redirects=True)
    given = FastnetTransport(client=base)
    assert given.client.follow_redirects is False and given.client.connection_pool is base.connection_pool
    server.enqueue(MockResponse(200, body=b"ok"))
    with httpx.Client(transport=given) as c:
        assert c.get(server.url("/")).text == "ok"
    with pytest.raises(TypeError):
        FastnetTransport(client=base, dns=None)
    base.close()


def test_timeouts_pick_siblings_that_share_the_pool(client: Any, server: MockServer) -> None:
    for _ in range(3):
        server.enqueue(MockResponse(200, body=b"x"))
    client.get(server.url("/"), timeout=3)
    client.get(server.url("/"), timeout=httpx.Timeout(1, read=2))
    client.get(server.url("/"), timeout=httpx.Timeout(1, read=2))
    transport = client._transport
    assert len(transport._siblings) == 2
    assert transport.client.connection_pool.connection_count() == 1


def _transport(engine: str, **options: Any) -> Any:
    return {
        "fastnet": FastnetTransport,
        "stock": httpx.HTTPTransport,
        "fastnet-async": AsyncFastnetTransport,
        "stock-async": httpx.AsyncHTTPTransport,
    }[engine](**options)


@pytest.mark.parametrize("engine", ENGINES)
def test_pool_timeout(engine: str, server: MockServer) -> None:
    """One connection allowed and held by a stream: httpx's ``pool`` timeout ends the wait for it, even with
    no connect timeout."""
    for _ in range(3):
        server.enqueue(MockResponse(200, body=b"x"))
    transport = _transport(engine, limits=httpx.Limits(max_connections=1))
    timeout = httpx.Timeout(None, pool=1e-4)

    def blocking() -> None:
        with httpx.Client(transport=transport) as c, c.stream("GET", server.url("/held")):
            with pytest.raises(httpx.PoolTimeout):
                c.get(server.url("/waits"), timeout=timeout)
            with pytest.raises(httpx.PoolTimeout):
                c.get(server.url("/waits"), timeout=httpx.Timeout(5.0, pool=0.05))

    async def in_asyncio() -> None:
        async with httpx.AsyncClient(transport=transport) as c, c.stream("GET", server.url("/held")):
            with pytest.raises(httpx.PoolTimeout):
                await c.get(server.url("/waits"), timeout=timeout)
            with pytest.raises(httpx.PoolTimeout):
                await c.get(server.url("/waits"), timeout=httpx.Timeout(5.0, pool=0.05))

    if engine.endswith("async"):
        asyncio.run(asyncio.wait_for(in_asyncio(), 20))
    else:
        blocking()
    if engine.startswith("fastnet"):  # the deadline was put back: a later request is not cut short
        pool = transport.client.connection_pool
        assert pool.connection_count() == pool.idle_connection_count()


def _traced(engine: str, url: str, **options: Any) -> list[tuple[str, Any]]:
    events: list[tuple[str, Any]] = []

    def trace(name: str, info: Any) -> None:
        events.append((name, info))

    async def atrace(name: str, info: Any) -> None:
        events.append((name, info))

    transport = _transport(engine, **options)
    if engine.endswith("async"):

        async def run() -> None:
            async with httpx.AsyncClient(transport=transport) as c:
                r = await c.post(url, content=b"body", extensions={"trace": atrace})
                assert r.status_code == 200

        asyncio.run(asyncio.wait_for(run(), 20))
    else:
        with httpx.Client(transport=transport) as c:
            assert c.post(url, content=b"body", extensions={"trace": trace}).status_code == 200
    return events


@pytest.mark.parametrize("tls", [False, True], ids=["http", "https"])
@pytest.mark.parametrize("engine", ["fastnet", "fastnet-async"])
def test_trace_extension(engine: str, tls: bool, testbed: Testbed) -> None:
    """The ``trace`` extension gets httpcore's events, in httpcore's order, with what httpx's command line
    reads from them (the address connected to, the TLS object, the request, the response head)."""
    url = testbed.url("/2b", tls=tls)
    context = ssl.create_default_context(cafile=testbed.ca_path)
    stock = _traced(engine.replace("fastnet", "stock"), url, verify=context)
    events = _traced(engine, url, verify=context)
    names = [name for name, _ in events]
    stock_names = iter(name for name, _ in stock)
    assert all(name in stock_names for name in names), (names, [name for name, _ in stock])  # a subsequence
    wanted = ["connection.connect_tcp.started", "connection.connect_tcp.complete"]
    if tls:
        wanted += ["connection.start_tls.started", "connection.start_tls.complete"]
    wanted += [
        "http11.send_request_headers.started",
        "http11.send_request_headers.complete",
        "http11.send_request_body.started",
        "http11.send_request_body.complete",
        "http11.receive_response_headers.started",
        "http11.receive_response_headers.complete",
        "http11.receive_response_body.started",
        "http11.receive_response_body.complete",
        "http11.response_closed.started",
        "http11.response_closed.complete",
    ]
    assert names == wanted
    info = dict(events)
    assert info["connection.connect_tcp.started"]["host"] == "127.0.0.1"
    stream = info["connection.connect_tcp.complete"]["return_value"]
    assert stream.get_extra_info("server_addr")[1] == int(url.split(":")[2].split("/")[0])
    if tls:
        assert info["connection.start_tls.complete"]["return_value"].get_extra_info("ssl_object").version()
    request = info["http11.send_request_headers.started"]["request"]
    assert request.method == b"POST" and request.url.target == b"/2b"
    version, status, reason, headers = info["http11.receive_response_headers.complete"]["return_value"]
    assert (version, status, reason) == (b"HTTP/1.1", 200, b"OK") and (b"Server", b"nginx") in [
        (n.title(), v.split(b"/")[0]) for n, v in headers
    ]


def test_trace_drives_httpx_command_line_output(server: MockServer, capsys: Any) -> None:
    from httpx._main import trace

    server.enqueue(MockResponse(201, headers=[("X-Seen", "yes")], body=b"made"))
    with httpx.Client(transport=FastnetTransport()) as c:
        c.get(server.url("/"), extensions={"trace": lambda name, info: trace(name, info, verbose=True)})
    out = capsys.readouterr().out
    assert "HTTP/1.1 201 Created" in out and "X-Seen" in out and "GET / HTTP/1.1" in out
    assert f"Connected to '127.0.0.1' on port {server.port}" in out


def test_trace_failed_event(testbed: Testbed) -> None:
    events: list[str] = []
    with httpx.Client(transport=FastnetTransport()) as c, pytest.raises(httpx.ConnectError):
        c.get(
            f"http://{testbed.refused[0]}:{testbed.refused[1]}/",
            extensions={"trace": lambda n, i: events.append(n)},
        )
    assert events == ["connection.connect_tcp.started", "connection.connect_tcp.failed"]


def test_trace_and_pool_keep_the_clients_listener(server: MockServer) -> None:
    seen: list[str] = []

    class Listener(fastnet.EventListener):
        def connect_start(self, call: Any, route: Any) -> None:
            seen.append("connect_start")

        def response_headers_end(self, call: Any, response: Any) -> None:
            seen.append("response_headers_end")

    server.enqueue(MockResponse(200))
    transport = FastnetTransport(event_listener=Listener())
    with httpx.Client(transport=transport) as c:
        c.get(server.url("/"), extensions={"trace": lambda n, i: None}, timeout=httpx.Timeout(None, pool=3))
    assert seen == ["connect_start", "response_headers_end"]


def test_async_transport_on_trio_says_it_runs_on_asyncio(server: MockServer) -> None:
    trio = pytest.importorskip("trio")

    async def main() -> None:
        async with httpx.AsyncClient(transport=AsyncFastnetTransport()) as c:
            await c.get(server.url("/"))

    with pytest.raises(RuntimeError, match="asyncio only.*trio"):
        trio.run(main)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_407_from_a_site_is_a_response(engine: str, server: MockServer) -> None:
    """No proxy, so nothing to authenticate to: httpx's transport returns the site's 407."""
    server.enqueue(MockResponse(407, headers=[("Proxy-Authenticate", 'Basic realm="site"')], body=b"who?"))
    transport = _transport(engine)

    async def in_asyncio() -> Any:
        async with httpx.AsyncClient(transport=transport) as c:
            return await c.get(server.url("/"))

    if engine.endswith("async"):
        r = asyncio.run(asyncio.wait_for(in_asyncio(), 20))
    else:
        with httpx.Client(transport=transport) as c:
            r = c.get(server.url("/"))
    assert r.status_code == 407 and r.content == b"who?"


@pytest.mark.parametrize("engine", ENGINES)
def test_reset_before_the_head_is_a_read_error(engine: str) -> None:
    """A peer that resets the connection instead of answering: httpcore's ``ReadError`` (a clean close is
    a ``RemoteProtocolError``, in the table)."""
    import socket
    import threading

    listener = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        conn, _ = listener.accept()
        conn.recv(65536)
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")  # RST
        conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/"
    transport = _transport(engine)

    async def in_asyncio() -> None:
        async with httpx.AsyncClient(transport=transport) as c:
            await c.get(url)

    try:
        with pytest.raises(httpx.ReadError):
            if engine.endswith("async"):
                asyncio.run(asyncio.wait_for(in_asyncio(), 20))
            else:
                with httpx.Client(transport=transport) as c:
                    c.get(url)
    finally:
        thread.join(5)
        listener.close()


@pytest.fixture(scope="module")
def bad_connect_proxy() -> Iterator[str]:
    proxy = ConnectProxy(BAD_CONNECT_REPLIES)
    yield proxy.url
    proxy.close()


@pytest.mark.parametrize("port", sorted(BAD_CONNECT_REPLIES))
@pytest.mark.parametrize("engine", ENGINES)
def test_malformed_connect_replies(engine: str, port: int, bad_connect_proxy: str) -> None:
    """httpx's ``ProxyError`` is a refused CONNECT (another status than 2xx); an answer that is not HTTP or
    is cut short is the ``RemoteProtocolError`` httpcore's HTTP/1.1 reader raises."""
    expected = httpx.ProxyError if BAD_CONNECT_REPLIES[port].startswith(b"HTTP/1.1 502") else None
    transport = _transport(engine, proxy=bad_connect_proxy.replace("http://", "http://user:s3cret@"))
    url = f"https://127.0.0.1:{port}/"

    async def in_asyncio() -> None:
        async with httpx.AsyncClient(transport=transport, timeout=5) as c:
            await c.get(url)

    with pytest.raises(httpx.TransportError) as raised:
        if engine.endswith("async"):
            asyncio.run(asyncio.wait_for(in_asyncio(), 20))
        else:
            with httpx.Client(transport=transport, timeout=5) as c:
                c.get(url)
    assert type(raised.value) is (expected or httpx.RemoteProtocolError)
    assert "s3cret" not in str(raised.value) and "s3cret" not in repr(raised.value)


def test_pool_timeout_leaves_the_call_timeout_alone() -> None:
    """The pool timeout brings the call's deadline forward only until the call has its connection: a call
    timeout of the transport's client still ends a call whose response never comes (a read timeout would
    mean the call timeout was lost)."""
    import socket

    listener = socket.create_server(("127.0.0.1", 0))
    base = fastnet.Client(trust_env=False, call_timeout=0.5)
    try:
        with httpx.Client(transport=FastnetTransport(client=base)) as c:
            with pytest.raises(httpx.TimeoutException) as raised:
                c.get(f"http://127.0.0.1:{listener.getsockname()[1]}/", timeout=httpx.Timeout(3.0, pool=0.2))
            assert not isinstance(raised.value, httpx.ReadTimeout)
            assert isinstance(raised.value.__cause__, fastnet.CallTimeout)
    finally:
        base.close()
        listener.close()
