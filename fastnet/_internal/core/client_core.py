"""``ClientCore``: the typed half of ``fastnet.Client``, the settings and shared state every call reads.

``fastnet.Client`` checks its options once and fills one of these in; the engine (``RealCall`` and the
built-in interceptors) reads it on every request through C fields in the compiled build. It holds no
logic beyond picking a call's event listener and starting the call-timeout watchdog on first use.

Compiled in place, typed by its ``.pxd``, in the compiled build.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Protocol

from fastnet._internal.util.watchdog import Watchdog
from fastnet._version import __version__

if TYPE_CHECKING:
    from collections.abc import Callable
    from concurrent.futures import Future

    from fastnet._internal._sync.pool import RealConnectionPool
    from fastnet._internal._sync.real_call import RealCall
    from fastnet._internal.connection.connector import Connector
    from fastnet._internal.core.call_state import CallState
    from fastnet.authenticator import AuthenticatorLike
    from fastnet.cookies import CookieJar
    from fastnet.dispatcher import Callback
    from fastnet.events import EventListener
    from fastnet.response import Response

    class CallDispatcher(Protocol):
        """The ``fastnet.Dispatcher`` as the engine sees it: where a blocking ``enqueue()`` runs, told
        which clients use it."""

        def enqueue(
            self, call: RealCall, callback: Callback | None = None, stream: bool = False
        ) -> Future[Response]: ...
        def _attach(self, core: ClientCore) -> None: ...


__all__ = ["MAX_BODY_SIZE", "MAX_FOLLOW_UPS", "USER_AGENT", "ClientCore", "watchdog"]

USER_AGENT = f"fastnet/{__version__}"
MAX_FOLLOW_UPS = 20
#: The default ``max_body_size``: 1 GiB, as Scrapy's ``DOWNLOAD_MAXSIZE``.
MAX_BODY_SIZE = 1 << 30


class ClientCore:
    """Configuration and shared state read on every request; ``fastnet.Client`` fills it in."""

    __slots__ = (
        "connect_timeout",
        "read_timeout",
        "write_timeout",
        "call_timeout",
        "follow_redirects",
        "follow_ssl_redirects",
        "retry_on_connection_failure",
        "max_follow_ups",
        "interceptors",
        "pool",
        "cookie_jar",
        "event_listener",
        "event_listener_factory",
        "user_agent",
        "connector",
        "authenticator",
        "proxy_authenticator",
        "sensitive_headers",
        "max_body_size",
        "closed",
        "dispatcher",
        "factory",
        "factory_builds",
        "sync_dispatcher",
        "__weakref__",
    )
    connect_timeout: float  # seconds; 0.0 means no timeout, as for the three below
    read_timeout: float
    write_timeout: float
    call_timeout: float
    follow_redirects: bool
    follow_ssl_redirects: bool
    retry_on_connection_failure: bool
    max_follow_ups: int
    # application, the built-ins and network interceptors, in chain order. Any: the blocking or the
    # asyncio chain's (the client's engine decides; ``first_chain``/``first_async_chain`` type them)
    interceptors: list[Any]
    pool: RealConnectionPool
    cookie_jar: CookieJar | None  # None for no cookies (an AsyncClient's may have async methods)
    event_listener: EventListener | None
    # called with the new call (a RealCall or an AsyncRealCall): Any, so that a user's factory may annotate
    # the call type it gets
    event_listener_factory: Callable[[Any], EventListener | None] | None
    user_agent: str
    connector: Connector
    authenticator: AuthenticatorLike | None
    proxy_authenticator: AuthenticatorLike | None
    sensitive_headers: frozenset[str]  # lowercased
    max_body_size: int  # 0: no limit
    closed: bool  # client.close() was called: new calls raise
    dispatcher: CallDispatcher | None  # the fastnet.Dispatcher that runs enqueued calls
    # The client's RequestFactory: builds the requests that come with options (params=, auth=, ...) and
    # the calls that take settings from them. None in a per-call copy (``copy()``), which never builds.
    # Any while the call layer's rewrite settles RequestFactory's ``send``/``asend`` (the asyncio call
    # awaits an ``asend`` the factory does not declare yet): then ``RequestFactory | None``.
    factory: Any
    factory_builds: bool  # every request goes through the factory (a base_url or default params)
    # The dispatcher to tell about ``execute()`` calls, once a program can see it (``Dispatcher._observe``);
    # None until then, so that an unobserved dispatcher costs ``execute()`` one test.
    # Any: each call's source types the running map by its own class (AsyncRealCall on asyncio), which
    # Dispatcher types as RealCall; typed once the real-call rewrite settles that
    sync_dispatcher: Any

    def __init__(self) -> None:
        self.connect_timeout = 10.0
        self.read_timeout = 10.0
        self.write_timeout = 10.0
        self.call_timeout = 0.0
        self.follow_redirects = True
        self.follow_ssl_redirects = True
        self.retry_on_connection_failure = True
        self.max_follow_ups = MAX_FOLLOW_UPS
        self.interceptors = []
        self.cookie_jar = None
        self.event_listener = None
        self.event_listener_factory = None
        self.user_agent = USER_AGENT
        self.authenticator = None
        self.proxy_authenticator = None
        self.sensitive_headers = frozenset()
        self.max_body_size = MAX_BODY_SIZE
        self.closed = False
        self.dispatcher = None
        self.factory = None
        self.factory_builds = False
        self.sync_dispatcher = None

    def new_events(self, call: CallState) -> EventListener | None:
        """The event listener of a new call: the factory's, else the shared one (None: no events)."""
        factory = self.event_listener_factory
        if factory is not None:
            return factory(call)
        return self.event_listener

    def copy(self) -> ClientCore:
        """A copy sharing everything (pool, connector, interceptors...): the start of a per-call
        configuration, as OkHttp's ``client.newBuilder()...build()`` for one call. Without the factory."""
        core = ClientCore()
        core.connect_timeout = self.connect_timeout
        core.read_timeout = self.read_timeout
        core.write_timeout = self.write_timeout
        core.call_timeout = self.call_timeout
        core.follow_redirects = self.follow_redirects
        core.follow_ssl_redirects = self.follow_ssl_redirects
        core.retry_on_connection_failure = self.retry_on_connection_failure
        core.max_follow_ups = self.max_follow_ups
        core.interceptors = self.interceptors
        core.pool = self.pool
        core.cookie_jar = self.cookie_jar
        core.event_listener = self.event_listener
        core.event_listener_factory = self.event_listener_factory
        core.user_agent = self.user_agent
        core.connector = self.connector
        core.authenticator = self.authenticator
        core.proxy_authenticator = self.proxy_authenticator
        core.sensitive_headers = self.sensitive_headers
        core.max_body_size = self.max_body_size
        core.closed = self.closed
        core.dispatcher = self.dispatcher
        core.sync_dispatcher = self.sync_dispatcher
        return core


_WATCHDOG: Watchdog | None = None
_WATCHDOG_LOCK = threading.Lock()


def watchdog() -> Watchdog:
    """The process's call-timeout watchdog, started on first use."""
    global _WATCHDOG
    with _WATCHDOG_LOCK:
        if _WATCHDOG is None:
            _WATCHDOG = Watchdog()
        return _WATCHDOG
