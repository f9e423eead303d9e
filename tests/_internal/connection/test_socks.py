"""SOCKS5 and SOCKS4a handshakes: against real dante (``testbed``) and against tiny scripted servers."""

from __future__ import annotations

import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from fastnet._internal.connection.socks import SOCKS5_REPLIES, socks4a_connect, socks5_connect
from fastnet.exceptions import ConnectTimeout, ProxyError
from tests.support.testbed import Testbed

GREETING = b"origin says hello\n"


def recv_exact(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            break
        data += chunk
    return data


def has_ipv6() -> bool:
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


class Server:
    """A loopback TCP server running ``script(conn)`` for each accepted connection, in one thread."""

    def __init__(
        self, script: Callable[[socket.socket], None], host: str = "127.0.0.1", count: int = 1
    ) -> None:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.sock = socket.socket(family, socket.SOCK_STREAM)
        self.sock.bind((host, 0))
        self.sock.listen(8)
        self.sock.settimeout(0.05)
        self.address: tuple[str, int] = self.sock.getsockname()[:2]
        self.script = script
        self.count = count
        self.errors: list[BaseException] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        served = 0
        deadline = time.monotonic() + 20
        while served < self.count and not self.stop.is_set() and time.monotonic() < deadline:
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            served += 1
            with conn:
                conn.settimeout(10)
                try:
                    self.script(conn)
                except Exception as exc:  # noqa: BLE001 - a script may hit a client that gave up
                    self.errors.append(exc)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=15)
        self.sock.close()


@pytest.fixture
def serve() -> Iterator[Callable[..., Server]]:
    servers: list[Server] = []

    def start(script: Callable[[socket.socket], None], host: str = "127.0.0.1", count: int = 1) -> Server:
        server = Server(script, host, count)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()


@pytest.fixture
def origin(serve: Callable[..., Server]) -> Callable[[str], tuple[str, int]]:
    """An origin on loopback that greets each connection (what the proxy connects to)."""

    def make(host: str = "127.0.0.1") -> tuple[str, int]:
        def greet(conn: socket.socket) -> None:
            conn.sendall(GREETING)
            conn.recv(1)

        return serve(greet, host, count=4).address

    return make


def connect(address: tuple[str, int]) -> socket.socket:
    return socket.create_connection(address, timeout=5)


# -- real dante ------------------------------------------------------------------------------------


@pytest.mark.testbed
def test_socks_dante_no_auth(testbed: Testbed, origin: Any) -> None:
    target = origin()
    with connect(testbed.socks5) as sock:
        socks5_connect(sock, target[0], target[1])
        assert recv_exact(sock, len(GREETING)) == GREETING


@pytest.mark.testbed
def test_socks_dante_domain_name_is_resolved_by_the_proxy(testbed: Testbed, origin: Any) -> None:
    target = origin()
    with connect(testbed.socks5) as sock:
        socks5_connect(sock, "localhost", target[1])
        assert recv_exact(sock, len(GREETING)) == GREETING


@pytest.mark.testbed
def test_socks_dante_auth_ok(testbed: Testbed, origin: Any) -> None:
    target = origin()
    with connect(testbed.socks5_auth) as sock:
        socks5_connect(
            sock, target[0], target[1], username=testbed.socks_user, password=testbed.socks_password
        )
        assert recv_exact(sock, len(GREETING)) == GREETING


@pytest.mark.testbed
def test_socks_dante_auth_missing(testbed: Testbed, origin: Any) -> None:
    target = origin()
    with connect(testbed.socks5_auth) as sock:
        with pytest.raises(ProxyError, match="proxy requires authentication that was not given") as info:
            socks5_connect(sock, target[0], target[1], proxy_name="dante-auth")
    assert "dante-auth" in str(info.value) and info.value.proxy == "dante-auth"


@pytest.mark.testbed
def test_socks_dante_bad_password(testbed: Testbed, origin: Any) -> None:
    target = origin()
    with connect(testbed.socks5_auth) as sock:
        with pytest.raises(ProxyError, match="proxy rejected the username/password") as info:
            socks5_connect(sock, target[0], target[1], username=testbed.socks_user, password="wrong-password")
    assert "wrong-password" not in str(info.value)


@pytest.mark.testbed
def test_socks_dante_refused_port(testbed: Testbed) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()
    with connect(testbed.socks5) as sock:
        with pytest.raises(ProxyError, match=r"connection refused by destination \(SOCKS5 reply 5\)") as info:
            socks5_connect(sock, closed[0], closed[1])
    host, port = testbed.socks5
    assert f"{host}:{port}" in str(info.value)  # the default proxy name is the peer address


