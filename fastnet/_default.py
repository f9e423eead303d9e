"""``fastnet.get(url)`` and friends: requests' and httpx's module-level calls, on one shared ``Client``.

The client is made on first use, with the default options (so it reads the proxy environment, uses
certifi's CAs or ``SSL_CERT_FILE``, pools connections), and shared by every thread for the life of the
process: one pool, one DNS cache, however many module-level calls are made. A program that wants other
options makes its own ``fastnet.Client``.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from fastnet.client import Client
from fastnet.timeout import USE_CLIENT_DEFAULT

if TYPE_CHECKING:
    from typing import Unpack

    from fastnet._internal.call.options import (
        AuthLike,
        BodyOptions,
        CookiesLike,
        DataLike,
        FilesLike,
        GetOptions,
        ParamsLike,
        RequestOptions,
    )
    from fastnet.headers import HeadersLike
    from fastnet.proxy import Proxy
    from fastnet.request import BodyLike
    from fastnet.response import Response
    from fastnet.timeout import TimeoutTypes, UseClientDefault
    from fastnet.url import URL

__all__ = ["default_client", "delete", "get", "head", "options", "patch", "post", "put", "request", "stream"]

_CLIENT: Client | None = None
_LOCK = threading.Lock()


def default_client() -> Client:
    """The ``Client`` the module-level functions share (made on first use; a closed one is replaced)."""
    global _CLIENT
    client = _CLIENT
    if client is None or client.is_closed:
        with _LOCK:
            client = _CLIENT
            if client is None or client.is_closed:
                client = _CLIENT = Client()
    return client


def request(
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
    """``Client.request`` on the shared default client: the body is read before it returns."""
    return default_client().request(
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


def stream(method: str, url: str | URL, **options: Unpack[RequestOptions]) -> Response:
    """``Client.stream`` on the shared default client: ``with fastnet.stream("GET", url) as r: ...``."""
    return default_client().stream(method, url, **options)


def get(url: str | URL, **options: Unpack[GetOptions]) -> Response:
    """``Client.get`` on the shared default client (``params``, ``headers``, ``cookies``, ``auth``,
    ``timeout``, ``follow_redirects``, ``proxy``)."""
    return default_client().get(url, **options)


def head(url: str | URL, **options: Unpack[GetOptions]) -> Response:
    """``Client.head`` on the shared default client."""
    return default_client().head(url, **options)


def options(url: str | URL, **options: Unpack[GetOptions]) -> Response:
    """``Client.options`` on the shared default client."""
    return default_client().options(url, **options)


def delete(url: str | URL, **options: Unpack[BodyOptions]) -> Response:
    """``Client.delete`` on the shared default client."""
    return default_client().delete(url, **options)


def post(url: str | URL, **options: Unpack[RequestOptions]) -> Response:
    """``Client.post`` on the shared default client (``data``, ``files``, ``json``, ``body`` and the rest)."""
    return default_client().post(url, **options)


def put(url: str | URL, **options: Unpack[RequestOptions]) -> Response:
    """``Client.put`` on the shared default client."""
    return default_client().put(url, **options)


def patch(url: str | URL, **options: Unpack[RequestOptions]) -> Response:
    """``Client.patch`` on the shared default client."""
    return default_client().patch(url, **options)
