"""TLS for the connect path: the default context, the handshake, sessions, and TLS inside TLS.

``wrap_tls`` runs a handshake over a connected socket: a plain one, or a TLS socket to an HTTPS proxy,
in which case the origin's TLS session is carried inside the proxy's (``TlsInTlsSocket``). It closes the
socket it was given when the handshake fails, so a caller never holds a half-made connection, and turns
every failure into ``TlsVerificationError``, ``TlsError`` or ``ConnectTimeout`` (``tls_failure``, which
``wrap_tls_async``, the asyncio connection's handshake, shares).

Sessions: ``wrap_tls`` offers the session kept for (host, port), if any. It does not read the new
connection's session: under TLS 1.3 the ticket arrives after the handshake, with the first response, and
reading ``session`` costs a serialisation (about 0.2 ms on CPython 3.11). ``RealConnection`` reads it
once, when the pool gets the connection back after its first exchange (``give_tls_session``), and only
from a TLS layer that was not itself resumed, so a resumed connection never replaces the session it
resumed. ``wrap_tls_async`` does the same for asyncio connections, whose ``start_tls`` takes no session:
see ``SessionOffer``.

CPython's ``ssl`` retries, forever, a handshake read that ``SO_RCVTIMEO`` interrupted, so the handshake
runs under the socket's own timeout (the connect timeout the caller set as the kernel receive timeout);
afterwards ``RealConnection`` makes the socket non-blocking and waits itself (``TlsIo``).
"""

from __future__ import annotations

import contextvars
import os
import socket
import ssl
import struct
import threading
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol, TypeAlias, TypeVar, overload

from fastnet._internal.util.sockets import close_quietly, hostport
from fastnet.exceptions import ConnectTimeout, NetworkError, TlsError, TlsVerificationError

if TYPE_CHECKING:
    from fastnet._internal.connection.connection_user import ConnectionUser

    _PeerCert: TypeAlias = "ssl._PeerCertRetType"

__all__ = [
    "OFFERED_SESSION",
    "SessionOffer",
    "TlsInTlsSocket",
    "TlsSessions",
    "build_ssl_context",
    "client_ssl_context",
    "shared_ssl_context",
    "default_ssl_context",
    "keep_resumable_session",
    "keep_session",
    "tls_failure",
    "wrap_tls",
    "wrap_tls_async",
]

_T = TypeVar("_T")

#: Sessions kept for resumption, by (host, port); shared by a client and the siblings it makes.
TlsSessions = dict[tuple[str, int], ssl.SSLSession]
#: Which environment a shared context trusts: ``("env", SSL_CERT_FILE, SSL_CERT_DIR)``.
EnvCAs: TypeAlias = "tuple[str, str | None, str | None]"
_MAX_SESSIONS = 1024


_DEFAULT_CONTEXT: ssl.SSLContext | None = None
_DEFAULT_LOCK = threading.Lock()


def default_ssl_context() -> ssl.SSLContext:
    """The process's context for ``verify=True`` (certifi's bundle), built once on first use and shared
    by every client with that setting: the CA bundle is loaded once, and clients that share a pool can
    share connections (the TLS context is part of the pool key)."""
    global _DEFAULT_CONTEXT
    context = _DEFAULT_CONTEXT
    if context is None:
        with _DEFAULT_LOCK:
            context = _DEFAULT_CONTEXT
            if context is None:
                context = _DEFAULT_CONTEXT = _new_context(True)
    return context


def build_ssl_context(
    verify: bool | str | ssl.SSLContext,
    *,
    cert: str | tuple[str, ...] | None = None,
    min_tls_version: str | ssl.TLSVersion | None = None,
    trust_env: bool = False,
) -> ssl.SSLContext:
    """The context for a client's TLS options.

    ``verify``: certifi's bundle (True: the shared default), no checks (False), a CA file or directory
    path, or the caller's own ``SSLContext`` (used as it is, so ``cert`` and ``min_tls_version`` go into
    it, not here). With ``verify=True`` and ``trust_env``, ``SSL_CERT_FILE`` and ``SSL_CERT_DIR`` name the
    CAs instead of certifi (as OpenSSL, curl and httpx read them), read when the client is made.
    ``cert``: a client certificate, a PEM file holding the certificate and its key, or ``(certfile,
    keyfile)`` or ``(certfile, keyfile, password)``. ``min_tls_version``: ``"1.2"``, ``"1.3"`` or an
    ``ssl.TLSVersion`` (OpenSSL's default otherwise, TLS 1.2 on current systems).

    ``verify=True`` alone gives the process's shared context, and the environment's CAs one shared context
    per distinct environment (the context is part of the connection pool's key, so such clients share
    connections); anything else makes a new context, read from the files now."""
    context, shared = client_ssl_context(
        verify, cert=cert, min_tls_version=min_tls_version, trust_env=trust_env
    )
    return shared_ssl_context(shared) if context is None else context