@pytest.mark.testbed
@pytest.mark.skipif(not has_ipv6(), reason="no IPv6 loopback")
def test_socks_dante_ipv6_target(testbed: Testbed, origin: Any) -> None:
    target = origin("::1")
    with connect(testbed.socks5) as sock:
        socks5_connect(sock, "::1", target[1])
        assert recv_exact(sock, len(GREETING)) == GREETING


@pytest.mark.testbed
def test_socks_dante_to_nginx_whoami(testbed: Testbed) -> None:
    with connect(testbed.socks5) as sock:
        socks5_connect(sock, "127.0.0.2", testbed.http_port)
        sock.sendall(b"GET /whoami HTTP/1.1\r\nHost: 127.0.0.2\r\nConnection: close\r\n\r\n")
        data = b""
        for _ in range(100):
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    assert data.startswith(b"HTTP/1.1 200")
    assert b"addr=127.0.0.2" in data


# -- scripted SOCKS5 servers -----------------------------------------------------------------------


def socks5_script(
    *,
    method: int = 0,
    auth_status: int | None = None,
    reply: int = 0,
    bound: bytes = b"\x01\x7f\x00\x00\x01\x04\x38",
    after: bytes = GREETING,
    record: list[bytes] | None = None,
) -> Callable[[socket.socket], None]:
    def script(conn: socket.socket) -> None:
        head = recv_exact(conn, 2)
        methods = recv_exact(conn, head[1])
        if record is not None:
            record.append(head + methods)
        conn.sendall(bytes((5, method)))
        if method == 0xFF:
            return
        if auth_status is not None:
            ver_ulen = recv_exact(conn, 2)
            user = recv_exact(conn, ver_ulen[1])
            plen = recv_exact(conn, 1)
            password = recv_exact(conn, plen[0])
            if record is not None:
                record.append(ver_ulen + user + plen + password)
            conn.sendall(bytes((1, auth_status)))
            if auth_status:
                return
        request = recv_exact(conn, 4)
        atyp = request[3]
        if atyp == 1:
            rest = recv_exact(conn, 6)
        elif atyp == 4:
            rest = recv_exact(conn, 18)
        else:
            n = recv_exact(conn, 1)
            rest = n + recv_exact(conn, n[0] + 2)
        if record is not None:
            record.append(request + rest)
        conn.sendall(bytes((5, reply, 0)) + bound + (after if reply == 0 else b""))
        conn.recv(1)

    return script


def test_socks_socks5_request_bytes_for_each_address_type(serve: Any) -> None:
    cases = [
        ("10.1.2.3", 80, b"\x05\x01\x00\x01\x0a\x01\x02\x03\x00\x50"),
        ("::1", 443, b"\x05\x01\x00\x04" + socket.inet_pton(socket.AF_INET6, "::1") + b"\x01\xbb"),
        ("[::1]", 443, b"\x05\x01\x00\x04" + socket.inet_pton(socket.AF_INET6, "::1") + b"\x01\xbb"),
        ("example.com", 8080, b"\x05\x01\x00\x03\x0bexample.com\x1f\x90"),
        ("bücher.example", 80, b"\x05\x01\x00\x03\x15xn--bcher-kva.example\x00\x50"),
    ]
    for host, port, expected in cases:
        record: list[bytes] = []
        server = serve(socks5_script(record=record))
        with connect(server.address) as sock:
            socks5_connect(sock, host, port)
            assert recv_exact(sock, len(GREETING)) == GREETING
        server.close()
        assert record == [b"\x05\x01\x00", expected], host


def test_socks_socks5_offers_and_sends_credentials(serve: Any) -> None:
    record: list[bytes] = []
    server = serve(socks5_script(method=2, auth_status=0, record=record))
    with connect(server.address) as sock:
        socks5_connect(sock, "10.0.0.1", 80, username="user", password="pässword")
        assert recv_exact(sock, len(GREETING)) == GREETING
    server.close()
    assert record[0] == b"\x05\x02\x00\x02"
    assert record[1] == b"\x01\x04user\x09" + "pässword".encode()


def test_socks_socks5_server_may_skip_auth_when_credentials_offered(serve: Any) -> None:
    server = serve(socks5_script(method=0))
    with connect(server.address) as sock:
        socks5_connect(sock, "10.0.0.1", 80, username="user", password="pw")
        assert recv_exact(sock, len(GREETING)) == GREETING


