"""``fastnet.contrib.requests.FastnetAdapter`` against requests' stock ``HTTPAdapter`` on the shared table
of behaviours (``contrib_cases.CASES``), then what the table does not cover: cookies and auth left to
requests, ``stream=True`` and ``raw``, the adapter's clients, ``cert=``, ``max_retries``.
"""

from __future__ import annotations

import ssl
import threading
from collections.abc import Iterator
from typing import Any

import pytest

import fastnet
from fastnet.testing import MockResponse, MockServer, SocketPolicy
from tests.support.contrib_cases import CASES, Case, Observed, Servers, body_chunks, check
from tests.support.testbed import Testbed

requests = pytest.importorskip("requests")
pytest.importorskip("socks")  # PySocks: the stock adapter's SOCKS support

from fastnet.contrib.requests import FastnetAdapter, WriteTimeout, _RawResponse  # noqa: E402

pytestmark = pytest.mark.testbed

ENGINES = ("fastnet", "stock")

#: Where the adapter differs from the stock one on purpose: (case, engine) -> the expectation there.
DIFFERENCES: dict[tuple[str, str], tuple[str, dict[str, Any]]] = {}


def kind(exc: BaseException) -> str:
    """The table's error kind for a requests exception (requests folds several into ConnectionError)."""
    rex = requests.exceptions
    if isinstance(exc, rex.ConnectTimeout):
        return "connect_timeout"
    if isinstance(exc, rex.ReadTimeout):
        return "read_timeout"
    if isinstance(exc, rex.SSLError):
        return "ssl"
    if isinstance(exc, rex.ProxyError):
        return "proxy"
    if isinstance(exc, (rex.ChunkedEncodingError, rex.ContentDecodingError)):
        return "body"
    if isinstance(exc, rex.ConnectionError):
        return "connection"
    return type(exc).__name__


#: requests raises ConnectionError for all three; the table's kinds collapse into it.
_COLLAPSED = {"refused": "connection", "closed": "connection", "protocol": "connection"}


@pytest.fixture(scope="module")
def servers(testbed: Testbed) -> Iterator[Servers]:
    s = Servers(testbed)
    yield s
    s.close()


@pytest.fixture(scope="module", params=ENGINES)
def session(request: pytest.FixtureRequest) -> Iterator[Any]:
    with requests.Session() as s:
        s.trust_env = False
        if request.param == "fastnet":
            adapter = FastnetAdapter()
            s.mount("http://", adapter)
            s.mount("https://", adapter)
        s.engine = request.param
        yield s


def run_case(session: Any, case: Case, servers: Servers) -> Observed:
    url = servers.url(case)
    proxy = servers.proxy_url(case)
    kwargs: dict[str, Any] = {
        "timeout": case.timeout,
        "headers": dict(case.headers),
        "verify": servers.ca_path if case.verify else True,
        "stream": case.stream,
        "proxies": {"http": proxy, "https": proxy} if proxy else {},
    }
    if case.body is not None:
        kwargs["data"] = case.body
    elif case.body_chunks is not None:
        kwargs["data"] = body_chunks(case)
    try:
        r = session.request(case.method, url, **kwargs)
        seen = Observed(r.status_code, r.reason, headers={k.lower(): v for k, v in r.headers.items()})
        seen.history = tuple(h.status_code for h in r.history)
        if case.stream:
            seen.first_chunk = next(r.iter_content(chunk_size=1024), None)
            r.close()
        else:
            seen.body = r.content
    except requests.exceptions.RequestException as exc:
        return Observed(error=kind(exc), error_type=type(exc).__name__)
    return seen


@pytest.mark.parametrize("case", CASES, ids=str)
def test_table(session: Any, case: Case, servers: Servers) -> None:
    reason = servers.skip_reason(case)
    if reason:
        pytest.skip(reason)
    expect = case.expect
    if expect.error in _COLLAPSED:
        expect = type(expect)(error=_COLLAPSED[expect.error])
    difference = DIFFERENCES.get((case.id, session.engine))
    if difference is not None:
        expect = type(expect)(**{**expect.__dict__, **difference[1]})
    problems = check(case, expect, run_case(session, case, servers), servers)
    assert not problems, f"{session.engine}: {problems}"


# ------------------------------------------------------------------------------ beyond the table