def client_ssl_context(
    verify: bool | str | ssl.SSLContext,
    *,
    cert: str | tuple[str, ...] | None = None,
    min_tls_version: str | ssl.TLSVersion | None = None,
    trust_env: bool = False,
) -> tuple[ssl.SSLContext | None, EnvCAs | None]:
    """``build_ssl_context``'s answer as ``(context, shared)``, without building a shared context:
    ``context`` is ``None`` where ``build_ssl_context`` would give one of the process's shared contexts,
    and ``shared_ssl_context(shared)`` is that context. A client keeps the key and builds the context on
    its first HTTPS connection (``Connector.tls_context()``), so plain-HTTP use never loads a CA
    bundle. Options are checked, and the environment read, now either way."""
    if isinstance(verify, ssl.SSLContext):
        if cert is not None or min_tls_version is not None:
            raise ValueError(
                "verify is an ssl.SSLContext: load the client certificate (load_cert_chain) and set "
                "minimum_version on it instead of passing cert= or min_tls_version="
            )
        return verify, None
    minimum = _tls_version(min_tls_version)
    cert_chain = _cert_chain(cert)
    if verify is True and trust_env:
        cafile = _environment_path("SSL_CERT_FILE", os.path.isfile)
        capath = _environment_path("SSL_CERT_DIR", os.path.isdir)
        if cafile is not None or capath is not None:
            verify = ("env", cafile, capath)  # type: ignore[assignment]
    if cert_chain is None and minimum is None and (verify is True or isinstance(verify, tuple)):
        return None, None if verify is True else verify
    context = _new_context(verify)
    if cert_chain is not None:
        certfile, keyfile, password = cert_chain
        try:
            context.load_cert_chain(certfile, keyfile, password)
        except (OSError, ssl.SSLError) as exc:
            raise ValueError(f"cert: cannot load the client certificate from {certfile!r}: {exc}") from None
    if minimum is not None:
        context.minimum_version = minimum
    return context, None


def shared_ssl_context(key: EnvCAs | None) -> ssl.SSLContext:
    """One of the process's shared contexts, built on first use: certifi's (``key`` ``None``, see
    ``default_ssl_context``) or the environment's CAs (``key`` ``("env", cafile, capath)``, one context
    per distinct environment)."""
    if key is None:
        return default_ssl_context()
    with _DEFAULT_LOCK:
        context = _ENV_CONTEXTS.get(key)
    if context is None:
        context = _new_context(key)
        with _DEFAULT_LOCK:
            context = _ENV_CONTEXTS.setdefault(key, context)
    return context


_ENV_CONTEXTS: dict[EnvCAs, ssl.SSLContext] = {}


def _ca_source(key: EnvCAs) -> str:
    """``SSL_CERT_FILE='...'`` and/or ``SSL_CERT_DIR='...'``: where an environment context's CAs are."""
    _env, cafile, capath = key
    named = [
        f"{name}={path!r}" for name, path in (("SSL_CERT_FILE", cafile), ("SSL_CERT_DIR", capath)) if path
    ]
    return " and ".join(named)


_WARNED: set[tuple[str, str]] = set()


def _environment_path(name: str, exists: Callable[[str], bool]) -> str | None:
    """``SSL_CERT_FILE``/``SSL_CERT_DIR`` when it names a file/directory; one that does not is ignored (as
    httpx and OpenSSL do) with a warning, once per value."""
    path = os.environ.get(name)
    if not path:
        return None
    if exists(path):
        return path
    if (name, path) not in _WARNED:
        _WARNED.add((name, path))
        kind = "file" if name.endswith("FILE") else "directory"
        warnings.warn(f"{name}={path!r} names no {kind}: it is ignored", RuntimeWarning, stacklevel=4)
    return None


_TLS_VERSIONS = {"1.2": ssl.TLSVersion.TLSv1_2, "1.3": ssl.TLSVersion.TLSv1_3}


