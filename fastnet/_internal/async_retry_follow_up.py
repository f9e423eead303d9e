"""Retry and follow-up: retries what is safe to retry and follows what the response asks for.

Theory of operation
-------------------
The interceptor loops: proceed; on a network failure ask :func:`recover` whether to try again; on a
response ask :func:`follow_up_request` for the next request (a redirect, an answer to an auth challenge,
a 408/503 retry) or None to return the response; at most ``max_follow_ups`` follow-ups per call.
Authenticators may be coroutine functions for the asyncio client (a blocking one blocks the event loop
while it runs).

The next request is built from ``response.request``, this hop's *user-level* request: the Bridge adds
Host, Cookie, User-Agent and friends again for every hop, so cookies from the jar are recomputed for
the new URL. Errors raised while deciding (a 407 that no proxy sent, an authenticator that raises)
reach the caller unchanged; the response is closed first so its connection is released.

Follow-up rules (OkHttp's, except where the README's table of deliberate differences says otherwise):

* **Redirects** follow ``follow_redirects`` (the per-call override from ``chain.with_follow_redirects``
  wins) and, when the scheme changes, ``follow_ssl_redirects``. ``Location`` (the last one, its bytes
  past ASCII percent-encoded once: raw UTF-8 ``/café`` is requested as ``/caf%C3%A9``) is resolved
  against the current hop's URL; an empty one, one that does not parse, or one with a scheme other than
  http/https (``file:``, ``javascript:``, ``ftp:``...) is no redirect: the 3xx is returned.
  300-303 turn a request with a body into a body-less GET (dropping Content-Length, Content-Type and
  Transfer-Encoding); 307/308 keep the method and the body. GET and HEAD stay what they are. PROPFIND
  keeps its body for every status, QUERY for all but 303.
* **Credentials never leak**: when scheme, host or port change, ``Authorization``, ``Cookie``,
  ``Proxy-Authorization``, a user-set ``Host`` and every header named in the client's
  ``sensitive_headers`` are dropped, and so is any user-info the ``Location`` carried.
* **401** asks ``authenticator``; **407** asks ``proxy_authenticator``, but only for the proxy's own
  challenge to a plain-http request sent through an HTTP proxy. A 407 that came through a CONNECT tunnel
  was written by the origin and is returned as a response; a 407 without any proxy is a
  ``ProtocolError``. Whatever an authenticator answers is sent, as OkHttp sends it: giving up is the
  authenticator's decision (``BasicAuthenticator`` and ``auth=`` give up once their credentials were
  refused), and the follow-up limit bounds one that never does. Redirects and answers to challenges
  count together towards ``max_follow_ups``: the 21st follow-up is "Too many follow-up requests".
* **408** is retried once when retries are on, the body can be replayed, the previous response was not
  a 408 and ``Retry-After`` is absent or 0. **503** is retried once only with ``Retry-After: 0`` and
  retries on. ``Retry-After`` values that are huge, dates or garbage mean "later": no retry.

.. async-only
``AsyncRetryAndFollowUpInterceptor`` is the asyncio client's. This file is also the source of the blocking
``RetryAndFollowUpInterceptor`` (``_retry_follow_up_py.py``, compiled as ``_retry_follow_up_c``):
``scripts/unasync.py`` writes it from this one. Edit this file, then run the script.
.. end
.. sync-only
``RetryAndFollowUpInterceptor`` is the blocking client's: the pure-Python twin of the compiled
``_retry_follow_up_c`` (import both through ``fastnet._internal.retry_follow_up``), written by
``scripts/unasync.py`` from ``async_retry_follow_up.py``. Edit that file, then run the script.
.. end
"""

from __future__ import annotations

from collections.abc import Iterable
from inspect import isawaitable  # async-only
from typing import TYPE_CHECKING, Any

from fastnet._internal.async_chain import AsyncInternalInterceptor
from fastnet.exceptions import NetworkError, ProtocolError, TimeoutError, TlsVerificationError
from fastnet.proxy import ProxyType
from fastnet.request import Request
from fastnet.url import header_reference

if TYPE_CHECKING:
    from fastnet._internal.async_chain import AsyncRealInterceptorChain
    from fastnet._internal.client_core import ClientCore
    from fastnet._internal.connection.connection_user import ConnectionUser
    from fastnet.headers import Headers
    from fastnet.response import Response
    from fastnet.route import Route

__all__ = [
    "FOLLOW_UP_CODES",
    "REDIRECT_CODES",
    "AsyncRetryAndFollowUpInterceptor",
    "follow_up_request",
    "recover",
    "retry_after_seconds",
    "strip_for_new_origin",
]