@pytest.fixture
def fast_session() -> Iterator[Any]:
    with requests.Session() as s:
        s.trust_env = False
        adapter = FastnetAdapter()
        s.mount("http://", adapter)
        s.mount("https://", adapter)
        yield s


def test_cookies_and_redirects_are_requests_own(fast_session: Any, server: MockServer) -> None:
    server.enqueue(
        MockResponse(302, headers=[("Location", "/next"), ("Set-Cookie", "sid=42; Path=/")]),
        MockResponse(200, body=b"done"),
    )
    r = fast_session.get(server.url("/start"))
    assert r.text == "done" and [h.status_code for h in r.history] == [302]
    assert fast_session.cookies.get("sid") == "42"
    server.take_request()
    second = server.take_request()
    assert second.path == "/next" and second.header("Cookie") == "sid=42"  # sent by requests, once


def test_auth_is_requests_own(fast_session: Any, server: MockServer) -> None:
    server.enqueue(MockResponse(200, body=b"ok"))
    fast_session.get(server.url("/"), auth=("alice", "s3cret"))
    assert server.take_request().header("Authorization") == "Basic YWxpY2U6czNjcmV0"


def test_wire_headers(fast_session: Any, server: MockServer) -> None:
    server.enqueue(MockResponse(200), MockResponse(200))
    fast_session.get(server.url("/"))
    sent = server.take_request()
    assert (sent.header("User-Agent") or "").startswith("python-requests/")
    assert (sent.header("Accept-Encoding") or "").startswith("gzip, deflate")
    assert sent.header("Host") == f"127.0.0.1:{server.port}"
    fast_session.get(server.url("/"), headers={"Accept-Encoding": None})
    assert server.take_request().header("Accept-Encoding") == "identity"  # as http.client, not fastnet's gzip


def test_stream_raw_and_iter_content(fast_session: Any, server: MockServer) -> None:
    body = bytes(range(256)) * 400
    server.enqueue(
        MockResponse(200, body=body, chunked=True, chunk_size=10_000), MockResponse(200, body=body)
    )
    with fast_session.get(server.url("/a"), stream=True) as r:
        assert isinstance(r.raw, _RawResponse)
        pieces = list(r.iter_content(chunk_size=None))
        assert b"".join(pieces) == body and len(pieces) > 1  # as it arrives, not all at once
    with fast_session.get(server.url("/b"), stream=True) as r:
        assert r.raw.read(1000) == body[:1000]
        assert r.raw.read() == body[1000:]
        assert r.raw.tell() == len(body)
    assert_pool_idle(fast_session)


def test_gzip_streamed_and_raw_undecoded(fast_session: Any, server: MockServer) -> None:
    import gzip

    data = b"line\n" * 5000
    packed = gzip.compress(data)
    server.enqueue(
        MockResponse(200, headers={"Content-Encoding": "gzip"}, body=packed),
        MockResponse(200, headers={"Content-Encoding": "gzip"}, body=packed),
    )
    with fast_session.get(server.url("/"), stream=True) as r:
        assert b"".join(r.iter_content(1024)) == data
    with fast_session.get(server.url("/"), stream=True) as r:
        assert r.raw.read(decode_content=False) == packed


def test_streamed_body_error_is_requests_error(fast_session: Any, server: MockServer) -> None:
    server.enqueue(
        MockResponse(
            raw=b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\nabc", policy=SocketPolicy.CLOSE_AFTER_RESPONSE
        )
    )
    r = fast_session.get(server.url("/"), stream=True)
    with pytest.raises(requests.exceptions.ChunkedEncodingError):
        r.content  # noqa: B018


def assert_pool_idle(session: Any) -> None:
    adapter = session.get_adapter("http://x/")
    pool = adapter.client.connection_pool
    assert pool.connection_count() == pool.idle_connection_count()


def test_timeouts_pick_siblings_that_share_the_pool(fast_session: Any, server: MockServer) -> None:
    for _ in range(3):
        server.enqueue(MockResponse(200, body=b"x"))
    fast_session.get(server.url("/"), timeout=3)
    fast_session.get(server.url("/"), timeout=(1, 2))
    fast_session.get(server.url("/"), timeout=(1, 2))
    adapter = fast_session.get_adapter("http://x/")
    assert len(adapter._siblings) == 2
    assert adapter.client.connection_pool.connection_count() == 1  # one keep-alive connection for all three
    with pytest.raises(ValueError, match="Invalid timeout"):
        fast_session.get(server.url("/"), timeout=(1, 2, 3))