def _tls_version(value: object) -> ssl.TLSVersion | None:
    if value is None:
        return None
    if isinstance(value, ssl.TLSVersion):
        return value  # as given: TLSv1 and TLSv1_1 too, with Python's DeprecationWarning
    if not isinstance(value, str):
        raise TypeError(
            f"min_tls_version must be '1.2', '1.3' or an ssl.TLSVersion, not {type(value).__name__}"
        )
    text = value.strip().lower().removeprefix("tlsv").removeprefix("tls").strip()
    version = _TLS_VERSIONS.get(text)
    if version is None:
        raise ValueError(
            f"min_tls_version must be '1.2' or '1.3' (or an ssl.TLSVersion, for an older one), not {value!r}"
        )
    return version


def _cert_chain(cert: str | tuple[str, ...] | None) -> tuple[str, str | None, str | None] | None:
    if cert is None:
        return None
    if isinstance(cert, (str, os.PathLike)):
        parts: tuple[str, ...] = (cert,)
    elif isinstance(cert, tuple) and 1 <= len(cert) <= 3:
        parts = cert
    else:
        raise TypeError("cert must be a path, or (certfile, keyfile) or (certfile, keyfile, password)")
    certfile = os.fspath(parts[0])
    keyfile = os.fspath(parts[1]) if len(parts) > 1 and parts[1] is not None else None
    password = parts[2] if len(parts) > 2 else None
    for path in (certfile, keyfile):
        if path is not None and not os.path.isfile(path):
            raise ValueError(f"cert: no file at {path!r}")
    if password is not None and not isinstance(password, (str, bytes)):
        raise TypeError("cert: the key password must be a str or bytes")
    return certfile, keyfile, password


def _new_context(verify: bool | str | os.PathLike[str] | EnvCAs) -> ssl.SSLContext:
    if verify is True:
        # imported on first use: certifi imports importlib.resources, about a fifth of `import fastnet`,
        # which a client that never verifies certifi's way does not need
        import certifi

        context = ssl.create_default_context(cafile=certifi.where())
    elif verify is False:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    elif isinstance(verify, tuple):  # ("env", SSL_CERT_FILE, SSL_CERT_DIR)
        try:
            context = ssl.create_default_context(cafile=verify[1], capath=verify[2])
        except OSError as exc:  # ssl.SSLError too: a file of garbage, an empty one, one gone since
            reason = getattr(exc, "reason", None) or exc.strerror or exc
            # the file is read now; a directory only when a handshake looks a certificate up in it
            source = f"SSL_CERT_FILE={verify[1]!r}" if verify[1] else _ca_source(verify)
            raise TlsVerificationError(
                f"the CA certificates of {source} cannot be loaded ({reason}): no server certificate can "
                "be verified",
                phase="tls",
            ) from None
    elif isinstance(verify, (str, os.PathLike)):
        path = os.fspath(verify)
        if os.path.isdir(path):
            context = ssl.create_default_context(capath=path)
        elif os.path.isfile(path):
            try:
                context = ssl.create_default_context(cafile=path)
            except ssl.SSLError as exc:
                raise ValueError(f"verify: {path!r} holds no PEM certificate ({exc})") from None
        else:
            raise ValueError(f"verify: no CA file or directory at {path!r}")
    else:
        raise TypeError(f"verify must be True, False, a CA bundle path or an ssl.SSLContext, not {verify!r}")
    try:
        context.set_alpn_protocols(["http/1.1"])
    except NotImplementedError:  # pragma: no cover - OpenSSL without ALPN
        pass
    return context


class SessionOffer:
    """The session an asyncio connection's next TLS handshake offers (``session``: set by
    ``wrap_tls_async`` for the length of one ``start_tls``, else ``None``). asyncio's and uvloop's
    ``start_tls`` make the ``SSLObject`` themselves and take no session, so the offer reaches
    ``_ResumingSSLObject`` through ``OFFERED_SESSION``: the connection's transport is made with it set
    (uvloop runs the handshake's callbacks in the transport's context), and so is ``start_tls`` (asyncio
    runs them in a copy of the caller's). One offer per connection: no other handshake can see it."""

    __slots__ = ("session",)

    def __init__(self) -> None:
        self.session: ssl.SSLSession | None = None


OFFERED_SESSION: contextvars.ContextVar[SessionOffer | None] = contextvars.ContextVar(
    "fastnet_tls_offer", default=None
)


