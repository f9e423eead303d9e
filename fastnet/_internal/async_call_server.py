"""The last interceptor, which writes the request and reads the response head.

It returns a response whose body streams from the exchange (the response's ``ResponseBodySource``):
reading it to the end, or closing it, releases the connection. A body-less response (HEAD, 204, 304,
``Content-Length: 0``) releases it at once. The framing and reuse decisions are the codec's.

.. async-only
``AsyncCallServerInterceptor`` is the asyncio client's. This file is also the source of the blocking
``CallServerInterceptor`` (``_call_server_py.py``, compiled as ``_call_server_c``): ``scripts/unasync.py``
writes it from this one. Edit this file, then run the script.
.. end
.. sync-only
``CallServerInterceptor`` is the blocking client's: the pure-Python twin of the compiled ``_call_server_c``
(import both through ``fastnet._internal.call_server``), written by ``scripts/unasync.py`` from
``async_call_server.py``. Edit that file, then run the script.
.. end
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastnet._internal.async_chain import AsyncInternalInterceptor
from fastnet._internal.http1.codec import expects_continue, open_response, request_framing, request_head
from fastnet._internal.http1.parser import BODY_LENGTH, BODY_NONE
from fastnet.exceptions import NetworkError
from fastnet.timings import new_timings

if TYPE_CHECKING:
    from fastnet._internal.async_chain import AsyncRealInterceptorChain
    from fastnet.response import Response

__all__ = ["AsyncCallServerInterceptor"]


class AsyncCallServerInterceptor(AsyncInternalInterceptor):
    """Writes the request, reads the response head and returns a response whose body streams."""

    __slots__ = ()

    async def intercept(self, chain: AsyncRealInterceptorChain) -> Response:
        exchange = chain.exchange
        assert exchange is not None  # CallServer always runs below ConnectInterceptor
        call = chain.call
        request = chain.request
        conn = exchange.connection
        exchange.request = request
        head_request = request.method == "HEAD"
        exchange.head_request = head_request
        head = request_head(request, conn.http_proxy, conn.proxy_authorization)
        framing = request_framing(request)
        timings = new_timings(call.started_at, call.queued)
        if conn.exchange_count:
            timings.reused = True
        else:
            timings.dns = conn.dns_time
            timings.connect = conn.connect_time
            timings.tls = conn.tls_time
        timings.remote_address = conn.remote_address
        exchange.timings = timings
        try:
            early = await exchange.write_request(head, request.body, framing, expects_continue(request))
            parsed = early if early is not None else await exchange.read_head(head_request)
            assert parsed is not None  # read_head returns None only when asked to stop at 100 Continue
            response, keep_alive = open_response(parsed, request, conn.route)
        except NetworkError as exc:
            call.exchange_failed(exc, exchange)
            raise
        except BaseException:
            conn.no_new_exchanges = True
            exchange.finish(False)
            raise
        if early is not None:
            conn.no_new_exchanges = True  # the body was never sent: the connection cannot be reused
        response.timings = timings
        body_mode = parsed[4]
        exchange.body_mode = body_mode
        exchange.content_encoding = parsed[7]
        exchange.keep_alive = keep_alive and not conn.no_new_exchanges
        events = call.events
        if events is not None:
            events.response_headers_end(call, response)  # (the exchange reported the start)
        if body_mode == BODY_NONE or (body_mode == BODY_LENGTH and parsed[5] == 0):
            exchange.finish(True)  # nothing to read: the body's events come before the follow-up decision
        else:
            if response.status_code == 101:
                conn.no_new_exchanges = True
            response._source = exchange
        return response
