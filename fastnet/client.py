"""``Client``: immutable configuration, the entry point for calls (``AsyncClient`` shares all of it).

A client holds a connection pool, a route database and a DNS resolver (with its cache) that its
siblings made by ``with_options(**changes)`` share, as OkHttp's ``newBuilder()`` clients do: make one
client per application and derive variants from it. Options are checked here, once, with messages that
name the option; the per-request work happens in the compiled engine, which reads a ``ClientCore``.

Every option is declared once, in the option table (``fastnet/_internal/call/options.py``), which
gives ``Client.__init__`` its explicit keyword-only signature (documented: ``help(fastnet.Client)``,
``docs/OPTIONS.md``) and ``with_options`` the same one, so a type checker catches a misspelt option
in either, and at run time the ``TypeError`` suggests the nearest option name. ``ClientBase`` holds
what both clients share; ``fastnet/_internal/call/assembly.py`` makes their engine from the options.
``Client`` adds the blocking calls, ``fastnet.AsyncClient`` the asyncio ones; the verbs (``get``,
``post``...) are written once for both (``fastnet/_internal/call/async_verbs.py``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, ClassVar

from fastnet._internal._sync.map_calls import MapItem, map_calls
from fastnet._internal._sync.real_call import RealCall
from fastnet._internal._sync.real_call import get as _get
from fastnet._internal._sync.real_call import request as _request
from fastnet._internal.call.assembly import BLOCKING, Assembly, Engine, assemble
from fastnet._internal.call.generated_options import ClientOptions, OptionsBase
from fastnet._internal.call.verbs import Verbs
from fastnet.request import Request
from fastnet.timeout import USE_CLIENT_DEFAULT

if TYPE_CHECKING:
    from typing import Self

    from fastnet._internal.call.options import AuthLike, CookiesLike, DataLike, FilesLike, ParamsLike
    from fastnet._internal.connection.route_database import RouteDatabase
    from fastnet._internal.core.client_core import ClientCore
    from fastnet.connection_pool import ConnectionPool
    from fastnet.dispatcher import Dispatcher
    from fastnet.dns import Dns
    from fastnet.headers import HeadersLike
    from fastnet.proxy import Proxy
    from fastnet.request import BodyLike
    from fastnet.response import Response
    from fastnet.timeout import TimeoutTypes, UseClientDefault
    from fastnet.url import URL

__all__ = ["Call", "Client", "ClientBase", "ClientOptions"]

#: ``client.new_call(request)`` returns one; ``execute()`` it once, ``cancel()`` it from any thread.
Call = RealCall

# the verbs that are the engine's request() entry point with the method bound, per client
_BOUND_METHODS = (
    ("head", "HEAD"),
    ("options", "OPTIONS"),
    ("delete", "DELETE"),
    ("post", "POST"),
    ("put", "PUT"),
    ("patch", "PATCH"),
)


class ClientBase(OptionsBase):
    """What ``Client`` and ``AsyncClient`` share: the options (``OptionsBase``: ``__init__``,
    ``with_options`` and an attribute per option), and the pool, routes and DNS cache that siblings made
    by ``with_options`` share. Make a ``Client`` or an ``AsyncClient``."""

    _assembly: Assembly
    _core: ClientCore
    #: The verbs this client binds to its engine's entry points, and those entry points (request, get).
    _verbs: ClassVar[type]
    _entry_points: ClassVar[tuple[Callable[..., object], Callable[..., object]]]

    @staticmethod
    def _engine() -> Engine:
        raise NotImplementedError

    def _configure(self, options: ClientOptions, parent: Self | None, changed: frozenset[str]) -> None:
        made = assemble(options, None if parent is None else parent._assembly, changed, self._engine())
        self._assembly = made
        self._options = options
        self._core = made.core
        self._bind(made.core)

    def _bind(self, core: ClientCore) -> None:
        """Bind the verbs to the engine's entry points with ``core``: no Python frame per request (a verb
        a subclass overrides stays the subclass's)."""
        cls, verbs = type(self), self._verbs
        request, get = self._entry_points
        bound = [("request", functools.partial(request, core)), ("get", functools.partial(get, core))]
        bound += [(name, functools.partial(request, core, method)) for name, method in _BOUND_METHODS]
        for name, entry in bound:
            if getattr(cls, name) is getattr(verbs, name):
                setattr(self, name, entry)

    # -- options --------------------------------------------------------------------------------

    @property
    def config(self) -> ClientOptions:
        """Every option of this client, as given."""
        return self._options

    @property
    def connection_pool(self) -> ConnectionPool:
        return self._assembly.pool

    @property
    def dns(self) -> Dns:
        """The resolver calls use (the default cache over the system resolver, unless ``dns=`` was given)."""
        return self._assembly.dns

    @property
    def route_database(self) -> RouteDatabase:
        return self._assembly.route_database

    def build_request(
        self,
        method: str,
        url: str | URL,
        *,
        params: ParamsLike | None = None,
        headers: HeadersLike | None = None,
        cookies: CookiesLike | None = None,
        body: BodyLike | None = None,
        data: DataLike | None = None,
        files: FilesLike | None = None,
        json: object = None,
        auth: AuthLike | None = None,
        timeout: TimeoutTypes | UseClientDefault = USE_CLIENT_DEFAULT,
        follow_redirects: bool | None = None,
        proxy: Proxy | str | None = None,
    ) -> Request:
        """The ``Request`` a call with these options sends, with this client's ``base_url`` and ``params``
        applied (its default ``headers`` and ``auth`` are added by an interceptor as the call runs):
        ``client.new_call(client.build_request("GET", "/users"))``."""
        return self._assembly.factory.build(
            method,
            url,
            params=params,
            headers=headers,
            cookies=cookies,
            body=body,
            data=data,
            files=files,
            json=json,
            auth=auth,
            timeout=timeout,
            follow_redirects=follow_redirects,
            proxy=proxy,
        )

    @property
    def is_closed(self) -> bool:
        return bool(self._core.closed)

    def _close(self) -> None:
        core = self._core
        if core.closed:
            return
        core.closed = True
        self._assembly.factory.close()
        self._assembly.pool._detach()

    def __repr__(self) -> str:
        return f"<fastnet.{type(self).__name__} pool={self._assembly.pool!r}>"


