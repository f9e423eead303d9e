"""One error hierarchy, raised the same way by the compiled and the pure-Python build.

Non-2xx statuses are responses, not errors. Failures to talk to a server raise subclasses of
:class:`NetworkError`, itself an :class:`OSError`, so ``except OSError`` keeps working for code that
predates fastnet. Every class can be built from a message alone so users can raise them from their own
``Dns``, interceptors and tests; the call fills in ``url`` and ``phase`` when it knows them.

``url`` drops the URL's user-info whoever sets it (the constructor, ``_locate`` or an assignment): it is
the request's URL, path, query and fragment kept, so an error can be logged, pickled or shown without
leaking a password. ``str()`` shows ``URL.redacted()`` (no query either); ``args`` is the message alone.

    NetworkError (OSError)
    ├── ConnectError (ConnectionError)       every route failed; ``attempts`` lists (route, error)
    │   └── RouteError                        a route that cannot be tried (port out of range, ...)
    ├── TimeoutError (builtins.TimeoutError)
    │   ├── ConnectTimeout
    │   ├── ReadTimeout
    │   ├── WriteTimeout
    │   ├── PoolTimeout                       waited too long for a per-host connection slot
    │   └── CallTimeout                       the whole call took longer than ``call_timeout``
    ├── ProtocolError                         the peer broke HTTP/1.1; never retried
    ├── BodyTooLargeError                     a body beyond ``max_body_size`` (decompressed)
    ├── ConnectionClosedError (ConnectionError)  the peer closed before answering; retryable
    ├── UnknownHostError                      DNS found nothing
    ├── ProxyError                            a proxy refused or broke its protocol
    ├── TlsError                              TLS failed
    │   └── TlsVerificationError              untrusted certificate or wrong host name; never retried
    └── CanceledError                         ``Call.cancel()``

``HTTPStatusError`` (from ``Response.raise_for_status()``) is not a network error.
"""

from __future__ import annotations

import builtins
from typing import TYPE_CHECKING

from fastnet.url import URL, mask_password

if TYPE_CHECKING:
    from collections.abc import Iterable

    from fastnet.proxy import Proxy
    from fastnet.response import Response
    from fastnet.route import Route

__all__ = [
    "BodyTooLargeError",
    "CallTimeout",
    "CanceledError",
    "ConnectError",
    "ConnectTimeout",
    "ConnectionClosedError",
    "FastnetError",
    "HTTPStatusError",
    "NetworkError",
    "PoolTimeout",
    "ProtocolError",
    "ProxyError",
    "ReadTimeout",
    "RouteError",
    "TimeoutError",
    "TlsError",
    "TlsVerificationError",
    "UnknownHostError",
    "WriteTimeout",
]


class FastnetError(Exception):
    """Base of every error fastnet defines."""


class NetworkError(FastnetError, OSError):
    """A failure to exchange a request and response with a server.

    ``url`` is the URL being fetched (credentials removed) and ``phase`` the step that failed
    (``"dns"``, ``"connect"``, ``"tls"``, ``"proxy"``, ``"write"``, ``"read"``, ...), both ``None``
    when unknown. ``recovered`` lists earlier failures of the same call that were retried.
    """

    def __init__(self, message: str = "", *, url: URL | str | None = None, phase: str | None = None) -> None:
        OSError.__init__(self, message)
        self.message = message
        self.url = url
        self.phase = phase
        self.recovered: list[BaseException] = []

    @property
    def url(self) -> URL | str | None:
        """The URL being fetched, without user-info; ``None`` when unknown."""
        return self._url

    @url.setter
    def url(self, value: URL | str | None) -> None:
        self._url = _without_userinfo(value)

    def __str__(self) -> str:
        text = self.message
        if self.url is not None or self.phase is not None:
            where = " ".join(part for part in (self.phase, _redact(self.url)) if part)
            if where and where not in text:
                text = f"{text} ({where})" if text else where
        return text

    def __reduce__(self) -> tuple[object, ...]:
        return (self.__class__, (self.message,), self.__dict__)

    def _locate(self, url: URL | str | None, phase: str | None) -> NetworkError:
        """Fill in url and phase if they are not known yet; returns self for ``raise e._locate()``."""
        if self.url is None:
            self.url = url
        if self.phase is None:
            self.phase = phase
        return self


def _without_userinfo(url: URL | str | None) -> URL | str | None:
    """``url`` without its user-info: a URL stays a URL, text stays text (masked when it does not parse)."""
    if isinstance(url, URL):
        if url.username or url.password:
            return url.replace(username="", password="")
        return url
    if isinstance(url, str):
        try:
            parsed = URL(url)
        except ValueError:
            return mask_password(url)
        if parsed.username or parsed.password:
            return str(parsed.replace(username="", password=""))
    return url


