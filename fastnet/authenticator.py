"""Authenticators answer 401 and 407 challenges with a new request, or give up with ``None``.

Theory of operation
-------------------
When a response is a ``401`` the call asks the client's ``authenticator``; when it is the proxy's own
``407`` (to a plain-http request through an HTTP proxy, or to a ``CONNECT``) it asks the
``proxy_authenticator``. Before every ``CONNECT`` the proxy authenticator is also asked pre-emptively,
with a synthetic 407 whose challenge scheme is ``fastnet-preemptive``. The authenticator returns the
request to send next (normally ``response.request`` with an ``Authorization`` or
``Proxy-Authorization`` header) or ``None`` to hand the challenge to the caller. A plain function
``f(route, response)`` works wherever an authenticator does.

Authenticators must stop on their own when their credentials are refused: the request that was
refused is ``response.request`` and earlier answers are on ``response.prior_response``.
:class:`BasicAuthenticator` does that. The call sends whatever an authenticator answers, as OkHttp does
(a server may refuse the same credentials a few times before it accepts them); one that never gives up
runs into the follow-up limit (20), and the call fails with "Too many follow-up requests".

:func:`parse_challenges` reads ``WWW-Authenticate``/``Proxy-Authenticate`` values per RFC 9110 §11
(``Response.challenges()`` uses it).
"""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from fastnet.challenge import TOKEN68, Challenge, parse_challenges
from fastnet.url import URL

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable
    from typing import TypeAlias

    from fastnet.request import Request
    from fastnet.response import Response
    from fastnet.route import Route

    #: An authenticator's answer: the next request, or ``None``; an ``AsyncClient``'s may be awaitable.
    AuthenticatorAnswer: TypeAlias = "Request | None | Awaitable[Request | None]"

    class AnyAuthenticator(Protocol):
        """An ``authenticate(route, response)`` method, blocking or (for an ``AsyncClient``) a coroutine."""

        def authenticate(self, route: Route | None, response: Response) -> AuthenticatorAnswer: ...

    #: What ``authenticator=`` and ``proxy_authenticator=`` take: an authenticator or a plain function.
    AuthenticatorFunction: TypeAlias = "Callable[[Route | None, Response], AuthenticatorAnswer]"
    AuthenticatorLike: TypeAlias = "AnyAuthenticator | AuthenticatorFunction"

__all__ = [
    "NONE",
    "PREEMPTIVE_SCHEME",
    "Authenticator",
    "BasicAuthenticator",
    "Challenge",
    "Credentials",
    "parse_challenges",
]

#: The challenge scheme of the synthetic 407 the connector shows the proxy authenticator before CONNECT.
PREEMPTIVE_SCHEME = "fastnet-preemptive"


class _AuthenticatorMeta(type(Protocol)):  # type: ignore[misc]
    # ``Authenticator.NONE`` lives on the metaclass so it is not a protocol member: a class attribute
    # would make ``isinstance(x, Authenticator)`` demand that every authenticator has a ``NONE``.
    @property
    def NONE(cls) -> Authenticator:  # noqa: N802 - the public name mirrors OkHttp's Authenticator.NONE
        return NONE


@runtime_checkable
class Authenticator(Protocol, metaclass=_AuthenticatorMeta):
    """``authenticate(route, response) -> Request | None``: answer a 401/407 or give up.

    >>> class TokenAuthenticator:
    ...     def authenticate(self, route, response):
    ...         if response.request.header("Authorization") is not None:
    ...             return None                      # this token was refused already: give up
    ...         token = refresh_token()
    ...         headers = response.request.headers.set("Authorization", f"Bearer {token}")
    ...         return response.request.replace(headers=headers)
    >>> client = fastnet.Client(authenticator=TokenAuthenticator())

    ``Authenticator.NONE`` never answers (the same as passing no authenticator).
    """

    def authenticate(self, route: Route | None, response: Response) -> Request | None: ...


class _NoAuthenticator:
    """The authenticator that always gives up."""

    __slots__ = ()

    def authenticate(self, route: Route | None, response: Response) -> None:
        return None

    def __repr__(self) -> str:
        return "Authenticator.NONE"

    def __reduce__(self) -> str:
        return "NONE"


NONE: Authenticator = _NoAuthenticator()


