"""What to send after a response: a redirect, an answer to an auth challenge, a 408/503 retry, or nothing.

Theory of operation
-------------------
``RetryAndFollowUpInterceptor`` (in ``_core_py``) calls :func:`follow_up_request` for the statuses that
may need a second request (300-303, 307, 308, 401, 407, 408, 503). It returns the next request, built
from ``response.request`` (this hop's *user-level* request: the Bridge adds Host, Cookie, User-Agent and
friends again for every hop, so cookies from the jar are recomputed for the new URL), or ``None`` to hand
the response to the caller as it is. Errors raised here (a 407 that no proxy sent, an authenticator that
raises) reach the caller unchanged; the interceptor closes the response first so the connection is
released.

Rules (okhttp-behavior.md §10.4-10.5, with fastnet's decisions.md rows 4-7):

* **Redirects** follow ``follow_redirects`` (the per-call override from ``chain.with_follow_redirects``
  wins) and, when the scheme changes, ``follow_ssl_redirects``. ``Location`` (the last one) is resolved
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
  ``ProtocolError``. An answer that repeats the very credentials that were just rejected is not sent
  again (no storm of identical requests up to the follow-up limit).
* **408** is retried once when retries are on, the body can be replayed, the previous response was not
  a 408 and ``Retry-After`` is absent or 0. **503** is retried once only with ``Retry-After: 0`` and
  retries on. ``Retry-After`` values that are huge, dates or garbage mean "later": no retry.
"""

from __future__ import annotations

from typing import Any

from fastnet.exceptions import ProtocolError
from fastnet.proxy import ProxyType

__all__ = ["follow_up_request", "retry_after_seconds", "strip_for_new_origin", "REDIRECT_CODES"]

REDIRECT_CODES = frozenset((300, 301, 302, 303, 307, 308))
# Headers that only the origin they were meant for may see (decisions.md row 4).
_ORIGIN_BOUND = ("authorization", "cookie", "proxy-authorization", "host")
# Headers that describe a body; dropped when a redirect turns the request into a GET.
_BODY_HEADERS = ("content-length", "content-type", "transfer-encoding")
_INFINITE = 2**31 - 1  # "not now": OkHttp's Int.MAX_VALUE


def follow_up_request(client: Any, call: Any, chain: Any, response: Any) -> Any:
    """The request to send after ``response``, or None to return ``response`` to the caller."""
    status = response.status_code
    request = response.request
    if request is None:
        return None
    if status in REDIRECT_CODES:
        return build_redirect(client, chain, response, request)
    if status == 401:
        answer = authenticate(client.authenticator, response.route, response)
        return _unless_repeated(answer, request, "authorization")
    if status == 407:
        route = response.route
        proxy = route.proxy if route is not None else None
        if proxy is None or proxy.type is not ProxyType.HTTP:
            raise ProtocolError("Received HTTP_PROXY_AUTH (407) code while not using proxy", url=request.url)
        if route.requires_tunnel:
            return None  # the origin wrote this 407 inside the tunnel: not the proxy's challenge
        answer = authenticate(client.proxy_authenticator, route, response)
        return _unless_repeated(answer, request, "proxy-authorization")
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
            return None  # decisions.md row 6: OkHttp retries even then, fastnet does not
        prior = response.prior_response
        if prior is not None and prior.status_code == 503:
            return None
        if retry_after_seconds(response.headers.get("retry-after"), _INFINITE) == 0:
            return request
        return None
    return None


def retry_after_seconds(value: Any, default: int) -> int:
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


def authenticate(authenticator: Any, route: Any, response: Any) -> Any:
    """Ask an ``Authenticator`` (or a plain function ``f(route, response)``); None when there is none."""
    if authenticator is None:
        return None
    method = getattr(authenticator, "authenticate", None)
    answer = method(route, response) if method is not None else authenticator(route, response)
    if answer is None:
        return None
    from fastnet._internal.core import Request

    if not isinstance(answer, Request):
        raise TypeError(
            f"authenticator {authenticator!r} returned {type(answer).__name__}; "
            "expected a fastnet.Request or None"
        )
    return answer


def _unless_repeated(answer: Any, request: Any, header: str) -> Any:
    """Drop an answer that carries exactly the credentials the server just rejected."""
    if answer is None:
        return None
    sent = request.headers.get(header)
    if sent is not None and answer.headers.get(header) == sent and answer.url == request.url:
        return None
    return answer


def strip_for_new_origin(headers: Any, sensitive: Any) -> Any:
    """``headers`` without the ones bound to the old origin (decisions.md row 4)."""
    for name in _ORIGIN_BOUND:
        headers = headers.remove(name)
    for name in sensitive:
        headers = headers.remove(name)
    return headers


def build_redirect(client: Any, chain: Any, response: Any, request: Any) -> Any:
    follow = chain.follow_redirects if chain is not None else -1
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
        url = old_url.resolve(location)
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
