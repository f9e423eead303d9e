"""The error hierarchy: ``url`` keeps the request's URL without its user-info, whatever the phase and
whoever set it; ``str()``, ``repr()`` and ``args`` never show a password; messages are one sentence."""

from __future__ import annotations

import pickle
import socket
import threading
from collections.abc import Iterator

import pytest

import fastnet
from fastnet.dns import CachingDns
from fastnet.testing import MockResponse, MockServer, SocketPolicy
from tests.support.clients import make_fast_client
from tests.support.fakes import FakeDns

pytestmark = pytest.mark.both_clients

SECRET = "s3cret"

ERROR_CLASSES = [
    fastnet.NetworkError,
    fastnet.ConnectError,
    fastnet.RouteError,
    fastnet.TimeoutError,
    fastnet.ConnectTimeout,
    fastnet.ReadTimeout,
    fastnet.WriteTimeout,
    fastnet.PoolTimeout,
    fastnet.CallTimeout,
    fastnet.ProtocolError,
    fastnet.ConnectionClosedError,
    fastnet.UnknownHostError,
    fastnet.ProxyError,
    fastnet.TlsError,
    fastnet.TlsVerificationError,
    fastnet.CanceledError,
]


def _with_userinfo(url: str) -> str:
    return url.replace("://", f"://alice:{SECRET}@", 1)


def _assert_no_secret(error: BaseException) -> None:
    for text in (str(error), repr(error), repr(error.args), str(getattr(error, "url", ""))):
        assert SECRET not in text and "alice" not in text, text


def _assert_url(error: fastnet.NetworkError, expected: str) -> None:
    """``error.url`` is the request's URL, path and query kept, user-info removed."""
    assert isinstance(error.url, fastnet.URL)
    assert str(error.url) == expected
    assert error.url.username == "" and error.url.password == ""
    _assert_no_secret(error)


@pytest.mark.parametrize("cls", ERROR_CLASSES)
def test_exceptions_url_drops_userinfo_when_built(cls: type[fastnet.NetworkError]) -> None:
    error = cls("failed", url=fastnet.URL(f"http://alice:{SECRET}@h:8080/p?q=1#f"))
    _assert_url(error, "http://h:8080/p?q=1#f")
    assert str(error).startswith("failed (") and "http://h:8080/p" in str(error)
    assert error.args == ("failed",)


@pytest.mark.parametrize("cls", ERROR_CLASSES)
def test_exceptions_url_drops_userinfo_when_located_or_set(cls: type[fastnet.NetworkError]) -> None:
    error = cls("failed")
    assert error._locate(fastnet.URL(f"https://alice:{SECRET}@h/p?q=1"), "read") is error
    _assert_url(error, "https://h/p?q=1")
    error.url = fastnet.URL(f"http://bob:{SECRET}@other/x")
    assert str(error.url) == "http://other/x"
    error.url = None
    # (a TlsVerificationError adds how to fix it after "; ")
    assert error.url is None and str(error).split("; ")[0] == f"failed ({error.phase})"


def test_exceptions_url_given_as_text() -> None:
    error = fastnet.ReadTimeout("slow", url=f"http://alice:{SECRET}@h/p?q=1")
    assert error.url == "http://h/p?q=1" and isinstance(error.url, str)
    unparsable = fastnet.ReadTimeout("slow", url=f"http://alice:{SECRET}@h:99999/p")
    assert unparsable.url == "http://alice:***@h:99999/p"  # masked: text that does not parse
    assert SECRET not in str(unparsable)


def test_exceptions_pickle_keeps_the_redacted_url() -> None:
    error = fastnet.ConnectError("refused", url=fastnet.URL(f"http://alice:{SECRET}@h/p"))
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is fastnet.ConnectError and str(copy.url) == "http://h/p"
    assert str(copy) == str(error) and copy.phase == "connect"


# -- every phase, on real sockets ------------------------------------------------------------------