@pytest.mark.parametrize("code", sorted(SOCKS5_REPLIES))
def test_socks_socks5_reply_codes(serve: Any, code: int) -> None:
    server = serve(socks5_script(reply=code))
    with connect(server.address) as sock:
        with pytest.raises(ProxyError, match=rf"{SOCKS5_REPLIES[code]} \(SOCKS5 reply {code}\)") as info:
            socks5_connect(sock, "example.com", 80, proxy_name="scripted")
    assert "scripted" in str(info.value) and "example.com:80" in str(info.value)
    assert info.value.phase == "proxy"


def test_socks_socks5_connection_refused_message(serve: Any) -> None:
    server = serve(socks5_script(reply=5))
    with connect(server.address) as sock:
        with pytest.raises(ProxyError, match="connection refused by destination"):
            socks5_connect(sock, "10.0.0.1", 80)


def test_socks_socks5_unknown_reply_code(serve: Any) -> None:
    server = serve(socks5_script(reply=0x42))
    with connect(server.address) as sock:
        with pytest.raises(ProxyError, match=r"unknown error \(SOCKS5 reply 66\)"):
            socks5_connect(sock, "10.0.0.1", 80)


def test_socks_socks5_no_acceptable_method_without_credentials(serve: Any) -> None:
    server = serve(socks5_script(method=0xFF))
    with connect(server.address) as sock:
        with pytest.raises(ProxyError, match="proxy requires authentication that was not given"):
            socks5_connect(sock, "10.0.0.1", 80)


def test_socks_socks5_no_acceptable_method_with_credentials(serve: Any) -> None:
    server = serve(socks5_script(method=0xFF))
    with connect(server.address) as sock:
        with pytest.raises(ProxyError, match="accepted none of the offered authentication methods"):
            socks5_connect(sock, "10.0.0.1", 80, username="u", password="p")


def test_socks_socks5_auth_rejected(serve: Any) -> None:
    server = serve(socks5_script(method=2, auth_status=1))
    with connect(server.address) as sock:
        with pytest.raises(ProxyError, match="proxy rejected the username/password") as info:
            socks5_connect(sock, "10.0.0.1", 80, username="u", password="secret-pw")
    assert "secret-pw" not in str(info.value)


def test_socks_socks5_method_not_offered(serve: Any) -> None:
    server = serve(socks5_script(method=2))
    with connect(server.address) as sock:
        with pytest.raises(ProxyError, match="which was not offered"):
            socks5_connect(sock, "10.0.0.1", 80)


@pytest.mark.parametrize(
    "bound",
    [b"\x03\x09localhost\x00\x50", b"\x04" + b"\x00" * 15 + b"\x01\x00\x50", b"\x01\x00\x00\x00\x00\x00\x00"],
)
def test_socks_socks5_bound_address_is_consumed_exactly(serve: Any, bound: bytes) -> None:
    server = serve(socks5_script(bound=bound))
    with connect(server.address) as sock:
        socks5_connect(sock, "10.0.0.1", 80)
        assert recv_exact(sock, len(GREETING)) == GREETING


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (b"", "closed the connection during the handshake"),
        (b"\x05", "closed the connection during the handshake"),
        (b"HTTP/1.1 400 Bad Request\r\n\r\n", "not a SOCKS5 proxy"),
    ],
)
def test_socks_socks5_bad_greeting_answers(serve: Any, answer: bytes, message: str) -> None:
    def script(conn: socket.socket) -> None:
        recv_exact(conn, 3)
        conn.sendall(answer)

    server = serve(script)
    with connect(server.address) as sock:
        with pytest.raises(ProxyError, match=message):
            socks5_connect(sock, "10.0.0.1", 80, proxy_name="junk")


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (b"\x05\x00", "closed the connection during the handshake"),
        (b"\x04\x00\x00\x01" + b"\x00" * 6, "malformed reply to CONNECT"),
        (b"\x05\x00\x00\x07" + b"\x00" * 6, r"malformed reply to CONNECT \(address type 7\)"),
        (b"\x05\x00\x00\x01\x00\x00", "closed the connection during the handshake"),
    ],
)
def test_socks_socks5_bad_connect_replies(serve: Any, reply: bytes, message: str) -> None:
    def script(conn: socket.socket) -> None:
        recv_exact(conn, 3)
        conn.sendall(b"\x05\x00")
        recv_exact(conn, 10)
        conn.sendall(reply)

    server = serve(script)
    with connect(server.address) as sock:
        with pytest.raises(ProxyError, match=message):
            socks5_connect(sock, "10.0.0.1", 80)


