"""``FastnetDownloadHandler``: fastnet as Scrapy's HTTP(S) download handler, on the asyncio reactor.

In ``settings.py``::

    TWISTED_REACTOR = "twisted.internet.asyncioreactor.AsyncioSelectorReactor"   # Scrapy's default
    DOWNLOAD_HANDLERS = {
        "http": "fastnet.contrib.scrapy.FastnetDownloadHandler",
        "https": "fastnet.contrib.scrapy.FastnetDownloadHandler",
    }

Theory of operation
-------------------
The handler is one of Scrapy's streaming download handlers (``BaseStreamingDownloadHandler``, the base of
Scrapy's own httpx and aiohttp handlers), so what the base does for them it does for fastnet:
``DOWNLOAD_MAXSIZE``/``DOWNLOAD_WARNSIZE`` and their ``download_maxsize``/``download_warnsize`` meta (a
declared ``Content-Length`` over the limit is refused before the body is read, a body that grows past it
is cancelled; both raise ``DownloadCancelledError``), ``DOWNLOAD_FAIL_ON_DATALOSS`` and
``download_fail_on_dataloss`` (a body cut short is ``ResponseDataLossError``, or a response flagged
``dataloss``), the ``headers_received``/``bytes_received`` signals and ``StopDownload``, and
``download_latency``. Each request is one exchange on a ``fastnet.AsyncClient`` with redirects, cookies,
authenticators and the proxy environment off: Scrapy's middlewares keep redirects, retries, cookies,
authentication and decompression (``HttpCompressionMiddleware`` sets ``Accept-Encoding``, and fastnet
passes the body through as sent).

``download_timeout`` (``DOWNLOAD_TIMEOUT``) bounds the whole download, as in Scrapy's HTTP/1.1 handler: it
is the call timeout of a sibling client (one per distinct value, sharing the pool), and the connect, read
and write timeouts too. ``proxy`` meta (set by ``HttpProxyMiddleware``, from the request or the
environment) goes on the request: ``http://`` and ``https://`` proxies, with the credentials the
middleware put in ``Proxy-Authorization`` (sent to the proxy only, on the CONNECT for an https origin),
and ``socks5://``, ``socks5h://``, ``socks4a://`` URLs. The pool keeps up to ``CONCURRENT_REQUESTS`` idle
connections, at most ``CONCURRENT_REQUESTS_PER_DOMAIN`` per host. TLS uses Scrapy's own context
(``DOWNLOAD_VERIFY_CERTIFICATES``, ``DOWNLOAD_TLS_MIN_VERSION``..., ciphers). fastnet's errors become
Scrapy's: ``DownloadTimeoutError``, ``CannotResolveHostError``, ``DownloadConnectionRefusedError``
(refused connections, a SOCKS proxy that refuses), ``TunnelError`` (a proxy that answers the CONNECT with
another status than 200, as Scrapy's HTTP/1.1 handler raises it, or with something that is not HTTP, or
closes before its answer is complete), ``DownloadFailedError`` (TLS failures, a peer that closed or broke
HTTP/1.1), ``UnsupportedURLSchemeError``; the retry middleware knows them.

``bindaddress`` meta and ``DOWNLOAD_BIND_ADDRESS`` bind the sockets to that local IP address (their port
is not used: the kernel picks one, as Scrapy's httpx handler does). Not supported: the peer's certificate
on ``response.certificate`` (None), and HTTP/2.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, ClassVar

from scrapy import Request
from scrapy.core.downloader.handlers._base_streaming import BaseStreamingDownloadHandler, _BaseResponseArgs
from scrapy.core.downloader.handlers.http11 import TunnelError
from scrapy.crawler import Crawler
from scrapy.exceptions import (
    CannotResolveHostError,
    DownloadConnectionRefusedError,
    DownloadFailedError,
    DownloadTimeoutError,
    UnsupportedURLSchemeError,
)
from scrapy.http import Headers
from scrapy.utils._download_handlers import normalize_bind_address
from scrapy.utils.ssl import _make_ssl_context

import fastnet

__all__ = ["FastnetDownloadHandler"]

logger = logging.getLogger(__name__)

_MAX_SIBLINGS = 64
_MAX_PROXIES = 1024

if TYPE_CHECKING:
    _Base = BaseStreamingDownloadHandler[fastnet.Response]
else:
    _Base = BaseStreamingDownloadHandler


class FastnetDownloadHandler(_Base):
    """Scrapy's download handler for ``http`` and ``https`` on ``fastnet.AsyncClient``."""

    supports_proxies: ClassVar[bool] = True
    supports_per_request_bindaddress: ClassVar[bool] = True

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        total = self._pool_size_total or 1024
        self._client = fastnet.AsyncClient(
            follow_redirects=False,
            cookie_jar=None,
            authenticator=None,
            trust_env=False,
            max_body_size=None,
            local_address=self._get_bind_address_host(),  # DOWNLOAD_BIND_ADDRESS (its port is not used)
            verify=_make_ssl_context(crawler.settings),
            connection_pool=fastnet.ConnectionPool(
                max_idle_connections=total,
                max_connections_per_host=self._pool_size_per_host or None,
            ),
        )
        self._siblings: dict[tuple[float, str | None], fastnet.AsyncClient] = {}
        self._proxies: dict[str, fastnet.Proxy] = {}

    def _client_for(self, timeout: float, bind: str | None) -> fastnet.AsyncClient:
        """The client for ``download_timeout`` and a ``bindaddress`` meta (None: the handler's own)."""
        key = (timeout, bind)
        client = self._siblings.get(key)
        if client is None:
            if len(self._siblings) >= _MAX_SIBLINGS:
                self._siblings.clear()
            seconds = timeout if timeout and timeout > 0 else None
            options: dict[str, Any] = {  # Client options
                "connect_timeout": seconds,
                "read_timeout": seconds,
                "write_timeout": seconds,
                "call_timeout": seconds,
            }
            if bind is not None:
                options["local_address"] = bind
            client = self._client.with_options(**options)
            self._siblings[key] = client
        return client

    def _proxy(self, request: Request) -> fastnet.Proxy | None:
        url = self._extract_proxy_url_with_creds(request)
        if url is None:
            return None
        proxy = self._proxies.get(url)
        if proxy is None:
            try:
                proxy = fastnet.Proxy.from_url(url)
            except ValueError as exc:
                raise DownloadFailedError(f"bad proxy {request.meta.get('proxy')!r}: {exc}") from exc
            if len(self._proxies) >= _MAX_PROXIES:
                self._proxies.clear()
            self._proxies[url] = proxy
        return proxy

    @asynccontextmanager
    async def _make_request(self, request: Request, timeout: float) -> AsyncIterator[fastnet.Response]:
        url = request.url
        if not url.startswith(("http://", "https://")):
            raise UnsupportedURLSchemeError(f"fastnet speaks http and https, not {url.partition(':')[0]}")
        proxy = self._proxy(request)
        headers = [
            (name.decode("latin-1"), value.decode("latin-1"))
            for name, values in self._request_headers(request).items()
            for value in values
        ]
        if not any(name.lower() == "accept-encoding" for name, _ in headers):
            headers.append(("Accept-Encoding", "identity"))  # fastnet must not ask for gzip itself
        body = request.body or None
        bind = normalize_bind_address(request.meta.get("bindaddress"))
        response: fastnet.Response | None = None
        try:
            call = self._client_for(timeout, bind[0] if bind is not None else None).new_call(
                fastnet.Request(request.method, url, headers, body, proxy=proxy)
            )
            response = await call.execute()
            yield response
        except fastnet.TimeoutError as exc:
            raise DownloadTimeoutError(f"Getting {url} took longer than {timeout} seconds.") from exc
        except fastnet.UnknownHostError as exc:
            raise CannotResolveHostError(str(exc)) from exc
        except fastnet.ProxyError as exc:
            # a SOCKS handshake names its proxy (a str) until the connect step puts the Proxy in
            if not isinstance(exc.proxy, fastnet.Proxy) or exc.proxy.type is not fastnet.ProxyType.HTTP:
                raise DownloadConnectionRefusedError(str(exc)) from exc  # a SOCKS proxy refused or failed
            if isinstance(exc.__cause__, (TimeoutError, BlockingIOError)):  # no answer in time
                raise DownloadTimeoutError(f"Getting {url} took longer than {timeout} seconds.") from exc
            # the CONNECT failed: another status than 200, garbage, or a reply cut short
            raise TunnelError(str(exc)) from exc
        except fastnet.TlsError as exc:
            raise DownloadFailedError(str(exc)) from exc
        except fastnet.ConnectError as exc:
            if exc.attempts and all(isinstance(e, fastnet.UnknownHostError) for _, e in exc.attempts):
                raise CannotResolveHostError(str(exc)) from exc
            raise DownloadConnectionRefusedError(str(exc)) from exc
        except fastnet.NetworkError as exc:
            raise DownloadFailedError(str(exc)) from exc
        except ValueError as exc:  # a URL or header fastnet refuses
            raise DownloadFailedError(str(exc)) from exc
        finally:
            if response is not None:
                await response.aclose()

    @staticmethod
    def _extract_headers(response: fastnet.Response) -> Headers:
        return Headers(response.headers.items())

    @staticmethod
    def _build_base_response_args(
        response: fastnet.Response, request: Request, headers: Headers
    ) -> _BaseResponseArgs:
        ip_address: ipaddress.IPv4Address | ipaddress.IPv6Address | None = None
        timings = response.timings
        remote = timings.remote_address if timings is not None else None
        if remote:
            try:
                ip_address = ipaddress.ip_address(remote[0])
            except ValueError:
                ip_address = None
        return {
            "status": response.status_code,
            "url": request.url,
            "headers": headers,
            "certificate": None,
            "ip_address": ip_address,
            "protocol": response.protocol,
        }

    @staticmethod
    def _iter_body_chunks(response: fastnet.Response) -> AsyncIterator[bytes]:
        return response.aiter_bytes()

    @staticmethod
    def _is_dataloss_exception(exc: Exception) -> bool:
        """A body that ended before its ``Content-Length`` or its last chunk (fastnet's ProtocolError)."""
        return isinstance(exc, fastnet.ProtocolError) and _is_truncation(exc)

    async def close(self) -> None:
        for client in self._siblings.values():
            await client.aclose()
        self._siblings.clear()
        await self._client.aclose()


def _is_truncation(exc: BaseException) -> bool:
    # the parser's words for a Content-Length or chunked body that the peer's close cut short (both builds)
    text = str(exc)
    return "unexpected end of stream" in text and "response head" not in text