def test_write_timeout_is_a_timeout_and_a_connection_error() -> None:
    assert issubclass(WriteTimeout, requests.Timeout) and issubclass(WriteTimeout, requests.ConnectionError)


def test_client_certificate(fast_session: Any, tmp_path: Any) -> None:
    trustme = pytest.importorskip("trustme")
    ca = trustme.CA()
    server_cert = ca.issue_cert("127.0.0.1")
    client_cert = ca.issue_cert("client@example.test")
    ca_file = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    chain = tmp_path / "client.pem"
    client_cert.private_key_and_cert_chain_pem.write_to_path(str(chain))
    seen: list[Any] = []
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_cert.configure_cert(context)
    ca.configure_trust(context)
    context.verify_mode = ssl.CERT_REQUIRED

    import socket

    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def serve() -> None:
        conn, _ = listener.accept()
        with context.wrap_socket(conn, server_side=True) as tls:
            seen.append(tls.getpeercert())
            tls.recv(65536)
            tls.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        r = fast_session.get(f"https://127.0.0.1:{port}/", verify=str(ca_file), cert=str(chain), timeout=5)
        assert r.text == "ok"
        subject = dict(x[0] for x in seen[0]["subject"]) if seen[0].get("subject") else {}
        assert seen and (subject or seen[0].get("subjectAltName"))
    finally:
        thread.join(5)
        listener.close()
    with pytest.raises(OSError, match="invalid path"):
        fast_session.get(f"https://127.0.0.1:{port}/", cert=str(tmp_path / "missing.pem"), timeout=1)


def test_given_client_keeps_its_options_but_not_its_redirects(server: MockServer) -> None:
    events: list[str] = []

    class Listener(fastnet.EventListener):
        def call_start(self, call: Any) -> None:
            events.append("call_start")

    base = fastnet.Client(trust_env=False, event_listener=Listener())
    adapter = FastnetAdapter(base)
    server.enqueue(MockResponse(301, headers={"Location": "/elsewhere"}))
    with requests.Session() as s:
        s.mount("http://", adapter)
        r = s.get(server.url("/"), allow_redirects=False)
    assert r.status_code == 301 and events == ["call_start"]  # one exchange: requests decides on redirects
    with pytest.raises(TypeError):
        FastnetAdapter(base, dns=None)
    base.close()


def test_max_retries(server: MockServer) -> None:
    server.enqueue(MockResponse(policy=SocketPolicy.DISCONNECT_AT_START), MockResponse(200, body=b"second"))
    with requests.Session() as s:
        s.mount("http://", FastnetAdapter(max_retries=2))
        assert s.get(server.url("/")).text == "second"
    with pytest.raises(TypeError):
        FastnetAdapter(max_retries="3")  # type: ignore[arg-type]


def test_raw_fast_constructor_matches_urllib3(server: MockServer) -> None:
    """``_RawResponse.make`` (no ``HTTPResponse.__init__``) leaves the state the real ``__init__`` does."""
    heads = [
        MockResponse(200, body=b"abc"),
        MockResponse(200, body=b"abc", chunked=True),
        MockResponse(204),
        MockResponse(200, headers=[("Set-Cookie", "a=1")], body=b"x"),
        MockResponse(200, headers=[("Content-Length", "3"), ("Content-Length", "3")], body=b"abc"),
    ]
    with fastnet.Client(trust_env=False) as client:
        for mock in heads:
            for method in ("GET", "HEAD"):
                server.enqueue(mock, mock)
                url = server.url("/")
                fast = _RawResponse.make(client.stream(method, url), method, url)
                slow = _RawResponse.slow(client.stream(method, url), method, url)
                assert list(fast.headers.items()) == list(slow.headers.items())
                a, b = dict(vars(fast)), dict(vars(slow))
                for state in (a, b):
                    for key in ("_fp", "_decoded_buffer", "fastnet_response", "_original_response"):
                        state[key] = type(state[key]).__name__
                    state["_headers_dict"] = list(state["_headers_dict"].items())
                assert a == b, (mock, method)
                fast.close()
                slow.close()


def test_no_request_leaves_a_connection_in_use(fast_session: Any, servers: Servers) -> None:
    for case in CASES:
        if case.target.startswith("mock") and servers.skip_reason(case) is None:
            run_case(fast_session, case, servers)
    assert_pool_idle(fast_session)


