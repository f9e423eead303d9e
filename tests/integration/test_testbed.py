"""Smoke tests of the loopback testbed, spoken to with raw sockets, ssl, dnspython and curl only.

They check the facts other tests rely on (addresses, bodies, auth, record order), never fastnet itself.
"""

from __future__ import annotations

import base64
import os
import shutil
import socket
import ssl
import struct
import subprocess
import time
from pathlib import Path

import pytest

from tests.support.testbed import STATE_DIR, Testbed, TestbedError

dns_message = pytest.importorskip("dns.message")
dns_query = pytest.importorskip("dns.query")
dns_rcode = pytest.importorskip("dns.rcode")
dns_rdatatype = pytest.importorskip("dns.rdatatype")

pytestmark = pytest.mark.testbed

ORIGINS = ["127.0.0.1", "127.0.0.2", "127.0.0.3", "::1"]


# --------------------------------------------------------------------------- raw HTTP helpers


def read_response(
    sock: socket.socket | ssl.SSLSocket, *, tunnel: bool = False
) -> tuple[int, dict[str, str], bytes, list[str]]:
    """Read one HTTP/1.1 response framed by Content-Length (or by close); returns status, headers, body.

    With ``tunnel`` a 2xx answer to CONNECT has no body: the head ends it.
    """
    data = b""
    deadline = time.monotonic() + 10
    while b"\r\n\r\n" not in data:
        assert time.monotonic() < deadline and len(data) < 1 << 20, "no response head"
        chunk = sock.recv(65536)
        assert chunk, f"connection closed before the response head: {data!r}"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    if tunnel and 200 <= status < 300:
        assert body == b"", "bytes after a CONNECT 200"
    elif "content-length" in headers:
        length = int(headers["content-length"])
        while len(body) < length:
            assert time.monotonic() < deadline, "body too slow"
            chunk = sock.recv(min(1 << 20, length - len(body)))
            assert chunk, "connection closed inside the body"
            body += chunk
    else:
        while time.monotonic() < deadline:
            chunk = sock.recv(65536)
            if not chunk:
                break
            body += chunk
    return status, headers, body, lines[1:]


def http_get(
    host: str,
    port: int,
    path: str,
    *,
    tls_ctx: ssl.SSLContext | None = None,
    server_hostname: str | None = None,
    extra: str = "",
) -> tuple[int, dict[str, str], bytes, list[str]]:
    with socket.create_connection((host, port), timeout=5) as raw:
        sock: socket.socket | ssl.SSLSocket = raw
        if tls_ctx is not None:
            sock = tls_ctx.wrap_socket(raw, server_hostname=server_hostname or host)
        try:
            authority = server_hostname or (f"[{host}]" if ":" in host else host)
            sock.sendall(f"GET {path} HTTP/1.1\r\nHost: {authority}:{port}\r\n{extra}\r\n".encode())
            return read_response(sock)
        finally:
            if sock is not raw:
                sock.close()


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


# --------------------------------------------------------------------------- Testbed helpers (no servers)


def test_testbed_url_brackets_ipv6_and_picks_port(tmp_path: Path) -> None:
    bed = Testbed(tmp_path)
    assert bed.url("/whoami") == "http://127.0.0.1:19080/whoami"
    assert bed.url("whoami", host="::1", tls=True) == "https://[::1]:19443/whoami"
    assert bed.url(host="app.test") == "http://app.test:19080/"
    assert bed.ca_path == str(tmp_path / "pki" / "ca.pem")


# --------------------------------------------------------------------------- nginx


@pytest.mark.parametrize("host", ORIGINS)
def test_testbed_nginx_whoami_http(testbed: Testbed, host: str) -> None:
    status, headers, body, _ = http_get(host, testbed.http_port, "/whoami")
    assert status == 200
    assert headers["content-type"] == "text/plain"
    assert body.decode().startswith(f"addr={host} port={testbed.http_port} scheme=http ")


