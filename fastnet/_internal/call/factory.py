"""``RequestFactory``: the requests a client builds from options, and the calls that take settings from them.

A keep-alive ``client.get(url)`` never comes here: the compiled entry points build it themselves. What
comes here is a request with one of requests'/httpx's options (``params``, ``data``, ``files``, ``auth``,
``timeout``, ``follow_redirects``, ``cookies``), and every request of a client with a ``base_url`` or
default ``params``. Each option lands where an OkHttp user would look for it:

* ``base_url`` and ``params`` are resolved when the ``Request`` is built (``build``): a relative URL is
  joined to the base (its path appended to the base's path, as httpx does), the client's params come
  before the request's (a key the request sets replaces the client's), and both follow the URL's own
  query;
* ``data``, ``files``, ``auth=(user, password)`` and ``cookies`` are the request's body and headers
  (``Request`` turns them into a form or multipart body, an ``Authorization`` and a ``Cookie`` header);
* ``timeout``, ``follow_redirects`` and an ``Authenticator`` are *call* settings: the call runs on a copy
  of the client's ``ClientCore`` with them changed (``core_for``), sharing its pool, routes, DNS and
  interceptors — OkHttp's per-call ``client.newBuilder().readTimeout(...).build()``. The timeouts reach
  the chain (``chain.connect_timeout`` and friends, which interceptors can still change with
  ``with_*_timeout``) and the call timeout the call's deadline; the copies are cached per distinct
  setting, so a crawler passing ``timeout=5`` on every call makes one.

The engine's entry points (``real_call.request``/``get`` and their asyncio twins) call ``build`` and
``core_for`` and run the call themselves; the asyncio client's factory differs only in the
RetryAndFollowUp interceptor it replaces in a call's core (``retry``).
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING

from fastnet.forms import encode_pairs, merge_params
from fastnet.request import Request
from fastnet.timeout import USE_CLIENT_DEFAULT, Timeout
from fastnet.url import SCHEME_PREFIX, URL, check_controls

if TYPE_CHECKING:
    from fastnet._internal.call.options import (
        AuthenticatorLike,
        AuthLike,
        CookiesLike,
        DataLike,
        FilesLike,
        ParamsLike,
    )
    from fastnet._internal.core.client_core import ClientCore
    from fastnet.headers import HeadersLike
    from fastnet.proxy import Proxy
    from fastnet.request import BodyLike
    from fastnet.timeout import TimeoutTypes, UseClientDefault

    #: What a call takes from its request: ``(timeout, follow_redirects, authenticator)`` (``Request``).
    CallSettings = tuple[Timeout | UseClientDefault, bool | None, AuthenticatorLike | None]

__all__ = ["RequestFactory", "join_base_url"]

_MAX_CORES = 64


def join_base_url(base: URL, url: str | URL) -> URL:
    """``url`` against ``base_url``. Only an absolute URL (``scheme:`` first, RFC 3986 §3.1) is used as
    it is; anything else is a reference *under* the base, so it can never reach another origin: its path
    is appended to the base's path with its leading slashes (and backslashes, which WHATWG reads as
    slashes) dropped, and its query and fragment replace the base's. ``http://a/api/`` + ``/users?x=1``
    → ``http://a/api/users?x=1`` (as httpx does), and ``//b/x`` → ``http://a/api/b/x``: never host ``b``.
    Spaces around ``url`` are dropped (as ``URL`` does); a control character anywhere is a ``ValueError``.
    """
    if isinstance(url, URL):
        return url
    if not isinstance(url, str):
        raise TypeError(f"URL must be a str or URL, not {type(url).__name__}")
    text = url.strip(" ")
    check_controls(text, "URL")
    if SCHEME_PREFIX.match(text) is not None:
        return URL(text)
    fragment = None
    if "#" in text:
        text, fragment = text.split("#", 1)
    query = None
    if "?" in text:
        text, query = text.split("?", 1)
    path = base.path if base.path.endswith("/") else base.path + "/"
    return base.replace(path=path + text.lstrip("/\\"), query=query, fragment=fragment)


class RequestFactory:
    """Builds a client's requests from options and picks each call's settings (see the module doc)."""

    __slots__ = ("base_url", "params", "retry", "cores", "derived", "closed")

    def __init__(self, base_url: URL | None, params: str | None, retry: type) -> None:
        self.base_url = base_url
        self.params = params  # the client's, encoded
        self.retry = retry  # the class of the client's RetryAndFollowUp interceptor
        self.cores: dict[
            CallSettings, ClientCore
        ] = {}  # per-call settings -> the core calls with them run on
        self.derived: weakref.WeakSet[ClientCore] = weakref.WeakSet()  # every one made, to close them
        self.closed = False

    @property
    def builds(self) -> bool:
        """Whether every request of the client goes through ``build`` (it has a base_url or params)."""
        return self.base_url is not None or self.params is not None

    def build(
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
        """The ``Request`` for these options (the verbs' keywords), with the client's base_url and params."""
        if self.base_url is not None:
            url = join_base_url(self.base_url, url)
        query = None
        if self.params is not None:
            query = merge_params(self.params, params)
        elif params is not None:
            query = encode_pairs(params, "params")
        return Request(
            method,
            url,
            headers,
            body,
            json,
            proxy,
            None,
            params=query or None,
            data=data,
            files=files,
            auth=auth,
            cookies=cookies,
            timeout=timeout,
            follow_redirects=follow_redirects,
        )

    def core_for(self, core: ClientCore, request: Request) -> ClientCore:
        """The core a call of ``request`` runs on: the client's, or a copy with the request's settings."""
        options = getattr(request, "_options", None)
        if options is None:
            return core
        try:
            derived = self.cores.get(options)
        except TypeError:  # an authenticator that cannot be hashed: no caching
            return self._derive(core, options)
        if derived is None:
            derived = self._derive(core, options)
            if len(self.cores) >= _MAX_CORES:
                self.cores.clear()
            self.cores[options] = derived
        return derived

    def _derive(self, core: ClientCore, options: CallSettings) -> ClientCore:
        timeout, follow_redirects, authenticator = options
        derived = core.copy()
        if isinstance(timeout, Timeout):
            (
                derived.connect_timeout,
                derived.read_timeout,
                derived.write_timeout,
                derived.call_timeout,
            ) = timeout.merged(core.connect_timeout, core.read_timeout, core.write_timeout, core.call_timeout)
        if follow_redirects is not None:
            derived.follow_redirects = follow_redirects
        if authenticator is not None:
            derived.authenticator = authenticator
        if follow_redirects is not None or authenticator is not None:
            # RetryAndFollowUp reads these from its core: this call gets one of its own
            retry = self.retry
            derived.interceptors = [retry(derived) if type(i) is retry else i for i in core.interceptors]
        derived.closed = core.closed or self.closed
        self.derived.add(derived)
        return derived

    def close(self) -> None:
        """The client was closed: so are the calls' copies of its core."""
        self.closed = True
        for derived in list(self.derived):
            derived.closed = True
        self.cores.clear()
