"""TLS against MockServer(tls=True): trust by CA path or SSLContext, verify=False, untrusted CAs,
host name mismatch, SNI, ALPN and session reuse on a second connection."""

from __future__ import annotations

import ssl
import threading
import time
from typing import Any

import pytest

import fastnet
from fastnet.testing import MockResponse, MockServer, SocketPolicy
from tests.support.clients import make_fast_client
from tests.support.fakes import FakeDns, RecordingListener

pytestmark = pytest.mark.both_clients

pytest.importorskip("trustme")


def test_tls_verify_with_ca_path(tls_server: MockServer) -> None:
    tls_server.enqueue(MockResponse(200, body=b"secure"))
    assert tls_server.ca_path is not None
    with make_fast_client(verify=tls_server.ca_path) as client:
        r = client.get(tls_server.url("/"))
    assert r.content == b"secure"
    rec = tls_server.take_request()
    assert rec.tls


def test_tls_verify_with_ssl_context(tls_server: MockServer) -> None:
    tls_server.enqueue(MockResponse(200, body=b"ctx"), MockResponse(200, body=b"again"))
    with make_fast_client(verify=tls_server.client_ssl_context()) as client:
        assert client.get(tls_server.url("/")).content == b"ctx"
        assert client.get(tls_server.url("/")).content == b"again"
        assert client.connection_pool.connection_count() == 1
    assert tls_server.take_request().connection_index == tls_server.take_request().connection_index


def test_tls_verify_false_accepts_untrusted(tls_server: MockServer) -> None:
    tls_server.enqueue(MockResponse(200, body=b"whatever"))
    with make_fast_client(verify=False) as client:
        assert client.get(tls_server.url("/")).content == b"whatever"


def test_tls_untrusted_ca_is_verification_error(tls_server: MockServer) -> None:
    with make_fast_client() as client:  # certifi's bundle does not know the test CA
        with pytest.raises(fastnet.TlsVerificationError) as info:
            client.get(tls_server.url("/x"))
        assert client.connection_pool.connection_count() == 0
    exc = info.value
    assert isinstance(exc, fastnet.TlsError) and exc.phase == "tls"
    assert isinstance(exc.url, fastnet.URL) and exc.url.origin == fastnet.URL(tls_server.url("/x")).origin
    assert tls_server.request_count == 0


def test_tls_other_ca_is_verification_error(tls_server: MockServer) -> None:
    with MockServer(tls=True) as other:
        assert other.ca_path is not None
        with make_fast_client(verify=other.ca_path) as client:
            with pytest.raises(fastnet.TlsVerificationError):
                client.get(tls_server.url("/"))


def test_tls_hostname_mismatch(tls_server: MockServer) -> None:
    dns = FakeDns({"wrong-name.invalid": ["127.0.0.1"]})
    with make_fast_client(verify=tls_server.ca_path, dns=dns) as client:
        with pytest.raises(fastnet.TlsVerificationError, match="wrong-name.invalid") as info:
            client.get(tls_server.url("/", host="wrong-name.invalid"))
    assert info.value.phase == "tls"
    assert tls_server.request_count == 0


def test_tls_hostname_mismatch_allowed_with_verify_false(tls_server: MockServer) -> None:
    tls_server.enqueue(MockResponse(200, body=b"ok"))
    dns = FakeDns({"wrong-name.invalid": ["127.0.0.1"]})
    with make_fast_client(verify=False, dns=dns) as client:
        assert client.get(tls_server.url("/", host="wrong-name.invalid")).content == b"ok"


def test_tls_sni_sent_for_names(tls_server: MockServer) -> None:
    tls_server.enqueue(MockResponse(200))
    dns = FakeDns({"app.test": ["127.0.0.1"]})
    with make_fast_client(verify=tls_server.ca_path, dns=dns) as client:
        client.get(tls_server.url("/", host="app.test"))
    rec = tls_server.take_request()
    assert rec.server_name == "app.test"
    assert rec.header("host") == f"app.test:{tls_server.port}"


def test_tls_no_sni_for_ip_literals(tls_server: MockServer) -> None:
    tls_server.enqueue(MockResponse(200))
    with make_fast_client(verify=tls_server.ca_path) as client:
        client.get(tls_server.url("/"))
    assert tls_server.take_request().server_name is None  # RFC 6066 §3: no IP addresses in SNI