@pytest.mark.parametrize("host", ORIGINS)
def test_testbed_nginx_whoami_https_with_ca(testbed: Testbed, host: str) -> None:
    status, _, body, _ = http_get(host, testbed.https_port, "/whoami", tls_ctx=testbed.ssl_context())
    assert status == 200
    assert body.decode().startswith(f"addr={host} port={testbed.https_port} scheme=https ")


def test_testbed_nginx_https_rejected_without_ca(testbed: Testbed) -> None:
    ctx = ssl.create_default_context()  # the system store does not know the testbed CA
    with pytest.raises(ssl.SSLCertVerificationError):
        http_get("127.0.0.1", testbed.https_port, "/whoami", tls_ctx=ctx)


def test_testbed_nginx_cert_names_and_trustme_ca(testbed: Testbed) -> None:
    ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
    testbed.ca.configure_trust(ctx)
    for name in (
        "localhost",
        "app.test",
        "multi.test",
        "v6.test",
        "dual.test",
        "failover.test",
        "blackhole.test",
        "doh.test",
        "ttl1.test",
    ):
        status, _, body, _ = http_get(
            "127.0.0.1", testbed.https_port, "/whoami", tls_ctx=ctx, server_hostname=name
        )
        assert status == 200 and f"host={name} ".encode() in body


def test_testbed_nginx_fixed_resources(testbed: Testbed) -> None:
    status, headers, body, _ = http_get("127.0.0.1", testbed.http_port, "/2b")
    assert status == 200 and body == b"ok"
    assert (headers["content-type"], headers["content-length"]) == ("text/plain", "2")

    status, _, body, lines = http_get("127.0.0.1", testbed.http_port, "/h40")
    extra = [line for line in lines if line.lower().startswith("x-header-")]
    assert status == 200 and body == b"ok" and len(extra) == 40
    assert extra[0].startswith("X-Header-01: ") and extra[-1].startswith("X-Header-40: ")
    assert all(15 <= len(line.partition(": ")[2]) <= 25 for line in extra)

    status, _, body, _ = http_get("127.0.0.1", testbed.http_port, "/index.html")
    assert status == 200 and body == b"hello from nginx"

    status, headers, _, _ = http_get("127.0.0.1", testbed.http_port, "/redirect")
    assert status == 302 and headers["location"].endswith("/whoami")

    assert http_get("127.0.0.1", testbed.http_port, "/status/404")[0] == 404

    status, _, body, _ = http_get("::1", testbed.https_port, "/1m.bin", tls_ctx=testbed.ssl_context())
    assert status == 200 and len(body) == 1 << 20
    assert body == (testbed.www / "1m.bin").read_bytes()


def test_testbed_nginx_keeps_connection_alive(testbed: Testbed) -> None:
    with socket.create_connection(("127.0.0.3", testbed.http_port), timeout=5) as sock:
        for _ in range(5):
            sock.sendall(b"GET /2b HTTP/1.1\r\nHost: x\r\n\r\n")
            status, headers, body, _ = read_response(sock)
            assert status == 200 and body == b"ok"
            assert headers.get("connection", "keep-alive").lower() == "keep-alive"


# --------------------------------------------------------------------------- squid


def test_testbed_squid_plain_requires_credentials(testbed: Testbed) -> None:
    target = f"http://127.0.0.1:{testbed.http_port}/whoami"
    status, headers, _, _ = http_get(*testbed.squid, target)
    assert status == 407
    assert headers["proxy-authenticate"].startswith("Basic ")
    wrong = f"Proxy-Authorization: {basic(testbed.squid_user, 'nope')}\r\n"
    assert http_get(*testbed.squid, target, extra=wrong)[0] == 407


def test_testbed_squid_plain_with_credentials(testbed: Testbed) -> None:
    auth = f"Proxy-Authorization: {basic(testbed.squid_user, testbed.squid_password)}\r\n"
    status, _, body, _ = http_get(*testbed.squid, f"http://127.0.0.2:{testbed.http_port}/whoami", extra=auth)
    assert status == 200 and body.startswith(b"addr=127.0.0.2 ")
    # Proxy-side resolution of a .test name comes from the testbed's hosts file.
    status, _, body, _ = http_get(*testbed.squid, f"http://multi.test:{testbed.http_port}/whoami", extra=auth)
    assert status == 200 and b"host=multi.test " in body