REDIRECT_CODES = frozenset((300, 301, 302, 303, 307, 308))
# Statuses that may need a follow-up; everything else is returned at once.
FOLLOW_UP_CODES = frozenset((300, 301, 302, 303, 307, 308, 401, 407, 408, 503))
# Headers that only the origin they were meant for may see (OkHttp drops Authorization alone).
_ORIGIN_BOUND = ("authorization", "cookie", "proxy-authorization", "host")
# Headers that describe a body; dropped when a redirect turns the request into a GET.
_BODY_HEADERS = ("content-length", "content-type", "transfer-encoding")
_INFINITE = 2**31 - 1  # "not now": OkHttp's Int.MAX_VALUE


class AsyncRetryAndFollowUpInterceptor(AsyncInternalInterceptor):
    """Retries failures that are safe to retry and follows redirects, auth challenges and 408/503.

    The loop: proceed; on a network failure ask ``recover()``; on a response ask
    ``follow_up_request()``; at most ``max_follow_ups`` follow-ups.
    """

    __slots__ = ("client",)
    client: ClientCore

    def __init__(self, client: ClientCore) -> None:
        self.client = client

    async def intercept(self, chain: AsyncRealInterceptorChain) -> Response:
        request = chain.request
        call = chain.call
        client = self.client
        follow_ups = 0
        prior = None
        recovered = None
        call.finder = None  # a new hop plans its routes afresh; only failure recovery keeps the planner
        while True:
            if call.canceled:
                raise call.canceled_error(request)
            try:
                response = await chain.proceed(request)
            except NetworkError as exc:
                retry = await recover(client, exc, call, request)
                if call.events is not None:
                    call.events.retry_decision(call, exc, retry)
                call.release_connection()  # the failed exchange's connection, after the decision
                if not retry:
                    if recovered:
                        exc.recovered.extend(recovered)
                    raise
                if recovered is None:
                    recovered = []
                recovered.append(exc)
                continue
            if prior is not None:
                response.prior_response = prior
            if response.status_code not in FOLLOW_UP_CODES:
                if call.events is not None:
                    call.events.follow_up_decision(call, response, None)
                return response
            try:
                follow_up = await follow_up_request(client, chain.follow_redirects, response)
            except BaseException:
                await response.aclose()
                raise
            if follow_up is not None:
                body = follow_up.body
                if body is not None and body.one_shot:
                    follow_up = None  # a one-shot body cannot be sent again: return this response
            if follow_up is None:
                if call.events is not None:
                    call.events.follow_up_decision(call, response, None)
                return response
            follow_ups += 1
            if follow_ups > client.max_follow_ups:
                await response.aclose()
                if call.events is not None:
                    call.events.follow_up_decision(call, response, None)
                err = ProtocolError(f"Too many follow-up requests: {follow_ups}", url=request.url)
                if recovered:
                    err.recovered.extend(recovered)
                raise err
            # its body is read (or given up) before the decision is reported
            prior = await response._astripped()
            if call.events is not None:
                call.events.follow_up_decision(call, response, follow_up)
            call.finder = None
            request = follow_up


async def recover(client: ClientCore, exc: NetworkError, call: ConnectionUser, request: Request) -> bool:
    """Whether a failure may be retried, in this order: retries on, not canceled, failed on an exchange's
    I/O, a body that can be sent again, not a protocol error, timeout or certificate failure; then a
    stale pooled connection always may, a fresh one only when another route is left."""
    if not client.retry_on_connection_failure:
        return False
    if call.canceled:
        return False
    failure = call.last_failure
    call.last_failure = None
    if failure is None:
        return False  # the failure did not happen on an exchange's I/O (connect errors, user code)
    body = request.body
    if body is not None and body.one_shot:
        return False
    if isinstance(exc, ProtocolError):
        return False
    if isinstance(exc, TimeoutError):
        return False
    if isinstance(exc, TlsVerificationError):
        return False
    _connection, was_fresh = failure
    if not was_fresh:
        return True  # a stale pooled connection: a fresh connection for the same route exists
    finder = call.finder
    return finder is not None and await finder.has_more_routes()


