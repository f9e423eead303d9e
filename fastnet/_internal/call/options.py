"""The client options, each declared once: ``OPTIONS``, one ``Option`` per keyword of ``fastnet.Client``.

An option's declaration is its name, its type (the annotation ``Client.__init__`` shows), its default,
its check and one line of documentation. Everything else about options comes from this table:

* ``scripts/options_doc.py`` writes ``generated_options.py`` from it: the ``ClientOptions`` value
  (``client.config``), ``CheckedOptions`` and ``check_options`` (every check, run once per client), and
  ``OptionsBase``, the typed surface both clients inherit: the keyword-only ``__init__`` (one parameter
  per option, documented), ``with_options`` with the same parameters, and a read-only ``client.<name>``
  attribute per option. The same script writes the option reference in ``docs/OPTIONS.md``;
  ``python scripts/options_doc.py --check`` (part of ``.ci/lint``) fails when either is out of date;
* the helpers below, used by that generated code: an unknown keyword is a ``TypeError`` naming the
  nearest option (``keyword_options``), ``timeout=`` spreads over the four timeouts not given by name
  (``given_options``), and ``config``'s repr hides secrets (``shown_repr``, each option's ``shown``).

Adding an option: one ``Option(...)`` below, ``python scripts/options_doc.py``, then its use in the
engine (``assembly.py`` reads ``CheckedOptions``).

A check takes the option's name and the value given and returns what the engine is built from (a
timeout in seconds, 0.0 for none; ``Headers`` for ``headers``...), raising ``TypeError`` or
``ValueError`` with a message that names the option. An option without a check goes to the engine as
given and is checked there, together with others (``verify``, ``cert``, ``min_tls_version`` by the TLS
context; ``max_connections_per_host`` by the ``ConnectionPool``; ``timeout`` as it is spread).

The types of what options and per-request options accept (``DnsLike``, ``InterceptorLike``,
``AuthLike``...) are here too, with ``GetOptions``/``BodyOptions``/``RequestOptions``: the per-request
keywords of the verbs, for ``fastnet.get(url, **options)`` and friends.
"""

from __future__ import annotations

import difflib
import functools
import inspect
import ipaddress
import ssl  # noqa: F401 - the types of verify and min_tls_version name it
from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping
from typing import (
    TYPE_CHECKING,
    Any,
    Concatenate,
    Generic,
    NamedTuple,
    ParamSpec,
    Protocol,
    TypeAlias,
    TypedDict,
    TypeVar,
    cast,
    overload,
)

from fastnet._internal.core.client_core import MAX_BODY_SIZE, MAX_FOLLOW_UPS
from fastnet._internal.util.timeouts import timeout_seconds
from fastnet.connection_pool import ConnectionPool
from fastnet.cookies import NO_COOKIES
from fastnet.dispatcher import Dispatcher
from fastnet.dns import as_dns, shared_default_dns
from fastnet.events import EventListener
from fastnet.forms import encode_pairs
from fastnet.headers import Headers, as_headers
from fastnet.proxy import Proxy
from fastnet.timeout import USE_CLIENT_DEFAULT, as_timeout
from fastnet.url import URL

if TYPE_CHECKING:
    from fastnet._internal._sync.real_call import RealCall
    from fastnet.authenticator import Authenticator
    from fastnet.cookies import Cookie, CookieJar
    from fastnet.dns import Dns
    from fastnet.dns._base import DnsFunction
    from fastnet.forms import FileTypes, PairsLike
    from fastnet.headers import HeadersLike
    from fastnet.interceptor import Chain, Interceptor
    from fastnet.proxy import ProxySelector
    from fastnet.request import BodyLike, Request
    from fastnet.response import Response
    from fastnet.route import Route
    from fastnet.timeout import TimeoutTypes, UseClientDefault

__all__ = [
    "OPTIONS",
    "TIMEOUT_OPTIONS",
    "AuthLike",
    "AuthenticatorLike",
    "BodyOptions",
    "CookieJarLike",
    "CookiesLike",
    "DataLike",
    "DnsLike",
    "FilesLike",
    "GetOptions",
    "InterceptorLike",
    "Option",
    "OptionAttribute",
    "ParamsLike",
    "RequestOptions",
    "given_options",
    "keyword_options",
    "same_signature",
    "shown_repr",
    "unknown_options",
]