# ------------------------------------------------------------------------------------------------
# Credentials and the Basic authenticator
# ------------------------------------------------------------------------------------------------


class Credentials:
    """Builders for ``Authorization``/``Proxy-Authorization`` values.

    >>> Credentials.basic("aladdin", "opensesame")
    'Basic YWxhZGRpbjpvcGVuc2VzYW1l'
    """

    __slots__ = ()

    @staticmethod
    def basic(user: str, password: str, charset: str = "utf-8") -> str:
        """``Basic base64(user ":" password)``, encoded with ``charset`` (RFC 7617)."""
        if not isinstance(user, str) or not isinstance(password, str):
            raise TypeError("user and password must be str")
        if ":" in user:
            raise ValueError("a Basic user-id cannot contain ':' (RFC 7617 §2)")
        raw = f"{user}:{password}".encode(charset)
        return "Basic " + base64.b64encode(raw).decode("ascii")

    @staticmethod
    def bearer(token: str) -> str:
        """``Bearer <token>``; the token must be a token68 (RFC 6750 §2.1)."""
        if not isinstance(token, str):
            raise TypeError("token must be a str")
        stripped = token.rstrip("=")
        if not stripped or any(c not in TOKEN68 for c in stripped):
            raise ValueError(
                "a Bearer token must be a non-empty token68 (letters, digits, -._~+/ and trailing =)"
            )
        return "Bearer " + token


def _first_request_url(response: Response) -> URL | None:
    oldest = response
    for _ in range(1000):
        prior = oldest.prior_response
        if prior is None:
            break
        oldest = prior
    request = oldest.request
    return request.url if request is not None else None


class BasicAuthenticator:
    """Answers 401 (``Authorization``) and 407 (``Proxy-Authorization``) with HTTP Basic credentials.

    >>> client = fastnet.Client(authenticator=fastnet.BasicAuthenticator("alice", "s3cret"))
    >>> squid = fastnet.Client(proxy=fastnet.Proxy.http("127.0.0.1", 3128),
    ...                        proxy_authenticator=fastnet.BasicAuthenticator("bob", "pw"))

    It gives up (returns None) when the refused request already carried these credentials, or an
    earlier attempt of the call did; when the server offers challenges and none is ``Basic``; and, for
    401s, when the response comes from another origin than ``origin`` (default: the origin of the call's
    first request), so a redirect to another host never earns that host your password.
    """

    __slots__ = ("user", "_password", "charset", "credentials", "origin")

    def __init__(
        self, user: str, password: str, *, charset: str = "utf-8", origin: str | URL | None = None
    ) -> None:
        self.credentials = Credentials.basic(user, password, charset)
        self.user = user
        self._password = password
        self.charset = charset
        if origin is not None:
            url = URL(origin) if not isinstance(origin, URL) else origin
            self.origin: tuple[str, str, int] | None = (url.scheme, url.host, url.port)
        else:
            self.origin = None

    def authenticate(self, route: Route | None, response: Response) -> Request | None:
        request = response.request
        if request is None:
            return None
        proxy = response.status_code == 407
        header = "Proxy-Authorization" if proxy else "Authorization"
        if not proxy:
            if response.status_code != 401:
                return None
            origin = self.origin
            if origin is None:
                first = _first_request_url(response)
                origin = (first.scheme, first.host, first.port) if first is not None else None
            url = request.url
            if origin is not None and origin != (url.scheme, url.host, url.port):
                return None
        challenges = response.challenges()
        if challenges and not any(c.scheme.lower() in ("basic", PREEMPTIVE_SCHEME) for c in challenges):
            return None
        if request.headers.get(header) == self.credentials:
            return None
        prior = response.prior_response
        for _ in range(1000):
            if prior is None:
                break
            earlier = prior.request
            if (
                prior.status_code == response.status_code
                and earlier is not None
                and earlier.headers.get(header) == self.credentials
            ):
                return None
            prior = prior.prior_response
        return request.replace(headers=request.headers.set(header, self.credentials))

    def __call__(self, route: Route | None, response: Response) -> Request | None:
        return self.authenticate(route, response)

    def __repr__(self) -> str:
        return f"BasicAuthenticator(user={self.user!r}, password=██)"