def test_session_reads_the_proxy_environment_once_per_host(
    testbed: Testbed, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fastnet.contrib.requests import Session

    squid = f"http://{testbed.squid_open[0]}:{testbed.squid_open[1]}"
    monkeypatch.setenv("http_proxy", squid)
    monkeypatch.setenv("no_proxy", "127.0.0.3")
    with Session() as session:
        assert isinstance(session.get_adapter("https://x/"), FastnetAdapter)
        via_proxy = session.get(testbed.url("/whoami", host="127.0.0.2"), timeout=5)
        assert "fastnet-squid" in via_proxy.headers.get("Via", "")
        direct = session.get(testbed.url("/whoami", host="127.0.0.3"), timeout=5)
        assert "Via" not in direct.headers  # no_proxy
        monkeypatch.delenv("http_proxy")
        again = session.get(testbed.url("/whoami", host="127.0.0.2"), timeout=5)
        assert "fastnet-squid" in again.headers.get("Via", "")  # what it read the first time
        session.trust_env = False
        assert "Via" not in session.get(testbed.url("/whoami", host="127.0.0.2"), timeout=5).headers


def test_closing_the_session_leaves_a_streamed_body_readable(server: MockServer) -> None:
    """``requests.get(url, stream=True)`` closes its session before returning: as the stock adapter, the
    connection the body streams from stays open until the body is read, then is closed, not pooled."""
    body = b"x" * 200_000
    server.enqueue(
        MockResponse(200, body=b"idle"), MockResponse(200, body=body, chunked=True, chunk_size=10_000)
    )
    adapter = FastnetAdapter()
    with requests.Session() as s:
        s.trust_env = False
        s.mount("http://", adapter)
        assert s.get(server.url("/idle")).content == b"idle"  # leaves an idle connection
        r = s.get(server.url("/"), stream=True)
    pool = adapter.client.connection_pool
    assert pool.idle_connection_count() == 0  # the idle one was closed with the session
    assert r.content == body
    assert pool.connection_count() == 0  # the streamed one once its body was read


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(
    "timeout",
    ["foo", -1, 0, True, (1, 2, 3), ("a", 1), (1, -2), [1, 2]],
    ids=["text", "negative", "zero", "bool", "three", "text-in-tuple", "negative-in-tuple", "list"],
)
def test_bad_timeouts_raise_the_stock_value_error(engine: str, timeout: Any, server: MockServer) -> None:
    import urllib3

    with requests.Session() as s:
        s.trust_env = False
        if engine == "fastnet":
            s.mount("http://", FastnetAdapter())
        with pytest.raises(ValueError) as raised:
            s.get(server.url("/"), timeout=timeout)
        if isinstance(timeout, tuple):
            assert str(raised.value).startswith(f"Invalid timeout {timeout}.")
        else:
            with pytest.raises(ValueError) as urllib3_says:
                urllib3.Timeout(connect=timeout, read=timeout)
            assert str(raised.value) == str(urllib3_says.value)
        for good in (urllib3.Timeout(connect=5, read=None), 2.5, (None, 5)):
            server.enqueue(MockResponse(200, body=b"ok"))
            assert s.get(server.url("/"), timeout=good).content == b"ok"
    assert server.request_count == 3  # the bad timeout sent nothing


@pytest.mark.parametrize("engine", ENGINES)
def test_refused_proxy_is_a_proxy_error(engine: str, testbed: Testbed) -> None:
    refused = f"http://user:s3cret@{testbed.refused[0]}:{testbed.refused[1]}"
    with requests.Session() as s:
        s.trust_env = False
        if engine == "fastnet":
            s.mount("http://", FastnetAdapter())
        with pytest.raises(requests.exceptions.ProxyError) as raised:
            s.get(testbed.url("/whoami"), proxies={"http": refused}, timeout=5)
        assert "s3cret" not in str(raised.value) and "s3cret" not in repr(raised.value)


def test_unresolvable_http_proxy_is_a_proxy_error(testbed: Testbed) -> None:
    """The stock adapter wraps a failure to reach the proxy, its name unresolvable included, in
    ``ProxyError`` (the name is resolved by the testbed's unbound, which knows no ``nope.test``)."""
    from fastnet.dns import UdpDns

    with requests.Session() as s:
        s.trust_env = False
        s.mount("http://", FastnetAdapter(dns=UdpDns(*testbed.unbound)))
        for proxy in ("http://user:s3cret@nope.test:3128", "https://nope.test:3129"):
            with pytest.raises(requests.exceptions.ProxyError) as raised:
                s.get(testbed.url("/whoami"), proxies={"http": proxy}, timeout=5)
            assert "s3cret" not in str(raised.value)
        with pytest.raises(requests.exceptions.ConnectionError) as raised:  # the origin's name: not the proxy
            s.get("http://nope.test/", timeout=5)
        assert not isinstance(raised.value, requests.exceptions.ProxyError)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_407_from_a_site_is_a_response(engine: str, server: MockServer) -> None:
    """No proxy, so nothing to authenticate to: the stock adapter returns the site's 407."""
    server.enqueue(MockResponse(407, headers=[("Proxy-Authenticate", 'Basic realm="site"')], body=b"who?"))
    with requests.Session() as s:
        s.trust_env = False
        if engine == "fastnet":
            s.mount("http://", FastnetAdapter())
        r = s.get(server.url("/"), timeout=5)
    assert r.status_code == 407 and r.content == b"who?"


@pytest.mark.parametrize("engine", ENGINES)
def test_tls_handshake_timeout_is_a_read_timeout(engine: str) -> None:
    """A server that accepts but never answers the TLS handshake: urllib3 reports a read timeout (a
    ``Timeout`` that is not a ``ConnectionError``), not a connect timeout."""
    import socket

    listener = socket.create_server(("127.0.0.1", 0))
    try:
        with requests.Session() as s:
            s.trust_env = False
            if engine == "fastnet":
                s.mount("https://", FastnetAdapter())
            url = f"https://127.0.0.1:{listener.getsockname()[1]}/"
            with pytest.raises(requests.exceptions.ReadTimeout) as raised:
                s.get(url, timeout=(0.3, 30))
            assert not isinstance(raised.value, requests.exceptions.ConnectionError)
    finally:
        listener.close()


@pytest.mark.parametrize("engine", ENGINES)
def test_the_session_reads_a_body_after_elapsed_and_hooks(engine: str, server: MockServer) -> None:
    """``Response.elapsed`` is the time to the response head even without ``stream=True``: the session
    takes the time, runs the response hooks, then reads the body; the adapter must not read it first."""
    server.enqueue(MockResponse(200, body=b"x" * 50_000))
    seen: list[Any] = []

    def hook(r: Any, **_: Any) -> None:
        seen.append((r._content_consumed, r.raw.tell()))

    with requests.Session() as s:
        s.trust_env = False
        if engine == "fastnet":
            s.mount("http://", FastnetAdapter())
        r = s.get(server.url("/"), hooks={"response": hook})
    assert seen == [(False, 0)]
    assert r.content == b"x" * 50_000 and r.raw.tell() == 50_000


@pytest.mark.parametrize("engine", ENGINES)
def test_content_after_part_of_the_body_was_read(engine: str, server: MockServer) -> None:
    body = bytes(range(256)) * 400
    server.enqueue(MockResponse(200, body=body))  # not chunked: urllib3 loses its place in chunks there
    with requests.Session() as s:
        s.trust_env = False
        if engine == "fastnet":
            s.mount("http://", FastnetAdapter())
        r = s.get(server.url("/"), stream=True)
        assert r.raw.read(7) + r.raw.read(5000) + r.content == body


@pytest.mark.parametrize("engine", ENGINES)
def test_unverified_https_warns_as_the_stock_adapter(engine: str, testbed: Testbed) -> None:
    """``verify=False`` on an https URL gives urllib3's ``InsecureRequestWarning`` on every request (the
    warning ``urllib3.disable_warnings()`` silences); a verified request gives none."""
    import warnings

    import urllib3

    url = testbed.url("/2b", tls=True)
    with requests.Session() as s:
        s.trust_env = False
        if engine == "fastnet":
            s.mount("https://", FastnetAdapter())
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            s.get(url, verify=False, timeout=5)
            s.get(url, verify=False, timeout=5)
            s.get(url, verify=testbed.ca_path, timeout=5)
    insecure = [w for w in caught if issubclass(w.category, urllib3.exceptions.InsecureRequestWarning)]
    assert len(insecure) == 2 and "127.0.0.1" in str(insecure[0].message)