T = TypeVar("T")
R = TypeVar("R")
S = TypeVar("S")
P = ParamSpec("P")


# -- what options accept --------------------------------------------------------------------------------


class _AsyncInterceptor(Protocol):
    async def intercept(self, chain: Any) -> Response: ...


class _AsyncAuthenticator(Protocol):
    async def authenticate(self, route: Any, response: Response) -> Request | None: ...


class _AsyncCookieJar(Protocol):
    async def load_for(self, url: URL) -> list[Cookie]: ...
    async def save_from_response(self, url: URL, cookies: list[Cookie]) -> None: ...


class _AsyncDns(Protocol):
    async def lookup(self, hostname: str) -> list[str]: ...


#: ``interceptors=`` entries: an ``Interceptor`` or a function of the chain (``async def`` ones, and
#: objects with ``async def intercept``, for ``AsyncClient``).
InterceptorLike: TypeAlias = (
    "Interceptor | _AsyncInterceptor | Callable[[Chain], Response] | Callable[[Any], Awaitable[Response]]"
)
#: ``authenticator=``: an ``Authenticator`` or a function ``(route, response) -> Request | None``.
AuthenticatorLike: TypeAlias = (
    "Authenticator | _AsyncAuthenticator | Callable[[Route | None, Response], Request | None]"
    " | Callable[[Route | None, Response], Awaitable[Request | None]]"
)
#: ``auth=``: ``(user, password)`` for a Basic ``Authorization``, or an authenticator.
AuthLike: TypeAlias = "tuple[str, str] | AuthenticatorLike"
#: ``dns=``: a resolver (``fastnet.dns``) or a function of the host name giving its addresses.
DnsLike: TypeAlias = "Dns | _AsyncDns | DnsFunction"
#: ``cookie_jar=``: a ``CookieJar`` (``AsyncClient`` also takes one with ``async def`` methods).
CookieJarLike: TypeAlias = "CookieJar | _AsyncCookieJar"
#: ``params=``: a mapping or pairs, or a query string.
ParamsLike: TypeAlias = "PairsLike | str | bytes"
#: ``cookies=``: a mapping or ``(name, value)`` pairs, or ``Cookie`` objects (those that match the URL).
CookiesLike: TypeAlias = "Mapping[str, str] | Iterable[tuple[str, str] | Cookie]"
#: ``data=``: form fields (a mapping or pairs), else a body.
DataLike: TypeAlias = "PairsLike | BodyLike"
#: ``files=``: multipart file fields, a mapping or ``(name, file)`` pairs.
FilesLike: TypeAlias = "Mapping[str, FileTypes] | Iterable[tuple[str, FileTypes]]"


# -- the checks -----------------------------------------------------------------------------------------


def seconds(name: str, value: object) -> float:
    """A timeout: seconds as a float, 0.0 for ``None`` (no timeout)."""
    return timeout_seconds(name, value)