def test_exceptions_read_timeout_url(server: MockServer) -> None:
    server.enqueue(MockResponse(200, policy=SocketPolicy.NO_RESPONSE))
    with make_fast_client(read_timeout=0.3) as client:
        with pytest.raises(fastnet.ReadTimeout) as info:
            client.get(_with_userinfo(server.url("/slow?q=1")))
    _assert_url(info.value, server.url("/slow?q=1"))
    assert info.value.phase == "read"


def test_exceptions_protocol_error_url(server: MockServer) -> None:
    server.enqueue(MockResponse(raw=b"HTTP/1.1 2000 Nope\r\n\r\n"))
    with make_fast_client() as client:
        with pytest.raises(fastnet.ProtocolError) as info:
            client.get(_with_userinfo(server.url("/bad?q=1")))
    _assert_url(info.value, server.url("/bad?q=1"))


def test_exceptions_connection_closed_url(server: MockServer) -> None:
    server.enqueue(MockResponse(policy=SocketPolicy.DISCONNECT_AFTER_REQUEST))
    with make_fast_client(retry_on_connection_failure=False) as client:
        with pytest.raises(fastnet.ConnectionClosedError) as info:
            client.get(_with_userinfo(server.url("/gone?q=1")))
    _assert_url(info.value, server.url("/gone?q=1"))


def test_exceptions_cancel_url(server: MockServer) -> None:
    server.enqueue(MockResponse(200, policy=SocketPolicy.NO_RESPONSE))
    with make_fast_client() as client:
        call = client.new_call(fastnet.Request("GET", _with_userinfo(server.url("/c?q=1"))))
        timer = threading.Timer(0.2, call.cancel)
        timer.start()
        try:
            with pytest.raises(fastnet.CanceledError) as info:
                call.execute()
        finally:
            timer.join()
    _assert_url(info.value, server.url("/c?q=1"))


def test_exceptions_call_timeout_url(server: MockServer) -> None:
    server.enqueue(MockResponse(200, body=b"x" * 2000, throttle=(100, 0.1)))
    with make_fast_client(call_timeout=0.3) as client:
        with pytest.raises(fastnet.CallTimeout) as info:
            client.get(_with_userinfo(server.url("/t?q=1")))
    _assert_url(info.value, server.url("/t?q=1"))


def test_exceptions_tls_verification_url(tls_server: MockServer) -> None:
    with make_fast_client() as client:  # does not trust the test CA
        with pytest.raises(fastnet.TlsVerificationError) as info:
            client.get(_with_userinfo(tls_server.url("/tls?q=1")))
    _assert_url(info.value, tls_server.url("/tls?q=1"))
    assert info.value.phase == "tls"