class _ResumingSSLObject(ssl.SSLObject):
    """The ``sslobject_class`` that ``wrap_tls_async`` gives a context (one still on ``ssl.SSLObject``):
    ``ssl.SSLObject`` itself, except that a client-side object made where ``OFFERED_SESSION`` holds an
    offer with a session (a fastnet connection's handshake, see ``SessionOffer``) offers that session."""

    @classmethod
    def _create(
        cls,
        incoming: ssl.MemoryBIO,
        outgoing: ssl.MemoryBIO,
        server_side: bool = False,
        server_hostname: str | None = None,
        session: ssl.SSLSession | None = None,
        context: ssl.SSLContext | None = None,
    ) -> ssl.SSLObject:
        if session is None and not server_side:
            offer = OFFERED_SESSION.get()
            if offer is not None:
                session = offer.session
        return super()._create(  # type: ignore[misc,no-any-return]
            incoming, outgoing, server_side, server_hostname, session=session, context=context
        )


@overload
def wrap_tls(  # type: ignore[overload-overlap]  # the first match wins: over TLS, TLS inside TLS
    sock: ssl.SSLSocket | TlsInTlsSocket,
    host: str,
    port: int,
    context: ssl.SSLContext,
    sessions: TlsSessions,
    user: ConnectionUser,
) -> TlsInTlsSocket: ...
@overload
def wrap_tls(
    sock: socket.socket,
    host: str,
    port: int,
    context: ssl.SSLContext,
    sessions: TlsSessions,
    user: ConnectionUser,
) -> ssl.SSLSocket: ...
def wrap_tls(
    sock: socket.socket | TlsInTlsSocket,
    host: str,
    port: int,
    context: ssl.SSLContext,
    sessions: TlsSessions,
    user: ConnectionUser,
) -> ssl.SSLSocket | TlsInTlsSocket:
    """TLS to ``host`` over ``sock``: a plain socket, or a TLS socket to an HTTPS proxy (TLS inside TLS).

    ``user`` is the call (its ``events`` hear ``secure_connect_start/end``). The session kept in
    ``sessions`` for (host, port) is offered; the new one is kept later, by the connection (see the module
    doc). On failure ``sock`` is closed (``ssl`` closes a socket whose handshake failed; the TLS-in-TLS
    path does the same).
    """
    events = user.events
    if events is not None:
        events.secure_connect_start(user)
    session = sessions.get((host, port))
    tls: ssl.SSLSocket | TlsInTlsSocket
    try:
        if isinstance(sock, (ssl.SSLSocket, TlsInTlsSocket)):
            tls = TlsInTlsSocket(sock, context, host, session)
        else:
            received = sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, 16)
            seconds, micros = struct.unpack("ll", received)
            limit = seconds + micros / 1e6
            sock.settimeout(limit if limit > 0 else None)
            tls = context.wrap_socket(sock, server_hostname=host, session=session)
            tls.settimeout(None)
    except OSError as exc:  # ssl's errors and socket timeouts are all OSErrors
        close_quietly(sock)
        raise tls_failure(exc, host, port, context) from exc
    if events is not None:
        events.secure_connect_end(user, tls.version())
    return tls


async def wrap_tls_async(
    conn: _AsyncConnection,
    host: str,
    port: int,
    context: ssl.SSLContext,
    sessions: TlsSessions,
    user: ConnectionUser,
    timeout: float,
) -> None:
    """``wrap_tls`` for an asyncio connection (``AsyncRealConnection.start_tls``: over its plain transport,
    or inside the TLS to an HTTPS proxy), the handshake bounded by ``timeout`` s (0: none). The same
    events, errors and messages; on failure ``conn`` is closed.

    Sessions as ``wrap_tls``'s: the one kept for (host, port) is offered, and the new one is kept when the
    pool gets the connection back after its first exchange (``AsyncRealConnection.give_tls_session``).
    ``start_tls`` takes no session, so it is offered through the connection's ``SessionOffer``, which the
    context's ``sslobject_class`` reads once this has set it to ``_ResumingSSLObject`` (for everyone else
    the same as ``ssl.SSLObject``; a context whose class was changed already is left alone: no resumption)."""
    events = user.events
    if events is not None:
        events.secure_connect_start(user)
    offer = conn.tls_offer
    offer.session = sessions.get((host, port))
    if offer.session is not None and context.sslobject_class is ssl.SSLObject:
        context.sslobject_class = _ResumingSSLObject
    token = OFFERED_SESSION.set(offer)
    try:
        await conn.start_tls(context, host, timeout)
    except OSError as exc:
        conn.close()
        raise tls_failure(exc, host, port, context) from exc
    finally:
        offer.session = None
        OFFERED_SESSION.reset(token)
    conn.offer_tls_session(sessions, (host, port))
    if events is not None:
        events.secure_connect_end(user, conn.tls_version)