def test_testbed_squid_open_port_needs_no_credentials(testbed: Testbed) -> None:
    status, _, body, _ = http_get(*testbed.squid_open, f"http://127.0.0.1:{testbed.http_port}/2b")
    assert status == 200 and body == b"ok"


def connect_tunnel(proxy: tuple[str, int], target: str, auth: str | None) -> tuple[socket.socket, int]:
    sock = socket.create_connection(proxy, timeout=5)
    head = f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n"
    if auth:
        head += f"Proxy-Authorization: {auth}\r\n"
    sock.sendall((head + "\r\n").encode())
    try:
        status, _, _, _ = read_response(sock, tunnel=True)
    except BaseException:
        sock.close()
        raise
    return sock, status


def test_testbed_squid_connect_requires_credentials(testbed: Testbed) -> None:
    sock, status = connect_tunnel(testbed.squid, f"127.0.0.1:{testbed.https_port}", None)
    sock.close()
    assert status == 407


def test_testbed_squid_connect_with_credentials(testbed: Testbed) -> None:
    auth = basic(testbed.squid_user, testbed.squid_password)
    sock, status = connect_tunnel(testbed.squid, f"app.test:{testbed.https_port}", auth)
    with sock:
        assert status == 200
        with testbed.ssl_context().wrap_socket(sock, server_hostname="app.test") as tls:
            tls.sendall(b"GET /whoami HTTP/1.1\r\nHost: app.test\r\nConnection: close\r\n\r\n")
            status, _, body, _ = read_response(tls)
    assert status == 200 and b"scheme=https host=app.test " in body


# --------------------------------------------------------------------------- dante (raw SOCKS5)