class Client(ClientBase, Verbs):
    """An HTTP client: configuration plus the pool, routes and DNS cache its calls share.

    >>> with fastnet.Client(read_timeout=5) as client:
    ...     r = client.get("http://127.0.0.1:8080/", headers={"Accept": "text/plain"})
    ...     r.status_code, r.text

    Every option is keyword-only and checked here; ``with_options(**changes)`` makes a sibling sharing
    this client's pool, route database and DNS cache.
    """

    _verbs = Verbs
    _entry_points = (_request, _get)

    @staticmethod
    def _engine() -> Engine:
        return BLOCKING

    @property
    def dispatcher(self) -> Dispatcher:
        """The ``fastnet.Dispatcher`` that runs this client's enqueued calls (shared with siblings)."""
        dispatcher = self._assembly.dispatcher
        assert dispatcher is not None  # a blocking client always has one
        dispatcher._observe()  # from now on it counts the execute() calls too
        return dispatcher

    # -- calls ----------------------------------------------------------------------------------

    def new_call(self, request: Request) -> Call:
        """A ``Call`` for ``request``; ``call.execute()`` runs it (once). The request's ``timeout``,
        ``follow_redirects`` and ``auth`` (an Authenticator) apply to this call."""
        if not isinstance(request, Request):
            raise TypeError(f"new_call() takes a fastnet.Request, not {type(request).__name__}")
        return RealCall(self._assembly.factory.core_for(self._core, request), request)

    def map(
        self, requests: Iterable[MapItem], *, max_in_flight: int = 32, ordered: bool = False
    ) -> Iterator[tuple[MapItem, Response | Exception]]:
        """Run many requests at once; yields ``(item, response_or_error)`` as each completes.

        ``requests`` holds URLs (fetched with GET; relative ones against ``base_url``) or
        ``fastnet.Request`` objects, and is consumed lazily: a crawler can feed it from a generator. At
        most ``max_in_flight`` requests run or wait to be yielded at a time, so memory stays bounded; each
        response's body is read before it is yielded. With ``ordered=True`` results come in input order.
        Failures are yielded (an exception in place of the response), not raised. Breaking out of the
        loop cancels what is in flight. For more than 32 in flight, give the client a pool that keeps as
        many idle connections (``ConnectionPool(max_idle_connections=64)`` for 64), or those past the
        pool's 32 are closed and opened again.

        >>> for url, result in client.map(urls, max_in_flight=64):
        ...     if isinstance(result, Exception): log.warning("%s failed: %s", url, result)
        ...     else: store(url, result.content)
        """
        return map_calls(self, requests, max_in_flight, ordered)

    # -- lifecycle ------------------------------------------------------------------------------

    def close(self) -> None:
        """Close the client: new calls raise. When no other open client uses its connection pool (siblings
        made by ``with_options`` share it), every connection in the pool is closed, in use or idle."""
        self._close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