@pytest.fixture
def refused_port() -> Iterator[int]:
    """A loopback port nobody listens on (bound, not listening: connects are refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        yield s.getsockname()[1]


def test_exceptions_refused_connection_is_one_sentence(refused_port: int) -> None:
    url = f"http://127.0.0.1:{refused_port}/p?q=1"
    with make_fast_client() as client:
        with pytest.raises(fastnet.ConnectError) as info:
            client.get(_with_userinfo(url))
    error = info.value
    _assert_url(error, url)
    assert error.phase == "connect"
    assert str(error) == (
        f"Failed to connect to 127.0.0.1:{refused_port}: Connection refused"
        f" (connect http://127.0.0.1:{refused_port}/p)"
    )
    assert isinstance(error.__cause__, ConnectionRefusedError)
    assert [route.socket_address for route, _ in error.attempts] == [("127.0.0.1", refused_port)]


def test_exceptions_refused_proxy_names_the_proxy(refused_port: int) -> None:
    proxy = fastnet.Proxy.http("127.0.0.1", refused_port, username="bob", password=SECRET)
    with make_fast_client(proxy=proxy, dns=FakeDns({"origin.test": ["127.0.0.9"]})) as client:
        with pytest.raises(fastnet.ConnectError) as info:
            client.get(_with_userinfo("http://origin.test/p?q=1"))
    error = info.value
    _assert_url(error, "http://origin.test/p?q=1")
    message = str(error)
    assert message == (
        f"Failed to connect to proxy 127.0.0.1:{refused_port}: Connection refused"
        " (connect http://origin.test/p)"
    )
    assert isinstance(error.__cause__, ConnectionRefusedError)
    assert "bob" not in message


def test_exceptions_refused_socks_proxy_names_the_proxy(refused_port: int) -> None:
    proxy = fastnet.Proxy.socks("127.0.0.1", refused_port)
    with make_fast_client(proxy=proxy) as client:
        with pytest.raises(fastnet.ConnectError) as info:
            client.get("http://origin.test/p")
    assert str(info.value) == (
        f"Failed to connect to SOCKS proxy 127.0.0.1:{refused_port}: Connection refused"
        " (connect http://origin.test/p)"
    )


def test_exceptions_dns_error_keeps_the_request_url() -> None:
    with make_fast_client(dns=FakeDns({})) as client:
        with pytest.raises(fastnet.UnknownHostError) as info:
            client.get(_with_userinfo("http://nowhere.test:8080/p?q=1"))
    _assert_url(info.value, "http://nowhere.test:8080/p?q=1")
    assert info.value.phase == "dns"
    assert str(info.value) == "FakeDns has no answer for nowhere.test (dns http://nowhere.test:8080/p)"


class BrokenResolver:
    """Fails every lookup the way SystemDns does: an UnknownHostError caused by the OS error."""

    def lookup(self, hostname: str) -> list[str]:
        try:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        except socket.gaierror as exc:
            raise fastnet.UnknownHostError(f"{hostname}: {exc.strerror}", phase="dns") from exc


def test_exceptions_second_dns_failure_reads_like_the_first() -> None:
    with make_fast_client(dns=CachingDns(BrokenResolver(), negative_ttl=60)) as client:
        errors = []
        for _ in range(2):  # the second is answered from the negative cache
            with pytest.raises(fastnet.UnknownHostError) as info:
                client.get("http://nowhere.test/p?q=1")
            errors.append(info.value)
    first, second = errors
    assert str(first) == "nowhere.test: Name or service not known (dns http://nowhere.test/p)"
    assert str(second) == str(first)
    assert str(second.url) == "http://nowhere.test/p?q=1"
    assert isinstance(first.__cause__, socket.gaierror)
    assert isinstance(second.__cause__, socket.gaierror)
    assert second.__cause__.args == first.__cause__.args
    assert second.__cause__ is not first.__cause__  # a copy: the cache keeps no traceback alive
    assert second.__cause__.__traceback__ is None


def test_exceptions_redirect_hop_failure_names_that_hop(server: MockServer) -> None:
    server.enqueue(MockResponse(302, headers={"Location": "http://elsewhere.test/next?q=2"}))
    with make_fast_client(dns=FakeDns({})) as client:
        with pytest.raises(fastnet.UnknownHostError) as info:
            client.get(server.url("/start"))
    assert str(info.value.url) == "http://elsewhere.test/next?q=2"


def test_exceptions_proxy_refusing_the_tunnel_url(server: MockServer) -> None:
    server.enqueue(MockResponse(403, body=b"not you"))  # the answer to CONNECT
    proxy = fastnet.Proxy.http("127.0.0.1", server.port, username="bob", password=SECRET)
    with make_fast_client(proxy=proxy) as client:
        with pytest.raises(fastnet.ProxyError) as info:
            client.get(_with_userinfo("https://origin.test/p?q=1"))
    _assert_url(info.value, "https://origin.test/p?q=1")
    assert info.value.phase == "proxy" and info.value.status_code == 403
    assert server.take_request().method == "CONNECT"
