"""SOCKS5 (RFC 1928, RFC 1929) and SOCKS4a client handshakes, for blocking sockets and for asyncio.

Theory of operation: each handshake is written once, sans-I/O, as a generator of *steps*
(``socks5_steps``, ``socks4a_steps``): it yields ``bytes`` to send (answered with ``None``) or an ``int``,
the most bytes it wants next (answered with the bytes received, ``b""`` at EOF), and an I/O error is
thrown into it where it yielded, so the generator alone decides what every failure means. Two small
drivers run the steps: ``socks5_connect``/``socks4a_connect`` over a connected blocking socket whose
timeout the caller set, and ``socks5_connect_async``/``socks4a_connect_async`` over an asyncio
connection in raw mode (``AsyncRealConnection``). Replies are read exactly (never more, so the first
bytes of the origin's answer stay for the HTTP or TLS layer; the asyncio driver hands bytes it received
past the reply back to the connection). Every failure is a :class:`~fastnet.exceptions.ProxyError`
naming the proxy and the target: a refusal (with the reply code's meaning), a proxy that closes
mid-handshake, or bytes that are not SOCKS. A timeout becomes :class:`~fastnet.exceptions.ConnectTimeout`.
Credentials are only ever sent to the proxy.

Wire formats (RFC 1928 §3-6, RFC 1929 §2, SOCKS4a):

    greeting   05 NMETHODS METHODS...            ->  05 METHOD        (FF: none acceptable)
    auth       01 ULEN UNAME PLEN PASSWD         ->  01 STATUS        (00: success)
    request    05 01 00 ATYP DST.ADDR DST.PORT   ->  05 REP 00 ATYP BND.ADDR BND.PORT
    ATYP       01 IPv4 (4 bytes) | 03 domain (1 length byte + name) | 04 IPv6 (16 bytes)
    socks4a    04 01 PORT IP USERID 00 [HOST 00] ->  00 CD PORT IP    (CD 5A: granted)
"""

from __future__ import annotations

import ipaddress
import socket
import struct
from collections.abc import Generator
from typing import Protocol

from fastnet.exceptions import ConnectTimeout, ProxyError

__all__ = [
    "SOCKS4_REPLIES",
    "SOCKS5_REPLIES",
    "socks4a_connect",
    "socks4a_connect_async",
    "socks4a_steps",
    "socks5_connect",
    "socks5_connect_async",
    "socks5_steps",
]

SOCKS5_REPLIES = {
    1: "general SOCKS server failure",
    2: "connection not allowed by ruleset",
    3: "network unreachable",
    4: "host unreachable",
    5: "connection refused by destination",
    6: "TTL expired",
    7: "command not supported",
    8: "address type not supported",
}

SOCKS4_REPLIES = {
    91: "request rejected or failed",
    92: "request rejected: the proxy cannot reach identd on the client",
    93: "request rejected: identd reports a different user id",
}

_NO_AUTH = 0x00
_USER_PASS = 0x02
_NO_ACCEPTABLE = 0xFF


class _RawConnection(Protocol):
    """What the asyncio handshake uses of a connection in raw mode (``AsyncRealConnection``)."""

    async def recv(self, timeout: float) -> bytes: ...
    def write(self, data: bytes) -> None: ...
    def unread(self, data: bytes) -> None: ...


class _Handshake:
    """Names the proxy and the target in a handshake's errors."""

    __slots__ = ("proxy_name", "target", "protocol")

    def __init__(self, proxy_name: str, target: str, protocol: str) -> None:
        self.proxy_name = proxy_name
        self.target = target
        self.protocol = protocol

    def error(self, what: str) -> ProxyError:
        return ProxyError(
            f"{self.protocol} proxy {self.proxy_name}: {what} (target {self.target})", proxy=self.proxy_name
        )

    def timeout(self) -> ConnectTimeout:
        return ConnectTimeout(
            f"{self.protocol} proxy {self.proxy_name} did not complete the handshake in time"
            f" (target {self.target})",
            phase="proxy",
        )

    def send(self, data: bytes) -> Generator[bytes, None, None]:
        try:
            yield data
        except (TimeoutError, BlockingIOError) as exc:  # SO_SNDTIMEO/SO_RCVTIMEO give EAGAIN
            raise self.timeout() from exc
        except OSError as exc:
            raise self.error(f"sending the handshake failed: {exc}") from exc

    def recv_exact(self, n: int) -> Generator[int, bytes, bytes]:
        chunks = []
        got = 0
        while got < n:
            try:
                chunk = yield n - got
            except (TimeoutError, BlockingIOError) as exc:
                raise self.timeout() from exc
            except OSError as exc:
                raise self.error(f"reading the handshake failed: {exc}") from exc
            if not chunk:
                raise self.error("the proxy closed the connection during the handshake")
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)