def _redact(url: object) -> str:
    if url is None:
        return ""
    redacted = getattr(url, "redacted", None)
    if redacted is not None:
        return str(redacted())
    return str(url)


class ConnectError(NetworkError, builtins.ConnectionError):
    """No route could be connected. ``attempts`` holds ``(route, error)`` for every route tried."""

    def __init__(
        self,
        message: str = "",
        *,
        url: URL | str | None = None,
        phase: str | None = "connect",
        attempts: Iterable[tuple[Route, BaseException]] | None = None,
    ) -> None:
        super().__init__(message, url=url, phase=phase)
        # (route, error): a Route, or what the connect step tried (an address) when it had no route
        self.attempts: list[tuple[Route, BaseException]] = list(attempts or ())

    def __str__(self) -> str:
        text = super().__str__()
        if len(self.attempts) > 1:
            tried = "; ".join(f"{route}: {error}" for route, error in self.attempts)
            text = f"{text} [tried {tried}]"
        return text


class RouteError(ConnectError):
    """A route that cannot even be attempted, such as a proxy port outside 1-65535."""


class TimeoutError(NetworkError, builtins.TimeoutError):  # noqa: A001 - deliberately shadows
    """An operation took longer than its timeout. Also a :class:`builtins.TimeoutError`."""


class ConnectTimeout(TimeoutError):
    """A TCP connect (or proxy/TLS handshake) did not finish within ``connect_timeout``."""


class ReadTimeout(TimeoutError):
    """No bytes arrived within ``read_timeout``."""


class WriteTimeout(TimeoutError):
    """The socket did not accept bytes within ``write_timeout``."""


class PoolTimeout(TimeoutError):
    """No connection slot for the host became free (``max_connections_per_host``) in time."""


class CallTimeout(TimeoutError):
    """The whole call, body included, took longer than ``call_timeout``."""


class ProtocolError(NetworkError):
    """The peer sent something that is not valid HTTP/1.1, or a limit was exceeded."""


class BodyTooLargeError(NetworkError):
    """A response body (as decoded) is larger than the client's ``max_body_size``; nothing beyond the
    limit was kept in memory. Raise it from a streaming loop of your own to stop a download the same way."""


class ConnectionClosedError(NetworkError, builtins.ConnectionError):
    """The peer closed the connection before a response began (typically a stale pooled socket)."""


class UnknownHostError(NetworkError):
    """The host name could not be resolved to any address."""


class ProxyError(NetworkError):
    """A proxy refused the request or broke its protocol. ``proxy`` names it when known."""

    def __init__(
        self,
        message: str = "",
        *,
        url: URL | str | None = None,
        phase: str | None = "proxy",
        proxy: Proxy | str | None = None,
        status_code: int | None = None,
    ) -> None:
        super().__init__(message, url=url, phase=phase)
        self.proxy = proxy
        self.status_code = status_code


class TlsError(NetworkError):
    """The TLS handshake or a TLS record failed."""


class TlsVerificationError(TlsError):
    """The server's certificate is not trusted or does not match the host name. ``str()`` ends with how
    to fix it (``hint``)."""

    @property
    def hint(self) -> str:
        """What to do about it, from what OpenSSL said."""
        said = self.message.lower()
        if "ssl_cert_file=" in said or "ssl_cert_dir=" in said:
            return (
                "the CAs come from the environment: point the variable at a PEM file of CA certificates "
                "(SSL_CERT_DIR: a directory of them named by subject hash), unset it, or pass "
                "verify='/path/to/ca.pem'"
            )
        if "mismatch" in said or "not verified" in said:
            return "the certificate does not name this host: use a host name the certificate lists"
        if "expired" in said or "not yet valid" in said:
            return "the certificate is outside its validity period (or this machine's clock is wrong)"
        return (
            "if the server's certificate comes from a private CA, pass verify='/path/to/ca.pem' (that CA's "
            "certificate, PEM) or set SSL_CERT_FILE; verify=False turns verification off"
        )

    def __str__(self) -> str:
        return f"{super().__str__()}; {self.hint}"


class CanceledError(NetworkError):
    """The call was canceled with :meth:`Call.cancel`."""


class HTTPStatusError(FastnetError):
    """Raised by :meth:`Response.raise_for_status` for 4xx and 5xx responses."""

    def __init__(self, message: str = "", *, response: Response | None = None) -> None:
        super().__init__(message)
        self.response = response