def flag(name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, not {value!r}")
    return value


def follow_up_count(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be an int >= 0, not {value!r}")
    return value


def proxy_of(name: str, value: object) -> Proxy | None:
    if value is None or isinstance(value, Proxy):
        return value
    if isinstance(value, str):
        return Proxy.from_url(value)
    raise TypeError(f"{name} must be a fastnet.Proxy or a proxy URL, not {type(value).__name__}")


def proxy_selector(name: str, value: object) -> ProxySelector | None:
    if value is not None and not callable(getattr(value, "select", None)):
        raise TypeError(f"{name} must have a select(url) method")
    return value  # type: ignore[return-value]


def authenticator(name: str, value: object) -> AuthenticatorLike | None:
    if value is not None and not (callable(getattr(value, "authenticate", None)) or callable(value)):
        raise TypeError(f"{name} must have an authenticate(route, response) method")
    return value  # type: ignore[return-value]


def header_names(name: str, value: object) -> frozenset[str]:
    """Header names, lowercased."""
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise TypeError(f"{name} must be a collection of header names")
    names = list(value)
    if not all(isinstance(h, str) for h in names):
        raise TypeError(f"{name} must be a collection of header names")
    return frozenset(h.lower() for h in names)


def resolver(name: str, value: object) -> Dns:
    """The resolver; without one, the process's shared cache over the system resolver (so clients that
    share a pool share its connections: the DNS is part of the pool key, by identity)."""
    return shared_default_dns() if value is None else as_dns(cast("Dns", value))  # as_dns checks it


def interceptor_list(name: str, value: object) -> list[InterceptorLike]:
    """The entries, in order (each is checked when the chain is assembled, for its client's kind)."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise TypeError(f"{name} must be a list of interceptors")
    return list(value)


def cookie_jar(name: str, value: object) -> CookieJarLike | None:
    """The jar; ``None`` for ``NO_COOKIES``, so that a call skips cookies entirely."""
    if value is NO_COOKIES or value is None:
        return None
    if not (hasattr(value, "load_for") and hasattr(value, "save_from_response")):
        raise TypeError(f"{name} must have load_for(url) and save_from_response(url, cookies)")
    return value


def connection_pool(name: str, value: object) -> ConnectionPool | None:
    if value is not None and not isinstance(value, ConnectionPool):
        raise TypeError(f"{name} must be a fastnet.ConnectionPool")
    return value


def event_listener(name: str, value: object) -> EventListener | None:
    """The listener; ``None`` for a plain ``EventListener``, whose methods do nothing: no events at all."""
    if value is None or type(value) is EventListener:
        return None
    if not isinstance(value, EventListener):
        raise TypeError(f"{name} must be a fastnet.EventListener")
    return value


def listener_factory(name: str, value: object) -> Callable[[RealCall], EventListener] | None:
    if value is not None and not callable(value):
        raise TypeError(f"{name} must be callable(call) -> EventListener")
    return value


def user_agent(name: str, value: object) -> str | None:
    """The value as a plain ``str`` (a ``StrEnum`` member gives its characters)."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str")
    Headers({"User-Agent": value})  # checks the value
    return str.__str__(value)


def body_limit(name: str, value: object) -> int:
    """The limit in bytes, 0 for ``None`` (no limit)."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a number of bytes >= 1, or None for no limit, not {value!r}")
    return value


def dispatcher(name: str, value: object) -> Dispatcher | None:
    if value is not None and not isinstance(value, Dispatcher):
        raise TypeError(f"{name} must be a fastnet.Dispatcher")
    return value


def default_headers(name: str, value: object) -> Headers | None:
    if value is None:
        return None
    try:
        return as_headers(value)  # type: ignore[arg-type]
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"{name}: {exc}") from None


def base_url(name: str, value: object) -> URL | None:
    if value is None:
        return None
    if not isinstance(value, (str, URL)):
        raise TypeError(f"{name} must be a str or URL, not {type(value).__name__}")
    try:
        return URL(value)
    except ValueError as exc:
        raise ValueError(f"{name}: {exc}") from None


def query(name: str, value: object) -> str | None:
    """The parameters encoded (``a=1&b=2``); ``None`` for none."""
    if value is None:
        return None
    return encode_pairs(cast("PairsLike", value), name) or None  # encode_pairs checks it


def auth(name: str, value: object) -> tuple[str, str] | AuthenticatorLike | None:
    """``(user, password)``, or the authenticator."""
    if value is None:
        return None
    if isinstance(value, (tuple, list)):
        if len(value) != 2:
            raise ValueError(f"{name} must be a (user, password) pair or an Authenticator")
        return (value[0], value[1])
    if callable(getattr(value, "authenticate", None)) or callable(value):
        return value  # type: ignore[return-value]
    raise TypeError(f"{name} must be a (user, password) pair or an Authenticator, not {type(value).__name__}")


def ip_address(name: str, value: object) -> str | None:
    """The address in its compressed form (``[::1]`` → ``::1``)."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise TypeError(f"{name} must be an IP address string or None, not {value!r}")
    try:
        return ipaddress.ip_address(value.strip("[]")).compressed
    except ValueError:
        raise ValueError(f"{name} must be an IP address, not {value!r}") from None


# -- how config's repr shows a value (no secret in a repr) -------------------------------------------


class _Shown(str):
    def __repr__(self) -> str:
        return str(self)


def _hide_password(value: object) -> object:
    if isinstance(value, (tuple, list)) and len(value) == 2:
        return (value[0], _Shown("***"))
    return value


def _hide_key_password(value: object) -> object:
    if isinstance(value, tuple) and len(value) > 2 and value[2] is not None:
        return (*value[:2], _Shown("***"), *value[3:])
    return value


def _hide_userinfo(value: object) -> object:
    if isinstance(value, str) and "@" in value:
        try:
            return _Shown(repr(URL(value)))
        except ValueError:
            return _Shown("***")
    return value


def _hide_sensitive_headers(value: object) -> object:
    if isinstance(value, Headers):
        return value
    try:
        return as_headers(value)  # type: ignore[arg-type]  # its repr hides sensitive values
    except (TypeError, ValueError):
        return value


# -- the table ------------------------------------------------------------------------------------------


class Option(NamedTuple):
    """One client option."""

    name: str
    #: The annotation ``Client.__init__`` shows (names from this module's imports and aliases).
    type: str
    default: object
    #: ``check(name, value)``: the value checked, as the engine takes it; None: the engine checks it.
    check: Callable[[str, Any], object] | None
    #: One line for ``help(fastnet.Client)`` and ``docs/OPTIONS.md`` (reStructuredText/Markdown literals).
    doc: str
    #: A change gives a ``with_options`` sibling its own route database and TLS context.
    route: bool = False
    #: ``client.<name>`` reads the option (False: the client has a property of that name saying more).
    attribute: bool = True
    #: How ``client.config``'s repr shows a value (secrets as ``***``); None: as it is.
    shown: Callable[[object], object] | None = None


OPTIONS: tuple[Option, ...] = (
    Option(
        "connect_timeout", "float | None", 10.0, seconds,
        "Seconds to connect (TCP, TLS, a proxy's CONNECT) before ``ConnectTimeout``; ``None``: no limit.",
    ),
    Option(
        "read_timeout", "float | None", 10.0, seconds,
        "Seconds one read may wait for the server before ``ReadTimeout``; ``None``: no limit.",
    ),
    Option(
        "write_timeout", "float | None", 10.0, seconds,
        "Seconds one write may wait for the socket before ``WriteTimeout``; ``None``: no limit.",
    ),
    Option(
        "call_timeout", "float | None", None, seconds,
        "Seconds for the whole call, redirects, retries and body too (``CallTimeout``); ``None``: no limit.",
    ),
    Option("follow_redirects", "bool", True, flag, "Follow redirects (3xx with a ``Location``)."),
    Option(
        "follow_ssl_redirects", "bool", True, flag,
        "Follow redirects that switch between ``http`` and ``https``.",
    ),
    Option(
        "retry_on_connection_failure", "bool", True, flag,
        "Retry a request that failed to connect, or on a reused connection, on another route or connection.",
    ),
    Option(
        "max_follow_ups", "int", MAX_FOLLOW_UPS, follow_up_count,
        "Most follow-up requests (redirects, authentication) one call makes.",
    ),
    Option(
        "proxy", "Proxy | str | None", None, proxy_of,
        "The proxy of every request: a ``fastnet.Proxy`` or a proxy URL (``http://...``, ``socks5://...``).",
        route=True, shown=_hide_userinfo,
    ),
    Option(
        "proxy_selector", "ProxySelector | None", None, proxy_selector,
        "A ``ProxySelector`` choosing the proxies for each URL (``proxy`` wins when both are given).",
        route=True,
    ),
    Option(
        "trust_env", "bool", True, flag,
        "Read proxies (``http_proxy``, ``no_proxy``...), CAs (``SSL_CERT_FILE``...) from the environment.",
        route=True,
    ),
    Option(
        "fallback_to_direct", "bool", False, flag,
        "After every proxy failed to connect, try a direct connection.",
        route=True,
    ),
    Option(
        "happy_eyeballs", "bool", True, flag,
        "Race a host's IPv6 and IPv4 addresses when connecting (RFC 8305).",
    ),
    Option(
        "authenticator", "AuthenticatorLike | None", None, authenticator,
        "Answers 401 challenges: an ``Authenticator`` (``authenticate(route, response)``) or a function.",
    ),
    Option(
        "proxy_authenticator", "AuthenticatorLike | None", None, authenticator,
        "Answers proxies' 407 challenges, as ``authenticator`` does servers'.",
        route=True,
    ),
    Option(
        "sensitive_headers", "Iterable[str]", (), header_names,
        "Headers to drop on a redirect to another origin, with ``Authorization``, ``Cookie`` and the like.",
    ),
    Option(
        "dns", "DnsLike | None", None, resolver,
        "The resolver, or a function ``hostname -> addresses``; default: the process's shared DNS cache.",
        route=True, attribute=False,
    ),
    Option(
        "interceptors", "Iterable[InterceptorLike]", (), interceptor_list,
        "Application interceptors (``Interceptor``s or functions of the chain): once per call, in order.",
    ),
    Option(
        "network_interceptors", "Iterable[InterceptorLike]", (), interceptor_list,
        "Network interceptors, around every request that goes on the wire.",
    ),
    Option(
        "cookie_jar", "CookieJarLike | None", None, cookie_jar,
        "Where cookies are kept and read (a ``CookieJar``); ``None`` or ``NO_COOKIES``: no cookies.",
    ),
    Option(
        "connection_pool", "ConnectionPool | None", None, connection_pool,
        "The ``ConnectionPool`` to use; default: a new one, shared by ``with_options`` siblings.",
        attribute=False,
    ),
    Option(
        "max_connections_per_host", "int | None", None, None,
        "Cap on connections to one host (in the client's own pool; else set it on the pool you pass).",
    ),
    Option(
        "event_listener", "EventListener | None", None, event_listener,
        "An ``EventListener`` told of every step of every call.",
    ),
    Option(
        "event_listener_factory", "Callable[[RealCall], EventListener] | None", None, listener_factory,
        "A function ``call -> EventListener``: a listener per call.",
    ),
    Option(
        "verify", "bool | str | ssl.SSLContext", True, None,
        "Verify servers' certificates: ``True``, ``False``, a CA file or directory, an ``ssl.SSLContext``.",
        route=True,
    ),
    Option(
        "user_agent", "str | None", None, user_agent,
        "The ``User-Agent`` of requests that set none; default: ``fastnet/<version>``.",
    ),
    Option(
        "max_body_size", "int | None", MAX_BODY_SIZE, body_limit,
        "Most bytes of a response body (1 GiB by default) before ``BodyTooLargeError``; ``None``: no limit.",
    ),
    Option(
        "dispatcher", "Dispatcher | None", None, dispatcher,
        "The ``Dispatcher`` running enqueued calls (``Client`` only); default: one per client and siblings.",
        attribute=False,
    ),
    Option(
        "headers", "HeadersLike | None", None, default_headers,
        "Default headers, under each request's own.",
        shown=_hide_sensitive_headers,
    ),
    Option(
        "base_url", "str | URL | None", None, base_url,
        "The URL relative request URLs are under (``/users`` appended to its path).",
        shown=_hide_userinfo,
    ),
    Option(
        "params", "ParamsLike | None", None, query,
        "Default query parameters, before each request's own (a key the request sets replaces them).",
    ),
    Option(
        "auth", "AuthLike | None", None, auth,
        "``(user, password)``: a default Basic ``Authorization``; an ``Authenticator``: as authenticator.",
        shown=_hide_password,
    ),
    Option(
        "timeout", "TimeoutTypes | UseClientDefault", USE_CLIENT_DEFAULT, None,
        "The timeouts not given by name: seconds, ``(connect, read)``, a ``fastnet.Timeout`` or ``None``.",
    ),
    Option(
        "cert", "str | tuple[str, ...] | None", None, None,
        "A client certificate: a path, or ``(certfile, keyfile[, password])``.",
        route=True, shown=_hide_key_password,
    ),
    Option(
        "min_tls_version", "str | ssl.TLSVersion | None", None, None,
        "The oldest TLS version accepted: ``'1.2'``, ``'1.3'`` or an ``ssl.TLSVersion``.",
        route=True,
    ),
    Option("local_address", "str | None", None, ip_address, "The local IP address to connect from."),
)  # fmt: skip

#: The options ``timeout=`` sets, in the order of ``fastnet.Timeout``'s phases.
TIMEOUT_OPTIONS = ("connect_timeout", "read_timeout", "write_timeout", "call_timeout")
#: The options whose change gives a ``with_options`` sibling its own route database and TLS context.
ROUTE_OPTIONS = frozenset(option.name for option in OPTIONS if option.route)
_SHOWN = {option.name: option.shown for option in OPTIONS if option.shown is not None}


# -- what the generated code uses --------------------------------------------------------------------


def unknown_options(where: str, unknown: Iterable[str], names: Collection[str]) -> str:
    """The message of the ``TypeError`` for unknown options, each with the nearest option name."""
    parts = []
    for name in unknown:
        close = difflib.get_close_matches(name, list(names), n=1)
        parts.append(f"{name!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    return f"{where} got unexpected option(s): {', '.join(parts)}"


def given_options(where: str, names: Collection[str], given: dict[str, Any]) -> None:
    """Check the option names in ``given`` and spread its ``timeout=`` over the four timeouts not given by
    name (a timeout given by name wins, then the phase ``timeout`` sets, then what was there)."""
    unknown = [name for name in given if name not in names]
    if unknown:
        raise TypeError(unknown_options(where, unknown, names))
    timeout = given.get("timeout", USE_CLIENT_DEFAULT)
    if timeout is not USE_CLIENT_DEFAULT:
        phases = as_timeout(timeout, "timeout")
        for name in TIMEOUT_OPTIONS:
            phase = getattr(phases, name[: -len("_timeout")])
            if name not in given and phase is not USE_CLIENT_DEFAULT:
                given[name] = phase


def keyword_options(
    names: Collection[str],
) -> Callable[[Callable[Concatenate[S, P], None]], Callable[Concatenate[S, P], None]]:
    """``__init__`` with ``given_options`` first: "unexpected keyword argument 'read_timeot'" becomes a
    message naming the nearest option, and ``timeout=`` is spread."""

    def decorate(init: Callable[Concatenate[S, P], None]) -> Callable[Concatenate[S, P], None]:
        def checked(self: S, /, *args: P.args, **kwargs: P.kwargs) -> None:
            given_options(type(self).__name__ + "()", names, kwargs)
            init(self, *args, **kwargs)

        functools.update_wrapper(checked, init)
        return checked

    return decorate


def same_signature(
    init: Callable[Concatenate[S, P], None],
) -> Callable[[Callable[..., R]], Callable[Concatenate[S, P], R]]:
    """A method that takes exactly ``__init__``'s parameters (for type checkers and ``help()``)."""

    def decorate(method: Callable[..., R]) -> Callable[Concatenate[S, P], R]:
        method.__signature__ = inspect.signature(init)  # type: ignore[attr-defined]
        return method

    return decorate


def shown_repr(options: NamedTuple) -> str:
    """``ClientOptions(connect_timeout=10.0, ...)`` with every secret shown as ``***``: ``auth``'s
    password, ``cert``'s key password, sensitive default headers, credentials in a proxy or base URL."""
    parts = []
    for name, value in zip(options._fields, options, strict=True):
        shown = _SHOWN.get(name)
        parts.append(f"{name}={(value if shown is None or value is None else shown(value))!r}")
    return f"{type(options).__name__}({', '.join(parts)})"


class OptionAttribute(Generic[T]):
    """A read-only client attribute for one option: ``client.read_timeout`` reads ``client.config``."""

    __slots__ = ("name",)

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, client: None, owner: type) -> OptionAttribute[T]: ...
    @overload
    def __get__(self, client: object, owner: type | None = None) -> T: ...

    def __get__(self, client: object, owner: type | None = None) -> T | OptionAttribute[T]:
        if client is None:
            return self
        value: T = getattr(client._options, self.name)  # type: ignore[attr-defined]
        return value

    def __set__(self, client: object, value: object) -> None:
        raise AttributeError(f"{self.name} is read-only: use client.with_options({self.name}=...)")


# -- the per-request options of the verbs (``client.get(url, params=...)``) ---------------------------


class GetOptions(TypedDict, total=False):
    """The keywords of ``get``, ``head`` and ``options``."""

    params: ParamsLike | None
    headers: HeadersLike | None
    cookies: CookiesLike | None
    auth: AuthLike | None
    timeout: TimeoutTypes | UseClientDefault
    follow_redirects: bool | None
    proxy: Proxy | str | None


class BodyOptions(GetOptions, total=False):
    """The keywords of ``delete``: ``GetOptions`` and a body."""

    body: BodyLike | None
    json: object


class RequestOptions(BodyOptions, total=False):
    """The keywords of ``request``, ``stream``, ``post``, ``put`` and ``patch``: ``BodyOptions``, a form
    and files."""

    data: DataLike | None
    files: FilesLike | None