def _peer_name(sock: socket.socket) -> str:
    try:
        peer = sock.getpeername()
    except OSError:
        return "?"
    return f"[{peer[0]}]:{peer[1]}" if ":" in peer[0] else f"{peer[0]}:{peer[1]}"


def _target_text(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _check_port(hs: _Handshake, port: int) -> None:
    if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
        raise hs.error(f"target port {port!r} is out of range")


def _encode_socks5_address(hs: _Handshake, host: str) -> bytes:
    bare = host.strip("[]")
    try:
        ip = ipaddress.ip_address(bare)
    except ValueError:
        ip = None
    if ip is not None:
        return (b"\x01" if ip.version == 4 else b"\x04") + ip.packed
    try:
        name = host.encode("idna") if not host.isascii() else host.encode("ascii")
    except UnicodeError as exc:
        raise hs.error(f"target host {host!r} cannot be encoded: {exc}") from None
    if not 0 < len(name) <= 255:
        raise hs.error("target host name must be 1-255 bytes long")
    return b"\x03" + bytes((len(name),)) + name


def socks5_steps(
    host: str, port: int, username: str | None, password: str | None, proxy_name: str
) -> Generator[bytes | int, bytes | None, None]:
    """The SOCKS5 handshake asking for a TCP connection to ``host:port``, as steps (module doc)."""
    hs = _Handshake(proxy_name, _target_text(host, port), "SOCKS5")
    _check_port(hs, port)
    address = _encode_socks5_address(hs, host)
    if password is not None and username is None:
        raise hs.error("a password was given without a username")
    user_bytes = pass_bytes = b""
    if username is not None:
        user_bytes = username.encode("utf-8")
        pass_bytes = (password or "").encode("utf-8")
        if not 0 < len(user_bytes) <= 255 or len(pass_bytes) > 255:
            raise hs.error(
                "SOCKS5 username and password must be at most 255 bytes (and the username not empty)"
            )
        greeting = bytes((5, 2, _NO_AUTH, _USER_PASS))
    else:
        greeting = bytes((5, 1, _NO_AUTH))
    # The greeting and the request could be pipelined; waiting for each answer keeps errors exact.
    yield from hs.send(greeting)
    version, method = yield from hs.recv_exact(2)
    if version != 5:
        raise hs.error(f"not a SOCKS5 proxy (answered version {version} to the greeting)")
    if method == _NO_ACCEPTABLE:
        if username is None:
            raise hs.error("proxy requires authentication that was not given")
        raise hs.error("proxy accepted none of the offered authentication methods")
    if method == _USER_PASS and username is not None:
        yield from hs.send(
            b"\x01" + bytes((len(user_bytes),)) + user_bytes + bytes((len(pass_bytes),)) + pass_bytes
        )
        auth_version, status = yield from hs.recv_exact(2)
        if auth_version != 1:
            raise hs.error(f"malformed authentication reply (version {auth_version})")
        if status != 0:
            raise hs.error("proxy rejected the username/password")
    elif method != _NO_AUTH:
        raise hs.error(f"proxy chose authentication method {method:#04x}, which was not offered")

    yield from hs.send(b"\x05\x01\x00" + address + struct.pack("!H", port))
    version, reply, reserved, atyp = yield from hs.recv_exact(4)
    if version != 5:
        raise hs.error(f"malformed reply to CONNECT (version {version})")
    if reply != 0:
        meaning = SOCKS5_REPLIES.get(reply, "unknown error")
        raise hs.error(f"{meaning} (SOCKS5 reply {reply})")
    # BND.ADDR and BND.PORT must be consumed so they are not mistaken for the origin's bytes
    if atyp == 1:
        yield from hs.recv_exact(4 + 2)
    elif atyp == 4:
        yield from hs.recv_exact(16 + 2)
    elif atyp == 3:
        (length,) = yield from hs.recv_exact(1)
        yield from hs.recv_exact(length + 2)
    else:
        raise hs.error(f"malformed reply to CONNECT (address type {atyp})")


def socks4a_steps(
    host: str, port: int, user_id: str, proxy_name: str
) -> Generator[bytes | int, bytes | None, None]:
    """The SOCKS4 (IPv4 literal) or SOCKS4a (name) handshake for ``host:port``, as steps."""
    hs = _Handshake(proxy_name, _target_text(host, port), "SOCKS4")
    _check_port(hs, port)
    user = user_id.encode("utf-8")
    if b"\x00" in user or len(user) > 255:
        raise hs.error("the SOCKS4 user id must not contain NUL and must be at most 255 bytes")
    bare = host.strip("[]")
    try:
        ip = ipaddress.ip_address(bare)
    except ValueError:
        ip = None
    if ip is not None and ip.version == 6:
        raise hs.error("SOCKS4 cannot connect to an IPv6 address")
    if ip is not None:
        request = b"\x04\x01" + struct.pack("!H", port) + ip.packed + user + b"\x00"
    else:
        try:
            name = bare.encode("idna") if not bare.isascii() else bare.encode("ascii")
        except UnicodeError as exc:
            raise hs.error(f"target host {host!r} cannot be encoded: {exc}") from None
        if not name or b"\x00" in name or len(name) > 255:
            raise hs.error("target host name must be 1-255 bytes long")
        # 0.0.0.x with x != 0 tells a SOCKS4a proxy that a host name follows the user id
        request = (
            b"\x04\x01" + struct.pack("!H", port) + b"\x00\x00\x00\x01" + user + b"\x00" + name + b"\x00"
        )
    yield from hs.send(request)
    reply = yield from hs.recv_exact(8)
    version, code = reply[0], reply[1]
    if version != 0:
        raise hs.error(f"not a SOCKS4 proxy (reply version {version})")
    if code != 90:
        meaning = SOCKS4_REPLIES.get(code, "unknown error")
        raise hs.error(f"{meaning} (SOCKS4 reply {code})")


# -- drivers ------------------------------------------------------------------------------------------


def _run(sock: socket.socket, steps: Generator[bytes | int, bytes | None, None]) -> None:
    """Run a handshake's steps over a blocking socket."""
    try:
        step = next(steps)
        while True:
            try:
                if isinstance(step, int):
                    answer: bytes | None = sock.recv(step)
                else:
                    sock.sendall(step)
                    answer = None
            except OSError as exc:
                step = steps.throw(exc)
            else:
                step = steps.send(answer)
    except StopIteration:
        return


async def _run_async(
    conn: _RawConnection, steps: Generator[bytes | int, bytes | None, None], timeout: float
) -> None:
    """Run a handshake's steps over an asyncio connection in raw mode (``write``, ``await recv``); what
    arrived past the last reply is handed back to the connection (``unread``)."""
    buffered = b""
    try:
        step = next(steps)
        while True:
            try:
                if isinstance(step, int):
                    if not buffered:
                        buffered = await conn.recv(timeout)
                    answer: bytes | None = buffered[:step]
                    buffered = buffered[step:]
                else:
                    conn.write(step)
                    answer = None
            except OSError as exc:
                step = steps.throw(exc)
            else:
                step = steps.send(answer)
    except StopIteration:
        if buffered:
            conn.unread(buffered)
    finally:
        steps.close()


def socks5_connect(
    sock: socket.socket,
    host: str,
    port: int,
    *,
    username: str | None = None,
    password: str | None = None,
    proxy_name: str | None = None,
) -> None:
    """Ask the SOCKS5 proxy ``sock`` is connected to for a TCP connection to ``host:port``.

    ``host`` may be an IPv4 or IPv6 literal or a name (sent unresolved: the proxy resolves it).
    With ``username`` the proxy may choose username/password authentication (RFC 1929).

    >>> import socket
    >>> sock = socket.create_connection(("127.0.0.1", 1080), timeout=5)   # doctest: +SKIP
    >>> socks5_connect(sock, "example.com", 80, proxy_name="127.0.0.1:1080")   # doctest: +SKIP
    """
    name = _peer_name(sock) if proxy_name is None else proxy_name
    _run(sock, socks5_steps(host, port, username, password, name))


def socks4a_connect(
    sock: socket.socket,
    host: str,
    port: int,
    *,
    user_id: str = "",
    proxy_name: str | None = None,
) -> None:
    """Ask the SOCKS4 proxy ``sock`` is connected to for a TCP connection to ``host:port``.

    An IPv4 literal is sent as SOCKS4; a name as SOCKS4a (the proxy resolves it). SOCKS4 cannot
    reach IPv6 addresses.

    >>> socks4a_connect(sock, "example.com", 80, proxy_name="127.0.0.1:1080")   # doctest: +SKIP
    """
    name = _peer_name(sock) if proxy_name is None else proxy_name
    _run(sock, socks4a_steps(host, port, user_id, name))


async def socks5_connect_async(
    conn: _RawConnection,
    host: str,
    port: int,
    *,
    username: str | None = None,
    password: str | None = None,
    proxy_name: str,
    timeout: float,
) -> None:
    """``socks5_connect`` over an asyncio connection in raw mode; each read waits at most ``timeout`` s."""
    await _run_async(conn, socks5_steps(host, port, username, password, proxy_name), timeout)


async def socks4a_connect_async(
    conn: _RawConnection, host: str, port: int, *, user_id: str = "", proxy_name: str, timeout: float
) -> None:
    """``socks4a_connect`` over an asyncio connection in raw mode."""
    await _run_async(conn, socks4a_steps(host, port, user_id, proxy_name), timeout)