class _AsyncConnection(Protocol):
    """What ``wrap_tls_async`` uses of an asyncio connection (``AsyncRealConnection``, above this layer)."""

    tls_offer: SessionOffer
    tls_version: str | None

    async def start_tls(self, context: ssl.SSLContext, server_hostname: str, timeout: float) -> None: ...
    def offer_tls_session(self, sessions: TlsSessions, key: tuple[str, int]) -> None: ...
    def close(self) -> None: ...


def tls_failure(exc: OSError, host: str, port: int, context: ssl.SSLContext | None = None) -> NetworkError:
    """What a failed handshake with ``host:port`` raises: ``TlsVerificationError`` for an untrusted
    certificate or a host name it does not match (naming ``SSL_CERT_FILE``/``SSL_CERT_DIR`` when
    ``context``'s CAs came from them), ``ConnectTimeout`` when it timed out, else ``TlsError``."""
    if isinstance(exc, ssl.SSLCertVerificationError):
        message = f"certificate verification failed for {host}: {exc.verify_message}"
        for key, shared in list(_ENV_CONTEXTS.items()):
            if shared is context:
                message += f" (the trusted CAs are those of {_ca_source(key)})"
        return TlsVerificationError(message, phase="tls")
    if isinstance(exc, ssl.CertificateError):
        return TlsVerificationError(f"hostname {host} not verified: {exc}", phase="tls")
    if isinstance(exc, ssl.SSLWantReadError):  # SO_RCVTIMEO expired under the outer TLS socket
        return ConnectTimeout(f"TLS handshake with {hostport(host, port)} timed out", phase="tls")
    if isinstance(exc, ssl.SSLError):
        return TlsError(f"TLS handshake with {hostport(host, port)} failed: {exc}", phase="tls")
    if isinstance(exc, (TimeoutError, BlockingIOError)):
        return ConnectTimeout(f"TLS handshake with {hostport(host, port)} timed out", phase="tls")
    return TlsError(f"TLS handshake with {hostport(host, port)} failed: {exc}", phase="tls")


def keep_resumable_session(
    sessions: TlsSessions, key: tuple[str, int], tls: ssl.SSLSocket | ssl.SSLObject | TlsInTlsSocket
) -> None:
    """Keep the session of ``tls`` (an ``SSLSocket`` or ``SSLObject`` that did not itself resume one)
    under ``key``; under TLS 1.3 a session without a ticket cannot be resumed, so the stored one stays."""
    session = tls.session
    if session is not None and (session.has_ticket or tls.version() != "TLSv1.3"):
        keep_session(sessions, key, session)


def keep_session(sessions: TlsSessions, key: tuple[str, int], session: ssl.SSLSession | None) -> None:
    """Keep ``session`` for the next connection to ``key`` (host, port) to offer (at most about
    ``_MAX_SESSIONS`` addresses: past that the dict starts over)."""
    if session is not None:
        if len(sessions) > _MAX_SESSIONS:
            sessions.clear()
        sessions[key] = session


