"""The verbs of the clients, written once: ``request``, ``get``, ``head``, ``options``, ``delete``,
``post``, ``put`` and ``patch``, with the per-request keywords of requests and httpx.

.. async-only
``AsyncVerbs`` is ``AsyncClient``'s (``await client.get(url)``). This file is also the source of the
blocking client's ``Verbs`` (``verbs.py``): ``scripts/unasync.py`` writes it from this one. Edit this
file, then run the script.
.. end
.. sync-only
``Verbs`` is ``Client``'s, written by ``scripts/unasync.py`` from ``async_verbs.py`` (``AsyncClient``'s
``AsyncVerbs``). Edit that file, then run the script.
.. end

These methods are what ``help()``, a type checker and an IDE see. A client binds each verb it does not
override, per client, to the engine's entry point with its core (``functools.partial`` of
``real_call.request``/``get``, or their asyncio twins): a request runs no Python frame of the client's.
So the bodies below run only for a subclass that overrides a verb and calls ``super()``; they take the
same path. ``stream`` returns the response with its body unread (``AsyncClient``'s: an awaitable that is
also an async context manager).
"""

from __future__ import annotations

from collections.abc import Coroutine, Generator  # async-only
from typing import TYPE_CHECKING

from fastnet._internal._async.real_call import get as _async_get
from fastnet._internal._async.real_call import request as _async_request
from fastnet.timeout import USE_CLIENT_DEFAULT

if TYPE_CHECKING:
    from fastnet._internal.call.options import AuthLike, CookiesLike, DataLike, FilesLike, ParamsLike
    from fastnet._internal.core.client_core import ClientCore
    from fastnet.headers import HeadersLike
    from fastnet.proxy import Proxy
    from fastnet.request import BodyLike
    from fastnet.response import Response
    from fastnet.timeout import TimeoutTypes, UseClientDefault
    from fastnet.url import URL

__all__ = ["AsyncStreaming", "AsyncVerbs"]  # async-only
# sync-only: __all__ = ["Verbs"]


class AsyncVerbs:
    """The verbs; the client's ``_core`` is what they run on."""

    __slots__ = ()
    _core: ClientCore

    async def request(
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
    ) -> Response:
        """Send a request and read the whole response body.

        ``params`` (added to the query), ``headers`` (over the client's), ``cookies`` (for this request),
        ``body`` (bytes, str, a file, an iterable), ``data`` (a mapping or pairs: a form; else a body),
        ``files`` (multipart, streamed), ``json``, ``auth`` (``(user, password)`` or an Authenticator),
        ``timeout`` (seconds, ``(connect, read)``, a ``fastnet.Timeout``, ``None`` for none),
        ``follow_redirects`` and ``proxy`` (a ``Proxy`` or a proxy URL) apply to this request only.
        """
        return await _async_request(
            self._core,
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

    async def get(
        self,
        url: str | URL,
        *,
        params: ParamsLike | None = None,
        headers: HeadersLike | None = None,
        cookies: CookiesLike | None = None,
        auth: AuthLike | None = None,
        timeout: TimeoutTypes | UseClientDefault = USE_CLIENT_DEFAULT,
        follow_redirects: bool | None = None,
        proxy: Proxy | str | None = None,
    ) -> Response:
        """A GET whose body is read."""
        return await _async_get(
            self._core,
            url,
            params=params,
            headers=headers,
            cookies=cookies,
            auth=auth,
            timeout=timeout,
            follow_redirects=follow_redirects,
            proxy=proxy,
        )

    async def head(
        self,
        url: str | URL,
        *,
        params: ParamsLike | None = None,
        headers: HeadersLike | None = None,
        cookies: CookiesLike | None = None,
        auth: AuthLike | None = None,
        timeout: TimeoutTypes | UseClientDefault = USE_CLIENT_DEFAULT,
        follow_redirects: bool | None = None,
        proxy: Proxy | str | None = None,
    ) -> Response:
        return await _async_request(
            self._core,
            "HEAD",
            url,
            params=params,
            headers=headers,
            cookies=cookies,
            auth=auth,
            timeout=timeout,
            follow_redirects=follow_redirects,
            proxy=proxy,
        )

    async def options(
        self,
        url: str | URL,
        *,
        params: ParamsLike | None = None,
        headers: HeadersLike | None = None,
        cookies: CookiesLike | None = None,
        auth: AuthLike | None = None,
        timeout: TimeoutTypes | UseClientDefault = USE_CLIENT_DEFAULT,
        follow_redirects: bool | None = None,
        proxy: Proxy | str | None = None,
    ) -> Response:
        return await _async_request(
            self._core,
            "OPTIONS",
            url,
            params=params,
            headers=headers,
            cookies=cookies,
            auth=auth,
            timeout=timeout,
            follow_redirects=follow_redirects,
            proxy=proxy,
        )

    async def delete(
        self,
        url: str | URL,
        *,
        params: ParamsLike | None = None,
        headers: HeadersLike | None = None,
        cookies: CookiesLike | None = None,
        body: BodyLike | None = None,
        json: object = None,
        auth: AuthLike | None = None,
        timeout: TimeoutTypes | UseClientDefault = USE_CLIENT_DEFAULT,
        follow_redirects: bool | None = None,
        proxy: Proxy | str | None = None,
    ) -> Response:
        return await _async_request(
            self._core,
            "DELETE",
            url,
            params=params,
            headers=headers,
            cookies=cookies,
            body=body,
            json=json,
            auth=auth,
            timeout=timeout,
            follow_redirects=follow_redirects,
            proxy=proxy,
        )

    async def post(
        self,
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
    ) -> Response:
        return await _async_request(
            self._core,
            "POST",
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

    async def put(
        self,
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
    ) -> Response:
        return await _async_request(
            self._core,
            "PUT",
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

    async def patch(
        self,
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
    ) -> Response:
        return await _async_request(
            self._core,
            "PATCH",
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

    def stream(
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
        # sync-only: ) -> Response:
    ) -> AsyncStreaming:  # async-only
        """Send a request whose body streams.

        .. async-only
        ``async with client.stream(...) as response:`` closes it at the end of the block
        (``response = await client.stream(...)`` works too; then close it).
        .. end
        .. sync-only
        Use the response as a context manager, or close it.
        .. end
        """
        # sync-only: return (
        return AsyncStreaming(  # async-only
            _async_request(
                self._core,
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
                stream=True,
            )
        )


# unasync: skip
class AsyncStreaming:
    """``client.stream(...)``: an async context manager over the streamed response, or an awaitable."""

    __slots__ = ("_pending", "_response")

    def __init__(self, pending: Coroutine[object, None, Response]) -> None:
        self._pending = pending
        self._response: Response | None = None

    def __await__(self) -> Generator[object, None, Response]:
        response: Response = yield from self._pending.__await__()
        return response

    async def __aenter__(self) -> Response:
        response: Response = await self._pending
        self._response = response
        return response

    async def __aexit__(self, *exc: object) -> None:
        response = self._response
        if response is not None:
            self._response = None
            await response.aclose()


# unasync: skip end