def socks5_connect(sock: socket.socket, host: str, port: int) -> int:
    """Send a CONNECT for an IP literal; return the reply code (0 = succeeded)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    atyp = b"\x04" if family == socket.AF_INET6 else b"\x01"
    sock.sendall(b"\x05\x01\x00" + atyp + socket.inet_pton(family, host) + struct.pack("!H", port))
    reply = sock.recv(4)
    assert reply[:1] == b"\x05" and len(reply) == 4
    rest = {1: 4, 4: 16}.get(reply[3], 0) + 2
    while rest > 0:
        rest -= len(sock.recv(rest))
    return reply[1]


def test_testbed_dante_open_connects(testbed: Testbed) -> None:
    for host in ("127.0.0.2", "::1"):
        with socket.create_connection(testbed.socks5, timeout=5) as sock:
            sock.sendall(b"\x05\x01\x00")
            assert sock.recv(2) == b"\x05\x00"
            assert socks5_connect(sock, host, testbed.http_port) == 0
            sock.sendall(b"GET /whoami HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            status, _, body, _ = read_response(sock)
            assert status == 200 and body.startswith(f"addr={host} ".encode())


def test_testbed_dante_reports_refused_target(testbed: Testbed) -> None:
    with socket.create_connection(testbed.socks5, timeout=5) as sock:
        sock.sendall(b"\x05\x01\x00")
        assert sock.recv(2) == b"\x05\x00"
        assert socks5_connect(sock, *testbed.refused) == 5


def test_testbed_dante_auth_rejects_no_auth_offer(testbed: Testbed) -> None:
    with socket.create_connection(testbed.socks5_auth, timeout=5) as sock:
        sock.sendall(b"\x05\x01\x00")
        assert sock.recv(2) == b"\x05\xff"


def socks5_login(sock: socket.socket, user: str, password: str) -> bytes:
    sock.sendall(b"\x05\x01\x02")
    assert sock.recv(2) == b"\x05\x02"
    u, p = user.encode(), password.encode()
    sock.sendall(b"\x01" + bytes([len(u)]) + u + bytes([len(p)]) + p)
    return sock.recv(2)


def test_testbed_dante_auth_password(testbed: Testbed) -> None:
    with socket.create_connection(testbed.socks5_auth, timeout=5) as sock:
        assert socks5_login(sock, testbed.socks_user, "wrong") == b"\x01\x01"
    with socket.create_connection(testbed.socks5_auth, timeout=5) as sock:
        assert socks5_login(sock, testbed.socks_user, testbed.socks_password) == b"\x01\x00"
        assert socks5_connect(sock, "127.0.0.1", testbed.http_port) == 0
        sock.sendall(b"GET /2b HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        assert read_response(sock)[2] == b"ok"


# --------------------------------------------------------------------------- DNS: unbound, dnsdist, DoH


def answers(response: object, rdtype: str = "A") -> list[str]:
    out: list[str] = []
    for rrset in response.answer:  # type: ignore[attr-defined]
        if rrset.rdtype == dns_rdatatype.from_text(rdtype):
            out += [rdata.to_text() for rdata in rrset]
    return out


def test_testbed_unbound_fixed_order_udp_and_tcp(testbed: Testbed) -> None:
    host, port = testbed.unbound
    for _ in range(3):
        for ask in (dns_query.udp, dns_query.tcp):
            r = ask(dns_message.make_query("app.test", "A"), host, port=port, timeout=2)
            assert answers(r) == ["127.0.0.1", "127.0.0.2"]
            r = ask(dns_message.make_query("multi.test", "A"), host, port=port, timeout=2)
            assert answers(r) == ["127.0.0.3", "127.0.0.1"]


def test_testbed_unbound_records(testbed: Testbed) -> None:
    def ask(name: str, rdtype: str = "A", server: str = "127.0.0.1") -> object:
        return dns_query.udp(dns_message.make_query(name, rdtype), server, port=testbed.unbound[1], timeout=2)

    assert answers(ask("v6.test", "AAAA", "::1"), "AAAA") == ["::1"]
    assert answers(ask("v6.test", "A")) == []
    assert answers(ask("dual.test")) == ["127.0.0.1"] and answers(ask("dual.test", "AAAA"), "AAAA") == ["::1"]
    assert answers(ask("failover.test")) == ["127.0.0.4", "127.0.0.1"]
    assert answers(ask("blackhole.test")) == ["127.0.0.99", "127.0.0.1"]
    assert answers(ask("doh.test")) == ["127.0.0.1"]
    r = ask("ttl1.test")
    assert answers(r) == ["127.0.0.1"] and r.answer[0].ttl == 1  # type: ignore[attr-defined]
    assert ask("app.test").answer[0].ttl == 5  # type: ignore[attr-defined]
    assert ask("nothing.test").rcode() == dns_rcode.NXDOMAIN  # type: ignore[attr-defined]
    assert ask("example.com").rcode() == dns_rcode.REFUSED  # type: ignore[attr-defined]


def test_testbed_dnsdist_plain_dns(testbed: Testbed) -> None:
    r = dns_query.udp(
        dns_message.make_query("multi.test", "A"), testbed.dnsdist[0], port=testbed.dnsdist[1], timeout=2
    )
    assert answers(r) == ["127.0.0.3", "127.0.0.1"]


@pytest.mark.parametrize("host", ["127.0.0.1", "::1"])
def test_testbed_doh_get(testbed: Testbed, host: str) -> None:
    query = dns_message.make_query("multi.test", "A")
    query.id = 0
    b64 = base64.urlsafe_b64encode(query.to_wire()).rstrip(b"=").decode()
    status, headers, body, _ = http_get(
        host,
        testbed.doh_port,
        f"/dns-query?dns={b64}",
        tls_ctx=testbed.ssl_context(),
        extra="Accept: application/dns-message\r\n",
    )
    assert status == 200 and headers["content-type"] == "application/dns-message"
    assert answers(dns_message.from_wire(body)) == ["127.0.0.3", "127.0.0.1"]


def test_testbed_doh_post_and_url(testbed: Testbed) -> None:
    assert testbed.doh_url == f"https://127.0.0.1:{testbed.doh_port}/dns-query"
    wire = dns_message.make_query("app.test", "A").to_wire()
    with socket.create_connection(("127.0.0.1", testbed.doh_port), timeout=5) as raw:
        with testbed.ssl_context().wrap_socket(raw, server_hostname="127.0.0.1") as tls:
            head = "POST /dns-query HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/dns-message\r\n"
            tls.sendall(f"{head}Content-Length: {len(wire)}\r\n\r\n".encode() + wire)
            status, _, body, _ = read_response(tls)
    assert status == 200 and answers(dns_message.from_wire(body)) == ["127.0.0.1", "127.0.0.2"]


def test_testbed_curl_resolves_through_doh(testbed: Testbed) -> None:
    curl = shutil.which("curl")
    if curl is None:
        pytest.skip("curl not installed")
    out = subprocess.run(
        [
            curl,
            "-sS",
            "--max-time",
            "10",
            "--cacert",
            testbed.ca_path,
            "--doh-url",
            testbed.doh_url,
            f"https://multi.test:{testbed.https_port}/whoami",
        ],
        capture_output=True,
        text=True,
        timeout=20,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("addr=127.0.0.3 ") and "host=multi.test " in out.stdout


# --------------------------------------------------------------------------- refused and blackhole


def test_testbed_refused_port(testbed: Testbed) -> None:
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(testbed.refused, timeout=2).close()


def test_testbed_blackhole_connect_times_out(testbed: Testbed) -> None:
    if not testbed.blackhole_available:
        pytest.skip("nft blackhole not available on this machine")
    for target in (
        ("127.0.0.1", testbed.blackhole_port),
        ("::1", testbed.blackhole_port),
        (testbed.blackhole_host, testbed.http_port),
    ):
        with pytest.raises(TimeoutError):
            socket.create_connection(target, timeout=0.3).close()


# --------------------------------------------------------------------------- start/stop behaviour


def test_testbed_start_refuses_busy_port(testbed: Testbed, tmp_path: Path) -> None:
    with pytest.raises(TestbedError, match=r"nginx 127\.0\.0\.1:19080/tcp"):
        Testbed(tmp_path).start()
    assert not (tmp_path / "nginx" / "nginx.conf").exists()


class _ShiftedTestbed(Testbed):
    """A second testbed on other ports, without the (machine-wide) blackhole table."""

    http_port = 20080
    https_port = 20443
    squid = ("127.0.0.1", 20128)
    squid_open = ("127.0.0.1", 20129)
    socks5 = ("127.0.0.1", 20180)
    socks5_auth = ("127.0.0.1", 20181)
    unbound = ("127.0.0.1", 20054)
    dnsdist = ("127.0.0.1", 20055)
    doh_port = 20853
    doh_url = "https://127.0.0.1:20853/dns-query"
    refused = ("127.0.0.1", 20099)
    blackhole_port = 20098
    use_blackhole = False


def test_testbed_start_stop_cycle_leaves_nothing_running(testbed: Testbed) -> None:
    root = Path(f"/tmp/fastnet-testbed-cycle-{os.getpid()}")
    bed = _ShiftedTestbed(root)
    try:
        bed.start()
        pids = bed.status()
        assert all(pids.values()), pids
        assert http_get("127.0.0.2", bed.http_port, "/2b")[2] == b"ok"
    finally:
        bed.stop()
    assert not any(bed.status().values())
    for pid in pids.values():
        assert pid is not None
        state = Path(f"/proc/{pid}/stat")
        # Gone, or a zombie waiting for PID 1 to reap it.
        assert not state.exists() or state.read_text().rpartition(")")[2].split()[0] in ("Z", "X")
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", bed.http_port), timeout=2).close()
    shutil.rmtree(root, ignore_errors=True)
    assert STATE_DIR != root
