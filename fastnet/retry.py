"""``Retry``: an opt-in, urllib3-style retry policy that runs as an application interceptor.

Theory of operation
-------------------
The core already retries what is safe to retry without asking (a stale pooled connection, another route,
one 408, a 503 with ``Retry-After: 0``). ``Retry`` adds the policy that Python users know from urllib3
and that OkHttp users write by hand: retry failed attempts and chosen statuses a bounded number of
times, with exponential backoff, for idempotent methods only.

It sits *above* RetryAndFollowUp (``Client(interceptors=[fastnet.Retry(...)])``), so every attempt is a
whole call hop of its own: redirects, auth and route retries happen inside an attempt. A policy object
is immutable: ``increment()`` returns a new one with one retry fewer and one more :class:`RequestHistory`
entry, which makes one ``Retry`` safe to share between clients and threads.

With ``fastnet.AsyncClient`` the same policy runs as ``aintercept`` (the asyncio client calls it; a
user's own interceptor for that client is an ``async def intercept(chain)``).

Between attempts it waits with ``call.sleep()``, which ``Call.cancel()`` and ``call_timeout`` cut short
(with ``CanceledError``/``CallTimeout``). Before waiting, the refused response is closed (its connection
goes back to the pool) and kept, body-less, as the ``prior_response`` of the next attempt's first
response, so ``response.history`` shows every attempt. Failed attempts are reported to the event
listener's ``retry_decision`` and, if the call finally fails, listed in ``error.recovered``.

What is retried:

* a response whose status is in ``status_forcelist``, or a 413/429/503 with a ``Retry-After`` header when
  ``respect_retry_after`` is on, for a method in ``allowed_methods``;
* a network failure (``ConnectError``, ``ConnectionClosedError``, ``UnknownHostError``, ``ProxyError``,
  ``TlsError``...) for a method in ``allowed_methods``; timeouts only with ``retry_on_timeout``;
* never: a one-shot request body, ``ProtocolError``, ``TlsVerificationError``, ``RouteError``,
  cancellation, the call timeout, a proxy's refusal of credentials (407), or any non-network exception.

The wait before retry *n* is ``backoff_factor * 2 ** (n - 1)`` plus a uniform random ``[0, jitter]``,
capped at ``backoff_max``. With ``respect_retry_after`` a ``Retry-After`` (seconds or an HTTP date)
replaces it; one longer than ``backoff_max`` ends the retries and the response is returned as it is.
"""

from __future__ import annotations

import email.utils
import random
import time
from typing import TYPE_CHECKING, NamedTuple

from fastnet.exceptions import (
    CallTimeout,
    CanceledError,
    NetworkError,
    ProtocolError,
    ProxyError,
    RouteError,
    TimeoutError,
    TlsVerificationError,
)

if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Protocol, TypedDict, Unpack

    from fastnet._internal._async.real_call import AsyncRealCall
    from fastnet.interceptor import Chain
    from fastnet.request import Request
    from fastnet.response import Response
    from fastnet.url import URL

    class AsyncChain(Protocol):
        """What ``aintercept`` uses of the chain ``fastnet.AsyncClient`` gives it: ``Chain``'s request and
        call, and a ``proceed`` that is awaited."""

        request: Request
        call: AsyncRealCall

        async def proceed(self, request: Request) -> Response: ...

    class _Options(TypedDict, total=False):
        """``Retry``'s parameters, as ``replace()`` takes them."""

        total: int
        backoff_factor: float
        backoff_max: float
        jitter: float
        status_forcelist: Iterable[int]
        allowed_methods: Iterable[str]
        respect_retry_after: bool
        retry_on_timeout: bool
        history: Iterable[RequestHistory]


__all__ = [
    "DEFAULT_ALLOWED_METHODS",
    "RETRY_AFTER_STATUS_CODES",
    "RequestHistory",
    "Retry",
    "parse_retry_after",
]