def test_tls_alpn_and_version_events(tls_server: MockServer) -> None:
    recorder = RecordingListener()
    tls_server.enqueue(MockResponse(200))
    with make_fast_client(verify=tls_server.ca_path, event_listener=recorder) as client:
        client.get(tls_server.url("/"))
    names = recorder.names()
    assert names.index("connect_start") < names.index("secure_connect_start")
    assert names.index("secure_connect_start") < names.index("secure_connect_end")
    assert names.index("secure_connect_end") < names.index("connect_end")
    version = dict(recorder.events)["secure_connect_end"][1]
    assert version is not None and version.startswith("TLS")


def test_tls_session_reused_on_second_connection(tls_server: MockServer) -> None:
    reused: list[bool] = []

    def network(chain: fastnet.Chain) -> fastnet.Response:
        conn = chain.connection
        assert conn is not None
        reused.append(bool(conn.sock.session_reused))
        return chain.proceed(chain.request)

    # TLS 1.2 makes the session available right after the handshake (a TLS 1.3 ticket arrives later)
    context = tls_server.client_ssl_context()
    context.maximum_version = ssl.TLSVersion.TLSv1_2
    tls_server.enqueue(MockResponse(200), MockResponse(200))
    with make_fast_client(verify=context, network_interceptors=[network]) as client:
        client.get(tls_server.url("/"), headers={"Connection": "close"})
        client.get(tls_server.url("/"))
    assert reused == [False, True]
    assert tls_server.take_request().connection_index != tls_server.take_request().connection_index


def test_tls_large_body(tls_server: MockServer) -> None:
    body = bytes(range(256)) * 4096  # 1 MiB
    tls_server.enqueue(MockResponse(200, body=body), MockResponse(200, body=b"small"))
    with make_fast_client(verify=tls_server.ca_path) as client:
        assert client.get(tls_server.url("/")).content == body
        assert client.get(tls_server.url("/")).content == b"small"
    assert tls_server.take_request().connection_index == tls_server.take_request().connection_index


def test_tls_read_timeout(tls_server: MockServer) -> None:
    tls_server.enqueue(MockResponse(200, policy=SocketPolicy.NO_RESPONSE))
    with make_fast_client(verify=tls_server.ca_path, read_timeout=0.3) as client:
        with pytest.raises(fastnet.ReadTimeout) as info:
            client.get(tls_server.url("/"))
        assert client.connection_pool.connection_count() == 0
    assert info.value.phase == "read"


def test_tls_read_timeout_mid_body(tls_server: MockServer) -> None:
    tls_server.enqueue(MockResponse(200, body=b"x" * 10_000, policy=SocketPolicy.STALL_BODY))
    with make_fast_client(verify=tls_server.ca_path, read_timeout=0.3) as client:
        with pytest.raises(fastnet.ReadTimeout):
            client.get(tls_server.url("/"))


def test_tls_cancel_from_another_thread(tls_server: MockServer) -> None:
    tls_server.enqueue(MockResponse(200, policy=SocketPolicy.NO_RESPONSE))
    with make_fast_client(verify=tls_server.ca_path, read_timeout=10) as client:
        call = client.new_call(fastnet.Request("GET", tls_server.url("/")))
        timer = threading.Timer(0.2, call.cancel)
        timer.start()
        try:
            with pytest.raises(fastnet.CanceledError):
                call.execute()
        finally:
            timer.join()


def test_tls_peer_closed_while_idle_is_detected(tls_server: MockServer) -> None:
    tls_server.enqueue(
        MockResponse(200, body=b"1", policy=SocketPolicy.CLOSE_AFTER_RESPONSE), MockResponse(200, body=b"2")
    )
    with make_fast_client(verify=tls_server.ca_path, retry_on_connection_failure=False) as client:
        assert client.get(tls_server.url("/")).content == b"1"
        time.sleep(1.2)  # past the idle time after which a pooled connection is probed before reuse
        assert client.get(tls_server.url("/")).content == b"2"
    assert tls_server.take_request().connection_index != tls_server.take_request().connection_index


def test_tls_handshake_timeout_when_server_does_not_speak_tls() -> None:
    # a plain MockServer reads the ClientHello as the start of an HTTP head and waits for more
    outcome: list[BaseException | None] = []
    with MockServer() as plain:
        url = plain.url("/").replace("http://", "https://")

        def run() -> None:
            try:
                with make_fast_client(verify=False, connect_timeout=0.3, read_timeout=0.3) as client:
                    client.get(url)
                outcome.append(None)
            except BaseException as exc:  # noqa: BLE001 - inspected below
                outcome.append(exc)

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        thread.join(3.0)
        hung = thread.is_alive()
    thread.join(5.0)  # the server's shutdown closed the socket: the client thread ends either way
    assert not hung, "the TLS handshake did not time out"
    assert outcome and isinstance(outcome[0], fastnet.TimeoutError | fastnet.TlsError)