def test_socks_socks5_silent_proxy_times_out(serve: Any) -> None:
    done = threading.Event()

    def script(conn: socket.socket) -> None:
        recv_exact(conn, 3)
        done.wait(5)

    server = serve(script)
    with connect(server.address) as sock:
        sock.settimeout(0.2)
        with pytest.raises(ConnectTimeout, match="did not complete the handshake"):
            socks5_connect(sock, "10.0.0.1", 80)
    done.set()


def test_socks_socks5_rejects_bad_arguments(serve: Any) -> None:
    server = serve(lambda conn: None, count=4)
    for kwargs in (
        {"port": 0},
        {"port": 70000},
        {"host": "x" * 256},
        {"password": "p"},
        {"username": "u" * 256, "password": "p"},
    ):
        args: dict[str, Any] = {"host": "example.com", "port": 80, **kwargs}
        with connect(server.address) as sock:
            with pytest.raises(ProxyError):
                socks5_connect(sock, args.pop("host"), args.pop("port"), **args)


# -- scripted SOCKS4a servers ----------------------------------------------------------------------


def read_to_nul(conn: socket.socket) -> bytes:
    data = b""
    for _ in range(300):
        byte = conn.recv(1)
        data += byte
        if byte in (b"", b"\x00"):
            break
    return data


def socks4_script(
    code: int = 90, record: list[bytes] | None = None, version: int = 0
) -> Callable[[socket.socket], None]:
    def script(conn: socket.socket) -> None:
        head = recv_exact(conn, 8)
        data = head + read_to_nul(conn)  # user id
        if head[4:7] == b"\x00\x00\x00" and head[7]:
            data += read_to_nul(conn)  # SOCKS4a: the host name follows
        if record is not None:
            record.append(data)
        conn.sendall(bytes((version, code)) + b"\x00" * 6 + (GREETING if code == 90 else b""))
        conn.recv(1)

    return script


def test_socks_socks4a_with_host_name(serve: Any) -> None:
    record: list[bytes] = []
    server = serve(socks4_script(record=record))
    with connect(server.address) as sock:
        socks4a_connect(sock, "example.com", 8080, user_id="me")
        assert recv_exact(sock, len(GREETING)) == GREETING
    server.close()
    assert record == [b"\x04\x01" + struct.pack("!H", 8080) + b"\x00\x00\x00\x01me\x00example.com\x00"]


def test_socks_socks4_with_ipv4_literal(serve: Any) -> None:
    record: list[bytes] = []
    server = serve(socks4_script(record=record))
    with connect(server.address) as sock:
        socks4a_connect(sock, "10.1.2.3", 80)
        assert recv_exact(sock, len(GREETING)) == GREETING
    server.close()
    assert record == [b"\x04\x01\x00\x50\x0a\x01\x02\x03\x00"]


@pytest.mark.parametrize(
    ("code", "message"),
    [
        (91, "request rejected or failed"),
        (92, "cannot reach identd"),
        (93, "identd reports a different user"),
        (99, "unknown error"),
    ],
)
def test_socks_socks4_reply_codes(serve: Any, code: int, message: str) -> None:
    server = serve(socks4_script(code=code))
    with connect(server.address) as sock:
        with pytest.raises(ProxyError, match=message) as info:
            socks4a_connect(sock, "example.com", 80, proxy_name="s4")
    assert f"SOCKS4 reply {code}" in str(info.value) and "s4" in str(info.value)


def test_socks_socks4_bad_version(serve: Any) -> None:
    server = serve(socks4_script(version=5))
    with connect(server.address) as sock:
        with pytest.raises(ProxyError, match="not a SOCKS4 proxy"):
            socks4a_connect(sock, "example.com", 80)


def test_socks_socks4_closed_mid_handshake(serve: Any) -> None:
    def script(conn: socket.socket) -> None:
        recv_exact(conn, 9)
        conn.sendall(b"\x00\x5a\x00")

    server = serve(script)
    with connect(server.address) as sock:
        with pytest.raises(ProxyError, match="closed the connection during the handshake"):
            socks4a_connect(sock, "10.0.0.1", 80)


def test_socks_socks4_cannot_reach_ipv6(serve: Any) -> None:
    server = serve(lambda conn: None)
    with connect(server.address) as sock:
        with pytest.raises(ProxyError, match="IPv6"):
            socks4a_connect(sock, "::1", 80)


def test_socks_socks4_rejects_nul_in_user_id(serve: Any) -> None:
    server = serve(lambda conn: None)
    with connect(server.address) as sock:
        with pytest.raises(ProxyError, match="user id"):
            socks4a_connect(sock, "example.com", 80, user_id="a\x00b")