DEFAULT_ALLOWED_METHODS = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS", "TRACE"})
RETRY_AFTER_STATUS_CODES = frozenset({413, 429, 503})
_MAX_TOTAL = 10_000


class RequestHistory(NamedTuple):
    """One retried attempt: its method and URL, and the error or status that caused the retry."""

    method: str
    url: URL | str | None
    error: BaseException | None
    status: int | None


def parse_retry_after(value: object, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` value (delay-seconds or an HTTP date); None if malformed.

    >>> parse_retry_after("120"), parse_retry_after("soon"), parse_retry_after("-1")
    (120.0, None, None)

    A date in the past gives 0. Huge values are returned as they are (they are compared, never slept).
    """
    if not isinstance(value, str):
        return None
    text = value.strip()
    if not text:
        return None
    if text.isascii() and text.isdigit():
        if len(text) > 15:
            return float("inf")
        return float(int(text))
    try:
        parsed = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if parsed is None:
        return None
    try:
        when = parsed.timestamp()
    except (OverflowError, ValueError, OSError):
        return None
    current = time.time() if now is None else now
    return max(0.0, when - current)


def _number(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number, not {type(value).__name__}")
    if value != value or value < 0 or value == float("inf"):
        raise ValueError(f"{name} must be a finite number >= 0, not {value!r}")
    return float(value)


class Retry:
    """An immutable retry policy; use it as an application interceptor.

    >>> retry = fastnet.Retry(total=3, backoff_factor=0.5, status_forcelist={502, 503, 504})
    >>> client = fastnet.Client(interceptors=[retry])
    >>> r = client.get("http://127.0.0.1:8080/flaky")
    >>> [p.status_code for p in r.history], r.status_code      # e.g. ([503, 503], 200)

    ``total`` is the number of retries (so at most ``total + 1`` attempts). ``increment()`` returns a
    new policy with one retry fewer; ``is_exhausted()`` says when none is left.
    """

    __slots__ = (
        "total",
        "backoff_factor",
        "backoff_max",
        "jitter",
        "status_forcelist",
        "allowed_methods",
        "respect_retry_after",
        "retry_on_timeout",
        "history",
    )

    total: int
    backoff_factor: float
    backoff_max: float
    jitter: float
    status_forcelist: frozenset[int]
    allowed_methods: frozenset[str]
    respect_retry_after: bool
    retry_on_timeout: bool
    history: tuple[RequestHistory, ...]

    DEFAULT_ALLOWED_METHODS = DEFAULT_ALLOWED_METHODS
    RETRY_AFTER_STATUS_CODES = RETRY_AFTER_STATUS_CODES

    def __init__(
        self,
        total: int = 3,
        backoff_factor: float = 0.0,
        backoff_max: float = 120.0,
        jitter: float = 0.0,
        status_forcelist: Iterable[int] = (),
        allowed_methods: Iterable[str] = DEFAULT_ALLOWED_METHODS,
        respect_retry_after: bool = True,
        retry_on_timeout: bool = False,
        history: Iterable[RequestHistory] = (),
    ) -> None:
        if isinstance(total, bool) or not isinstance(total, int):
            raise TypeError(f"total must be an int, not {type(total).__name__}")
        if not -1 <= total <= _MAX_TOTAL:
            raise ValueError(f"total must be 0-{_MAX_TOTAL}, not {total!r}")
        if isinstance(status_forcelist, (str, bytes)) or not all(
            isinstance(s, int) and not isinstance(s, bool) and 100 <= s <= 999 for s in status_forcelist
        ):
            raise TypeError("status_forcelist must be a collection of status codes (ints 100-999)")
        if isinstance(allowed_methods, (str, bytes)) or not all(isinstance(m, str) for m in allowed_methods):
            raise TypeError("allowed_methods must be a collection of method names")
        for name, flag in (
            ("respect_retry_after", respect_retry_after),
            ("retry_on_timeout", retry_on_timeout),
        ):
            if not isinstance(flag, bool):
                raise TypeError(f"{name} must be True or False, not {flag!r}")
        set_ = object.__setattr__
        set_(self, "total", total)
        set_(self, "backoff_factor", _number("backoff_factor", backoff_factor))
        set_(self, "backoff_max", _number("backoff_max", backoff_max))
        set_(self, "jitter", _number("jitter", jitter))
        set_(self, "status_forcelist", frozenset(status_forcelist))
        set_(self, "allowed_methods", frozenset(m.upper() for m in allowed_methods))
        set_(self, "respect_retry_after", respect_retry_after)
        set_(self, "retry_on_timeout", retry_on_timeout)
        set_(self, "history", tuple(history))

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("Retry is immutable; use replace() or increment()")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("Retry is immutable")

    # -- policy ---------------------------------------------------------------------------------

    def replace(self, **changes: Unpack[_Options]) -> Retry:
        """A copy with some parameters changed."""
        params = {name: getattr(self, name) for name in self.__slots__}
        unknown = set(changes) - set(params)
        if unknown:
            raise TypeError(f"Retry.replace() got unexpected argument(s): {', '.join(sorted(unknown))}")
        params.update(changes)
        return Retry(**params)

    def increment(
        self,
        method: str | None = None,
        url: URL | str | None = None,
        response: Response | None = None,
        error: BaseException | None = None,
    ) -> Retry:
        """The policy after one more retry: ``total`` one lower, the attempt added to ``history``."""
        status = response.status_code if response is not None else None
        entry = RequestHistory(method or "", url, error, status)
        params = {name: getattr(self, name) for name in self.__slots__}
        params["total"] = self.total - 1
        params["history"] = self.history + (entry,)
        return Retry(**params)

    def is_exhausted(self) -> bool:
        return self.total < 0

    def is_retry_method(self, method: str) -> bool:
        return method.upper() in self.allowed_methods

    def is_retry_status(self, method: str, status_code: int, has_retry_after: bool = False) -> bool:
        """Whether a response with this status should be retried (ignoring how many retries are left)."""
        if not self.is_retry_method(method):
            return False
        if status_code in self.status_forcelist:
            return True
        return self.respect_retry_after and has_retry_after and status_code in RETRY_AFTER_STATUS_CODES

    def is_retry_error(self, method: str, error: BaseException) -> bool:
        """Whether a failed attempt should be retried (ignoring how many retries are left)."""
        if not isinstance(error, NetworkError):
            return False
        if isinstance(error, (CanceledError, CallTimeout, ProtocolError, TlsVerificationError, RouteError)):
            return False
        if isinstance(error, ProxyError) and error.status_code == 407:
            return False
        if isinstance(error, TimeoutError) and not self.retry_on_timeout:
            return False
        return self.is_retry_method(method)

    def get_backoff_time(self) -> float:
        """The wait before the next retry: ``backoff_factor * 2 ** (n - 1)`` (+ jitter), capped."""
        n = len(self.history)
        if n <= 0:
            return 0.0
        if self.backoff_factor <= 0 and self.jitter <= 0:
            return 0.0
        exponent = min(n - 1, 64)
        value = self.backoff_factor * (2.0**exponent)
        if self.jitter > 0:
            value += random.uniform(0.0, self.jitter)
        return max(0.0, min(self.backoff_max, value))

    def get_retry_after(self, response: Response) -> float | None:
        """The response's ``Retry-After`` in seconds (None when absent, malformed, or not respected)."""
        if not self.respect_retry_after:
            return None
        return parse_retry_after(response.headers.get("retry-after"))

    # -- the interceptor: the asyncio client calls aintercept, the blocking one intercept (generated) --

    # unasync: begin
    async def aintercept(self, chain: AsyncChain) -> Response:
        call = chain.call
        request = chain.request
        body = request.body
        replayable = body is None or not body.one_shot
        method = request.method
        retry = self
        prior: Response | None = None
        errors: list[BaseException] = []
        while True:
            try:
                response = await chain.proceed(request)
            except NetworkError as exc:
                ok = replayable and retry.is_retry_error(method, exc)
                nxt = retry.increment(method, request.url, error=exc) if ok else retry
                if ok and nxt.is_exhausted():
                    ok = False
                events = call.events
                if events is not None:
                    events.retry_decision(call, exc, ok)
                if not ok:
                    if errors:
                        exc.recovered[:0] = errors
                    if prior is not None:
                        await prior.aclose()
                    raise
                errors.append(exc)
                retry = nxt
                await call.sleep(retry.get_backoff_time())
                continue
            if prior is not None:
                _attach_prior(response, prior)
                prior = None
            status = response.status_code
            if not replayable or not retry.is_retry_status(method, status, "retry-after" in response.headers):
                return response
            nxt = retry.increment(method, request.url, response=response)
            if nxt.is_exhausted():
                return response
            delay = nxt.get_backoff_time()
            wait = retry.get_retry_after(response)
            if wait is not None:
                if wait > self.backoff_max:
                    return response  # the server wants a longer pause than this policy allows
                delay = wait
            retry = nxt
            prior = await response._astripped()
            await call.sleep(delay)

    # unasync: end

    # unasync: generated
    def intercept(self, chain: Chain) -> Response:
        call = chain.call
        request = chain.request
        body = request.body
        replayable = body is None or not body.one_shot
        method = request.method
        retry = self
        prior: Response | None = None
        errors: list[BaseException] = []
        while True:
            try:
                response = chain.proceed(request)
            except NetworkError as exc:
                ok = replayable and retry.is_retry_error(method, exc)
                nxt = retry.increment(method, request.url, error=exc) if ok else retry
                if ok and nxt.is_exhausted():
                    ok = False
                events = call.events
                if events is not None:
                    events.retry_decision(call, exc, ok)
                if not ok:
                    if errors:
                        exc.recovered[:0] = errors
                    if prior is not None:
                        prior.close()
                    raise
                errors.append(exc)
                retry = nxt
                call.sleep(retry.get_backoff_time())
                continue
            if prior is not None:
                _attach_prior(response, prior)
                prior = None
            status = response.status_code
            if not replayable or not retry.is_retry_status(method, status, "retry-after" in response.headers):
                return response
            nxt = retry.increment(method, request.url, response=response)
            if nxt.is_exhausted():
                return response
            delay = nxt.get_backoff_time()
            wait = retry.get_retry_after(response)
            if wait is not None:
                if wait > self.backoff_max:
                    return response  # the server wants a longer pause than this policy allows
                delay = wait
            retry = nxt
            prior = response._stripped()
            call.sleep(delay)

    # unasync: generated end

    def __repr__(self) -> str:
        return (
            f"Retry(total={self.total}, backoff_factor={self.backoff_factor}, "
            f"backoff_max={self.backoff_max}, jitter={self.jitter}, "
            f"status_forcelist={sorted(self.status_forcelist)}, "
            f"allowed_methods={sorted(self.allowed_methods)}, "
            f"respect_retry_after={self.respect_retry_after}, retry_on_timeout={self.retry_on_timeout})"
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Retry):
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n) for n in self.__slots__ if n != "history") and len(
            self.history
        ) == len(other.history)

    def __hash__(self) -> int:
        return hash((self.total, self.backoff_factor, self.status_forcelist, self.allowed_methods))


def _attach_prior(response: Response, prior: Response) -> None:
    """Make ``prior`` the oldest entry of ``response.history``."""
    oldest = response
    for _ in range(10_000):
        nxt = oldest.prior_response
        if nxt is None or nxt is prior:
            break
        oldest = nxt
    if oldest is not prior and oldest.prior_response is None:
        oldest.prior_response = prior