# ------------------------------------------------------------------------------ session resumption
# The blocking client keeps a connection's session when the pool gets the connection back after its
# first exchange (under TLS 1.3 the ticket arrives with the first response, not with the handshake) and
# offers it to the next new connection to that (host, port). asyncio's start_tls takes no session.

TLS_VERSIONS = [
    pytest.param(ssl.TLSVersion.TLSv1_2, id="tls1.2"),
    pytest.param(ssl.TLSVersion.TLSv1_3, id="tls1.3"),
]


def _session_reused(conn: Any) -> bool:
    """Whether ``conn``'s TLS resumed a session (a blocking connection's socket, an asyncio one's
    transport)."""
    transport = getattr(conn, "transport", None)
    if transport is not None:
        return bool(transport.get_extra_info("ssl_object").session_reused)
    return bool(conn.sock.session_reused)


def _pinned_context(server: MockServer, version: ssl.TLSVersion) -> ssl.SSLContext:
    context = server.client_ssl_context()
    context.minimum_version = context.maximum_version = version
    return context


@pytest.mark.parametrize("version", TLS_VERSIONS)
def test_tls_new_connection_resumes_the_session(
    tls_server: MockServer, client_kind: str, version: ssl.TLSVersion
) -> None:
    seen: list[tuple[bool, bool]] = []

    def network(chain: fastnet.Chain) -> fastnet.Response:
        conn = chain.connection
        assert conn is not None
        seen.append((_session_reused(conn), bool(conn.gives_tls_session)))
        return chain.proceed(chain.request)

    tls_server.enqueue(*[MockResponse(200, body=b"x")] * 4)
    context = _pinned_context(tls_server, version)
    with make_fast_client(verify=context, network_interceptors=[network]) as client:
        key = ("localhost", tls_server.port)
        url = tls_server.url("/", host="localhost")
        assert client.get(url).content == b"x"  # a keep-alive connection: given once, on release
        stored = client._core.connector.tls_sessions[key]
        assert client.get(url, headers={"Connection": "close"}).content == b"x"
        assert client._core.connector.tls_sessions[key] is stored  # given once per connection
        assert client.get(url).content == b"x"  # a new connection: resumed
        assert client.get(url).content == b"x"
        # a resumed connection keeps the session it resumed
        assert client._core.connector.tls_sessions[key] is stored
        assert client.connection_pool.connection_count() == 1
    # (reused, still to give its session) per request: only a new connection's first exchange reads it
    assert seen == [(False, True), (False, False), (True, False), (True, False)]
    records = [tls_server.take_request() for _ in range(4)]
    assert [r.tls_resumed for r in records] == [False, False, True, True]
    assert records[1].connection_index != records[2].connection_index
    assert all(r.tls for r in records)


@pytest.mark.parametrize("version", TLS_VERSIONS)
def test_tls_resumes_with_a_pool_that_keeps_nothing(
    tls_server: MockServer, client_kind: str, version: ssl.TLSVersion
) -> None:
    tls_server.enqueue(*[MockResponse(200, body=b"y")] * 3)
    pool = fastnet.ConnectionPool(max_idle_connections=0)
    context = _pinned_context(tls_server, version)
    with make_fast_client(verify=context, connection_pool=pool) as client:
        for _ in range(3):
            assert client.get(tls_server.url("/")).content == b"y"
        assert client.connection_pool.connection_count() == 0
    records = [tls_server.take_request() for _ in range(3)]
    assert len({r.connection_index for r in records}) == 3
    assert [r.tls_resumed for r in records] == [False, True, True]


def test_tls_sessions_are_per_host_and_port(tls_server: MockServer, client_kind: str) -> None:
    with MockServer(tls=True, ca=tls_server.ca) as other:  # same CA, another port
        for server in (tls_server, other):
            server.enqueue(*[MockResponse(200, headers={"Connection": "close"})] * 3)
        with make_fast_client(verify=tls_server.client_ssl_context()) as client:
            client.get(tls_server.url("/", host="localhost"))
            client.get(other.url("/", host="localhost"))  # another port: a full handshake
            client.get(tls_server.url("/", host="127.0.0.1"))  # another host name: a full handshake
            client.get(tls_server.url("/", host="localhost"))  # resumed
            client.get(other.url("/", host="localhost"))  # resumed
            sessions = client._core.connector.tls_sessions
            assert set(sessions) == {
                ("localhost", tls_server.port),
                ("localhost", other.port),
                ("127.0.0.1", tls_server.port),
            }
        first = [tls_server.take_request().tls_resumed for _ in range(3)]
        second = [other.take_request().tls_resumed for _ in range(2)]
    assert first == [False, False, True]
    assert second == [False, True]