async def follow_up_request(client: ClientCore, follow_redirects: int, response: Response) -> Request | None:
    """The request to send after ``response``, or None to return ``response`` to the caller.

    ``follow_redirects`` is the chain's override (-1: the client's setting, 0 or 1 from
    ``chain.with_follow_redirects``)."""
    status = response.status_code
    request = response.request
    if request is None:
        return None
    if status in REDIRECT_CODES:
        return build_redirect(client, follow_redirects, response, request)
    if status == 401:
        return await authenticate(client.authenticator, response.route, response)
    if status == 407:
        route = response.route
        if route is None or route.proxy.type is not ProxyType.HTTP:
            if client.proxy_authenticator is None:
                return None  # nothing would answer it: returned, as a 401 without authenticator
            raise ProtocolError("Received HTTP_PROXY_AUTH (407) code while not using proxy", url=request.url)
        if route.requires_tunnel:
            return None  # the origin wrote this 407 inside the tunnel: not the proxy's challenge
        return await authenticate(client.proxy_authenticator, route, response)
    if status == 408:
        if not client.retry_on_connection_failure:
            return None
        body = request.body
        if body is not None and body.one_shot:
            return None
        prior = response.prior_response
        if prior is not None and prior.status_code == 408:
            return None
        if retry_after_seconds(response.headers.get("retry-after"), 0) > 0:
            return None
        return request
    if status == 503:
        if not client.retry_on_connection_failure:
            return None  # OkHttp retries even then; fastnet does not
        prior = response.prior_response
        if prior is not None and prior.status_code == 503:
            return None
        if retry_after_seconds(response.headers.get("retry-after"), _INFINITE) == 0:
            return request
        return None
    return None


def retry_after_seconds(value: str | None, default: int) -> int:
    """``Retry-After`` as OkHttp reads it for 408/503: digits → that many seconds; absent → ``default``;
    anything else (an HTTP date, a sign, spaces inside, garbage) → 2**31 - 1, meaning "not now".

    Python integers do not overflow, so ``9999999999`` is simply a large number (OkHttp crashes on it).
    """
    if value is None:
        return default
    text = value.strip()
    if not text or not text.isascii() or not text.isdigit():
        return _INFINITE
    if len(text) > 10:  # beyond any sane delay: "later", without building a huge int
        return _INFINITE
    return min(int(text), _INFINITE)


async def authenticate(authenticator: Any, route: Route | None, response: Response) -> Request | None:
    """Ask an ``Authenticator`` (or a plain function ``f(route, response)``); None when there is none."""
    if authenticator is None:
        return None
    method = getattr(authenticator, "authenticate", None)
    answer = method(route, response) if method is not None else authenticator(route, response)
    if isawaitable(answer):  # async-only
        answer = await answer  # async-only
    if answer is None:
        return None
    if not isinstance(answer, Request):
        raise TypeError(
            f"authenticator {authenticator!r} returned {type(answer).__name__}; "
            "expected a fastnet.Request or None"
        )
    return answer


def strip_for_new_origin(headers: Headers, sensitive: Iterable[str]) -> Headers:
    """``headers`` without the ones bound to the old origin."""
    for name in _ORIGIN_BOUND:
        headers = headers.remove(name)
    for name in sensitive:
        headers = headers.remove(name)
    return headers


def build_redirect(
    client: ClientCore, follow_redirects: int, response: Response, request: Request
) -> Request | None:
    """The next hop of a redirect, or None when it is not followed (see the rules above)."""
    follow = follow_redirects
    if follow < 0:
        follow = 1 if client.follow_redirects else 0
    if not follow:
        return None
    location = response.headers.get("location")
    if location is None:
        return None
    location = location.strip(" \t")
    if not location:
        return None
    colon = location.find(":")
    if colon > 0 and location[0].isalpha() and all(c.isalnum() or c in "+-." for c in location[:colon]):
        if location[:colon].lower() not in ("http", "https"):
            return None  # file:, javascript:, data:, ftp:, ws: ... are never followed
    old_url = request.url
    try:
        url = old_url.resolve(header_reference(location))  # raw UTF-8 bytes: percent-encoded once
    except (ValueError, TypeError, UnicodeError):
        return None
    if url.scheme != old_url.scheme and not client.follow_ssl_redirects:
        return None
    same_origin = url.scheme == old_url.scheme and url.host == old_url.host and url.port == old_url.port
    headers = request.headers
    if not same_origin:
        headers = strip_for_new_origin(headers, client.sensitive_headers)
        if url.username or url.password:
            url = url.replace(username="", password="")
    method = request.method
    body = request.body
    status = response.status_code
    if method != "GET" and method != "HEAD":
        keeps_body = (
            status == 307 or status == 308 or method == "PROPFIND" or (method == "QUERY" and status != 303)
        )
        if not keeps_body:
            method = "GET"
            body = None
            for name in _BODY_HEADERS:
                headers = headers.remove(name)
    return request.replace(method=method, url=url, headers=headers, body=body)