class TlsInTlsSocket:
    """A TLS session carried inside another TLS connection, with the socket methods fastnet uses.

    Needed for an https origin through ``Proxy.https``: the outer TLS connection goes to the proxy,
    the inner one (an ``ssl.SSLObject`` over two ``ssl.MemoryBIO``) to the origin through the CONNECT
    tunnel. Records are moved between the BIOs and the outer socket on demand, in the calling thread.
    Timeouts are the outer socket's (``setsockopt``/``settimeout`` are passed through); a timeout
    surfaces as the outer socket's ``SSLWantReadError``/``socket.timeout``, as on a direct TLS socket.

    >>> inner = TlsInTlsSocket(proxy_tls_socket, context, "origin.example", None)  # doctest: +SKIP
    >>> inner.sendall(b"GET / HTTP/1.1\r\nHost: origin.example\r\n\r\n")        # doctest: +SKIP
    """

    __slots__ = ("_outer", "_obj", "_incoming", "_outgoing", "_eof")

    def __init__(
        self,
        outer: ssl.SSLSocket | TlsInTlsSocket,
        context: ssl.SSLContext,
        server_hostname: str,
        session: ssl.SSLSession | None = None,
    ) -> None:
        self._outer = outer
        self._incoming = ssl.MemoryBIO()
        self._outgoing = ssl.MemoryBIO()
        self._eof = False
        self._obj = context.wrap_bio(
            self._incoming, self._outgoing, server_hostname=server_hostname, session=session
        )
        self._run(self._obj.do_handshake)

    # -- record pump ------------------------------------------------------------------------------

    def _flush(self) -> None:
        data = self._outgoing.read()
        if data:
            self._outer.sendall(data)

    def _run(self, op: Callable[..., _T], *args: object) -> _T:
        while True:
            try:
                result = op(*args)
            except ssl.SSLWantReadError:
                self._flush()
                if self._eof:
                    raise ssl.SSLEOFError(ssl.SSL_ERROR_EOF, "EOF in the middle of a TLS record") from None
                data = self._outer.recv(65536)
                if data:
                    self._incoming.write(data)
                else:
                    self._eof = True
                    self._incoming.write_eof()
                continue
            self._flush()
            return result

    # -- the socket surface ---------------------------------------------------------------------

    def sendall(self, data: bytes | bytearray | memoryview) -> None:
        view = memoryview(data)
        while len(view):
            written = self._run(self._obj.write, view)
            view = view[written:]

    def send(self, data: bytes | bytearray | memoryview) -> int:
        self.sendall(data)
        return len(data)

    def recv_into(self, buffer: bytearray | memoryview, nbytes: int = 0, flags: int = 0) -> int:
        if flags:
            raise ValueError("non-zero flags not allowed in calls to recv_into() on a TLS-in-TLS socket")
        size = nbytes or len(buffer)
        if size == 0:
            return 0
        try:
            return int(self._run(self._obj.read, size, buffer))
        except (ssl.SSLZeroReturnError, ssl.SSLEOFError):
            return 0  # close_notify, or a ragged EOF (as ssl's suppress_ragged_eofs)

    def recv(self, bufsize: int = 65536, flags: int = 0) -> bytes:
        if flags:
            # a health probe (MSG_PEEK | MSG_DONTWAIT): report decrypted bytes, else peek the raw socket
            if self._obj.pending() or self._incoming.pending:
                return b"\x00"
            return socket.socket.recv(self._outer, bufsize, flags)  # type: ignore[arg-type]  # an SSLSocket
        buffer = bytearray(bufsize)
        n = self.recv_into(buffer)
        return bytes(buffer[:n])

    def pending(self) -> int:
        return int(self._obj.pending())

    def version(self) -> str | None:
        return self._obj.version()

    def cipher(self) -> tuple[str, str, int] | None:
        return self._obj.cipher()

    def selected_alpn_protocol(self) -> str | None:
        return self._obj.selected_alpn_protocol()

    def getpeercert(self, binary_form: bool = False) -> _PeerCert:
        return self._obj.getpeercert(binary_form)

    @property
    def session(self) -> ssl.SSLSession | None:
        return self._obj.session

    @property
    def session_reused(self) -> bool:
        return bool(self._obj.session_reused)

    @property
    def server_hostname(self) -> str | None:
        return self._obj.server_hostname

    @property
    def outer(self) -> ssl.SSLSocket | TlsInTlsSocket:
        """The TLS socket to the proxy that carries this session."""
        return self._outer

    def setsockopt(self, level: int, option: int, value: int | bytes, /) -> None:
        self._outer.setsockopt(level, option, value)

    def getsockopt(self, *args: int) -> int | bytes:
        return self._outer.getsockopt(*args)

    def settimeout(self, value: float | None) -> None:
        self._outer.settimeout(value)

    def gettimeout(self) -> float | None:
        return self._outer.gettimeout()

    def setblocking(self, flag: bool) -> None:
        self._outer.setblocking(flag)

    def fileno(self) -> int:
        return self._outer.fileno()

    def getpeername(self) -> object:
        return self._outer.getpeername()

    def getsockname(self) -> object:
        return self._outer.getsockname()

    def shutdown(self, how: int) -> None:
        socket.socket.shutdown(self._outer, how)  # type: ignore[arg-type]  # an SSLSocket

    def close(self) -> None:
        self._outer.close()

    def __enter__(self) -> TlsInTlsSocket:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<TlsInTlsSocket {self._obj.server_hostname} over {self._outer!r}>"
