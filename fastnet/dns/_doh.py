"""``DohDns``: DNS over HTTPS, RFC 8484 wire format (GET ``?dns=`` or POST) and the JSON API.

Theory of operation: queries travel over a fastnet ``Client`` made for this resolver, whose own ``Dns``
is a :class:`BootstrapDns` that knows only the DoH server's name (so resolving the resolver never
recurses into DoH). The client keeps its connections alive between lookups. A lookup sends the A query
from the calling thread and the AAAA query from a two-thread pool owned by the resolver, and waits for
both. ``alookup`` does the same on an event loop, over a ``fastnet.AsyncClient`` made for this resolver
and that loop (same options, same bootstrap ``Dns``), the AAAA query as a task beside the A one.
Responses are checked before anything is believed: HTTP status 200, the right content type, at
most 65 535 bytes, a DNS message (or JSON document) that answers the question asked. Answers follow
CNAME chains from the question name; records about other names are ignored.

The 65 535-byte bound holds for what is read, not only for what is parsed: a request asks for
``Accept-Encoding: identity``, the body is streamed and the call abandoned (never drained) as soon as
it passes the bound, and a gzip body sent anyway is inflated at most that far (:func:`read_answer`, and
:func:`aread_answer` on the loop).
The resolver's URL may carry user-info; ``repr()`` and every error show it without.

The parsing functions take plain values (status, content type, body) so they are testable without a
network: :func:`parse_message_response` and :func:`parse_json_response`.
"""

from __future__ import annotations

import asyncio
import base64
import ipaddress
import json
import ssl
import threading
import weakref
import zlib
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Protocol, TypeAlias
from urllib.parse import quote

from fastnet.dns._base import _strip_brackets, is_ip_literal, normalize_hostname
from fastnet.dns._system import SystemDns
from fastnet.dns._wire import (
    MAX_ADDRESSES,
    MAX_CNAME_DEPTH,
    AnswerError,
    extract_addresses,
    load_dnspython,
    make_query,
    unknown_host,
)
from fastnet.exceptions import UnknownHostError
from fastnet.request import Request
from fastnet.url import URL

if TYPE_CHECKING:
    from dns.message import Message, QueryMessage
    from dns.name import Name
    from dns.rdatatype import RdataType
    from typing_extensions import TypeIs

    from fastnet.headers import Headers
    from fastnet.response import Response

__all__ = [
    "BootstrapDns",
    "DohDns",
    "build_get_url",
    "build_json_url",
    "parse_json_response",
    "parse_message_response",
    "aread_answer",
    "read_answer",
]

MESSAGE_TYPE = "application/dns-message"
JSON_TYPES = ("application/dns-json", "application/json", "application/x-javascript", "text/javascript")
MAX_RESPONSE = 65535
_RCODES = {1: "FORMERR", 2: "SERVFAIL", 3: "NXDOMAIN", 4: "NOTIMP", 5: "REFUSED"}


class _Call(Protocol):
    """A call of ``fastnet.Client``, as the resolver uses it."""

    def execute(self) -> Response: ...
    def cancel(self) -> None: ...


class _Client(Protocol):
    """``fastnet.Client`` as the resolver uses it (the client sits above ``fastnet.dns``)."""

    def new_call(self, request: Request) -> _Call: ...
    def close(self) -> None: ...


class _AsyncCall(Protocol):
    """A call of ``fastnet.AsyncClient``, as the resolver uses it."""

    async def execute(self) -> Response: ...
    def cancel(self) -> None: ...


class _AsyncClient(Protocol):
    """``fastnet.AsyncClient`` as the resolver uses it."""

    def new_call(self, request: Request) -> _AsyncCall: ...
    async def aclose(self) -> None: ...


def _is_async(client: object) -> TypeIs[_AsyncClient]:
    """Whether ``client`` is an ``AsyncClient`` (it has ``aclose()``)."""
    return callable(getattr(client, "aclose", None))


#: One record type's answer: ``(addresses, ttl)``, or the reason there is none.
_Outcome: TypeAlias = "tuple[list[str], float | None] | str"


class BootstrapDns:
    """Answers for one host name only, from a fixed list of addresses: the DoH client's own resolver.

    >>> BootstrapDns("dns.example", ["192.0.2.53"]).lookup("dns.example")
    ['192.0.2.53']
    """

    __slots__ = ("hostname", "addresses")

    def __init__(self, hostname: str, addresses: Iterable[str]) -> None:
        self.hostname = normalize_hostname(hostname)
        self.addresses = [_strip_brackets(a) for a in addresses]
        for address in self.addresses:
            if not is_ip_literal(address):
                raise ValueError(f"bootstrap addresses must be IP literals, not {address!r}")
        if not self.addresses:
            raise ValueError("BootstrapDns needs at least one address")

    def lookup(self, hostname: str) -> list[str]:
        if is_ip_literal(hostname):
            return [_strip_brackets(hostname)]
        if normalize_hostname(hostname) != self.hostname:
            raise UnknownHostError(
                f"BootstrapDns called for {hostname} instead of {self.hostname}", phase="dns"
            )
        return list(self.addresses)

    async def alookup(self, hostname: str) -> list[str]:
        """:meth:`lookup` (no I/O: it answers from its list)."""
        return self.lookup(hostname)

    def __repr__(self) -> str:
        return f"BootstrapDns({self.hostname!r}, {self.addresses!r})"


def _media_type(content_type: str | None) -> str:
    return (content_type or "").split(";", 1)[0].strip().lower()


def _check_http(status: int, content_type: str | None, body: bytes, accepted: tuple[str, ...]) -> None:
    if status != 200:
        raise AnswerError(f"DoH server answered HTTP {status}")
    if _media_type(content_type) not in accepted:
        raise AnswerError(f"DoH server answered with content type {content_type!r}, wanted {accepted[0]}")
    if len(body) > MAX_RESPONSE:
        raise AnswerError(f"DoH response of {len(body)} bytes exceeds {MAX_RESPONSE}")


def read_answer(response: Response) -> bytes:
    """The body of ``response``, read as it arrives and never past :data:`MAX_RESPONSE` bytes, as
    received or as decoded: :class:`AnswerError` as soon as it would be longer.

    A ``gzip`` body (sent though identity was asked for) is inflated at most that far; a truncated one
    and any other ``Content-Encoding`` are bad answers.
    """
    reader = _AnswerReader(response.headers)
    for data in response.iter_bytes():
        reader.feed(data)
    return reader.finish()


async def aread_answer(response: Response) -> bytes:
    """:func:`read_answer` for a response of ``fastnet.AsyncClient`` (read with ``aiter_bytes``)."""
    reader = _AnswerReader(response.headers)
    async for data in response.aiter_bytes():
        reader.feed(data)
    return reader.finish()


class _AnswerReader:
    """The checks of :func:`read_answer`: the headers first (nothing is read for a bad encoding or a
    declared length past the bound), then each piece as it arrives, then the end."""

    __slots__ = ("inflater", "received", "size", "parts")

    def __init__(self, headers: Headers) -> None:
        encoding = _media_type(headers.get("content-encoding")) or "identity"
        self.inflater: zlib._Decompress | None = None
        if encoding in ("gzip", "x-gzip"):
            self.inflater = zlib.decompressobj(31)
        elif encoding != "identity":
            raise AnswerError(f"DoH server answered with Content-Encoding {encoding!r}")
        declared = headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > MAX_RESPONSE:
            raise AnswerError(f"DoH response of {int(declared)} bytes exceeds {MAX_RESPONSE}")
        self.received = 0
        self.size = 0
        self.parts: list[bytes] = []

    def feed(self, data: bytes) -> None:
        too_long = f"DoH response exceeds {MAX_RESPONSE} bytes"
        self.received += len(data)
        if self.received > MAX_RESPONSE:
            raise AnswerError(too_long)
        if self.inflater is not None:
            try:
                data = self.inflater.decompress(data, MAX_RESPONSE + 1 - self.size)  # one past: "too long"
            except zlib.error:
                raise AnswerError("malformed gzip answer from DoH server") from None
        self.size += len(data)
        if self.size > MAX_RESPONSE:
            raise AnswerError(too_long)
        self.parts.append(data)

    def finish(self) -> bytes:
        if self.inflater is not None and not self.inflater.eof:
            raise AnswerError("truncated gzip answer from DoH server")
        return b"".join(self.parts)


def build_get_url(url: str, wire: bytes) -> str:
    """RFC 8484 §4.1 GET: the query as base64url without padding in the ``dns`` parameter."""
    encoded = base64.urlsafe_b64encode(wire).rstrip(b"=").decode("ascii")
    return f"{url}{'&' if '?' in url else '?'}dns={encoded}"


def build_json_url(url: str, name: str, rdtype_text: str) -> str:
    """The JSON API's GET: ``?name=<host>&type=<A|AAAA>``."""
    return f"{url}{'&' if '?' in url else '?'}name={quote(name, safe='.-_')}&type={rdtype_text}"


def parse_message_response(query: Message, status: int, content_type: str | None, body: bytes) -> Message:
    """Check an ``application/dns-message`` response and return it parsed; :class:`AnswerError` if bad."""
    dns = load_dnspython()
    _check_http(status, content_type, body, (MESSAGE_TYPE,))
    try:
        response: Message = dns.message.from_wire(body)
    except Exception as exc:  # noqa: BLE001 - any parse failure is a bad answer
        raise AnswerError(f"malformed DNS message from DoH server ({type(exc).__name__})") from None
    if not query.is_response(response):
        raise AnswerError("DoH answer does not match the question")
    return response


def _json_name(value: object) -> str:
    if not isinstance(value, str):
        raise AnswerError(f"bad name {value!r} in JSON answer")
    return value.rstrip(".").lower()


def parse_json_response(
    name: str, rdtype: int, status: int, content_type: str | None, body: bytes
) -> tuple[list[str], float | None, str | None]:
    """Addresses of type ``rdtype`` (1 = A, 28 = AAAA) for ``name`` from a JSON-API response.

    Returns ``(addresses, ttl, target)`` like :func:`~fastnet.dns._wire.extract_addresses`: ``target``
    is where a CNAME chain ended without addresses. Raises :class:`AnswerError` for anything unusable.
    """
    _check_http(status, content_type, body, JSON_TYPES)
    try:
        document = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise AnswerError("malformed JSON from DoH server") from None
    if not isinstance(document, dict) or not isinstance(document.get("Status"), int):
        raise AnswerError("JSON answer has no Status")
    code = document["Status"]
    if code != 0:
        raise AnswerError(_RCODES.get(code, f"RCODE {code}"))
    question = document.get("Question")
    if isinstance(question, list) and question:
        first = question[0]
        if not isinstance(first, dict) or _json_name(first.get("name")) != name:
            raise AnswerError("DoH answer does not match the question")
    elif question is not None and not isinstance(question, list):
        raise AnswerError("JSON answer has a malformed Question")
    answers = document.get("Answer") or []
    if not isinstance(answers, list):
        raise AnswerError("JSON answer has a malformed Answer")
    records: dict[tuple[str, int], list[tuple[object, object]]] = {}
    for record in answers:
        if not isinstance(record, dict) or not isinstance(record.get("type"), int):
            raise AnswerError("JSON answer has a malformed record")
        key = (_json_name(record.get("name")), record["type"])
        records.setdefault(key, []).append((record.get("TTL"), record.get("data")))
    current = name
    seen = {current}
    ttl: float | None = None
    for _ in range(MAX_CNAME_DEPTH + 1):
        found = records.get((current, rdtype))
        if found:
            addresses: list[str] = []
            for record_ttl, data in found:
                try:
                    address = ipaddress.ip_address(data if isinstance(data, str) else "")
                except ValueError:
                    raise AnswerError(f"bad address {data!r} in JSON answer") from None
                if (address.version == 4) != (rdtype == 1):
                    raise AnswerError(f"address {data!r} does not match the record type")
                addresses.append(address.compressed)
                if isinstance(record_ttl, (int, float)) and record_ttl >= 0:
                    ttl = record_ttl if ttl is None else min(ttl, record_ttl)
            return addresses[:MAX_ADDRESSES], ttl, None
        cname = records.get((current, 5))
        if not cname:
            return [], ttl, (current if current != name else None)
        record_ttl, target = cname[0]
        if isinstance(record_ttl, (int, float)) and record_ttl >= 0:
            ttl = record_ttl if ttl is None else min(ttl, record_ttl)
        target = _json_name(target)
        if target in seen:
            raise AnswerError(f"CNAME loop at {target}")
        seen.add(target)
        current = target
    raise AnswerError(f"CNAME chain longer than {MAX_CNAME_DEPTH}")


class DohDns:
    """DNS over HTTPS through fastnet's own ``Client``.

    >>> dns = DohDns("https://127.0.0.1:19853/dns-query", verify="ca.pem")      # doctest: +SKIP
    >>> dns.lookup("app.test")                                                  # doctest: +SKIP
    ['127.0.0.1', '127.0.0.2']
    >>> google = DohDns("https://dns.google/resolve", bootstrap=["8.8.8.8", "8.8.4.4"],
    ...                 format="json")                                          # doctest: +SKIP

    ``method`` is ``"GET"`` (``?dns=`` base64url, cache friendly) or ``"POST"``; ``format`` is
    ``"dns-message"`` (RFC 8484) or ``"json"`` (the JSON API of public HTTP DNS services, GET only).
    ``bootstrap`` lists the DoH server's addresses when its URL names a host; without it that name is
    resolved by ``SystemDns``. ``verify`` is passed to the ``Client`` (``True``, ``False``, a CA file or an
    ``ssl.SSLContext``). ``client``, when given, is used as it is (its own ``dns`` must not be this
    resolver). Call :meth:`close` (or use ``with``) to release the connections and threads.

    :meth:`alookup` asks the same way over a ``fastnet.AsyncClient`` with the same options, made on first
    use for each event loop (a ``client`` given that is an ``AsyncClient`` is used by :meth:`alookup`
    instead, and :meth:`lookup` makes its own blocking one), the AAAA query as a task beside the A one.
    ``await resolver.aclose()`` (or ``async with``) closes them too.
    """

    def __init__(
        self,
        url: str,
        bootstrap: Iterable[str] | None = None,
        method: str = "GET",
        format: str = "dns-message",  # noqa: A002 - the issue's spelling
        verify: bool | str | ssl.SSLContext = True,
        timeout: float = 5.0,
        ipv6: bool = True,
        client: _Client | _AsyncClient | None = None,
    ) -> None:
        parsed = URL(url)
        method = method.upper()
        if method not in ("GET", "POST"):
            raise ValueError(f"method must be 'GET' or 'POST', not {method!r}")
        if format not in ("dns-message", "json"):
            raise ValueError(f"format must be 'dns-message' or 'json', not {format!r}")
        if format == "json" and method != "GET":
            raise ValueError("the JSON API is GET only")
        if not timeout > 0:
            raise ValueError(f"timeout must be positive, not {timeout!r}")
        load_dnspython()
        self.url = str(parsed)
        self._shown = parsed.redacted()  # for repr() and errors: no user-info
        self.host: str = parsed.host
        self.method = method
        self.format = format
        self.verify = verify
        self.timeout = float(timeout)
        self.ipv6 = ipv6
        addresses = list(bootstrap or ())
        self.bootstrap: BootstrapDns | SystemDns
        if addresses:
            self.bootstrap = BootstrapDns(self.host, addresses)
        else:
            self.bootstrap = SystemDns()
        self._client: _Client | None = None
        self._aclient: _AsyncClient | None = None  # an AsyncClient given as ``client``
        if client is not None and _is_async(client):
            self._aclient = client
        else:
            self._client = client
        self._own_client = self._client is None  # made here (so closed here) when not given
        # the AsyncClient made for each event loop, dropped with the loop
        self._aclients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _AsyncClient] = (
            weakref.WeakKeyDictionary()
        )
        self._executor: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        self._closed = False

    # -- plumbing ---------------------------------------------------------------------------------

    def _get_client(self) -> _Client:
        with self._lock:
            if self._closed:
                raise UnknownHostError(f"{self!r} is closed", phase="dns")
            if self._client is None:
                from fastnet.client import Client  # lazy: fastnet.dns must import without the client

                self._client = Client(
                    dns=self.bootstrap,
                    verify=self.verify,
                    connect_timeout=self.timeout,
                    read_timeout=self.timeout,
                )
            return self._client

    def _get_executor(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._closed:
                raise UnknownHostError(f"{self!r} is closed", phase="dns")
            if self._executor is None:
                self._executor = ThreadPoolExecutor(max_workers=2, thread_name_prefix="fastnet-doh")
            return self._executor

    def _get_async_client(self, loop: asyncio.AbstractEventLoop) -> _AsyncClient:
        with self._lock:
            if self._closed:
                raise UnknownHostError(f"{self!r} is closed", phase="dns")
            if self._aclient is not None:
                return self._aclient
            client = self._aclients.get(loop)
            if client is None:
                import fastnet  # lazy: fastnet.dns must import without the client

                factory = getattr(fastnet, "AsyncClient", None)
                if factory is None:  # pragma: no cover - a fastnet without the asyncio client
                    raise RuntimeError("DohDns.alookup needs fastnet.AsyncClient")
                client = factory(
                    dns=self.bootstrap,
                    verify=self.verify,
                    connect_timeout=self.timeout,
                    read_timeout=self.timeout,
                )
                self._aclients[loop] = client
            return client

    def _shut(
        self,
    ) -> tuple[
        _Client | None, ThreadPoolExecutor | None, list[tuple[asyncio.AbstractEventLoop, _AsyncClient]]
    ]:
        """Mark closed; what there is to close: the blocking client, the threads, the asyncio clients."""
        with self._lock:
            self._closed = True
            client, self._client = self._client, None
            executor, self._executor = self._executor, None
            aclients = list(self._aclients.items())
            self._aclients.clear()
        return (client if self._own_client else None), executor, aclients

    def close(self) -> None:
        """Close the clients this resolver made and stop its threads (prefer ``await aclose()`` on a loop:
        called on one, ``close()`` leaves the closing of the asyncio clients to a task of that loop)."""
        client, executor, aclients = self._shut()
        if executor is not None:
            executor.shutdown(wait=True)
        if client is not None:
            client.close()
        if aclients:
            _close_async_clients([aclient for _, aclient in aclients])

    async def aclose(self) -> None:
        """Close what :meth:`close` closes, awaiting the ``AsyncClient`` of every loop (an ``AsyncClient``
        is not bound to a loop: it closes from any)."""
        client, executor, aclients = self._shut()
        if executor is not None:
            executor.shutdown(wait=False)
        if client is not None:
            client.close()
        for _, aclient in aclients:
            await aclient.aclose()

    def __enter__(self) -> DohDns:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    async def __aenter__(self) -> DohDns:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    # -- lookups ----------------------------------------------------------------------------------

    def lookup(self, hostname: str) -> list[str]:
        return self.lookup_with_ttl(hostname)[0]

    def lookup_with_ttl(self, hostname: str) -> tuple[list[str], float | None]:
        """Addresses (A first, then AAAA) and the smallest TTL in the answers."""
        if is_ip_literal(hostname):
            return [_strip_brackets(hostname)], None
        name = normalize_hostname(hostname)
        client = self._get_client()
        rdtypes = [1, 28] if self.ipv6 else [1]
        future: Future[_Outcome] | None = None
        if len(rdtypes) == 2:
            future = self._get_executor().submit(self._resolve_type, client, name, 28)
        outcomes = [self._resolve_type(client, name, 1)]
        if future is not None:
            outcomes.append(future.result())
        return self._combine(name, outcomes)

    async def alookup(self, hostname: str) -> list[str]:
        """:meth:`lookup` on the running loop, over this loop's ``AsyncClient``."""
        return (await self.alookup_with_ttl(hostname))[0]

    async def alookup_with_ttl(self, hostname: str) -> tuple[list[str], float | None]:
        """:meth:`lookup_with_ttl` on the running loop: the AAAA query runs as a task beside the A one
        (cancelled and awaited if the lookup is cancelled); the same checks, answers and errors."""
        if is_ip_literal(hostname):
            return [_strip_brackets(hostname)], None
        name = normalize_hostname(hostname)
        loop = asyncio.get_running_loop()
        client = self._get_async_client(loop)
        aaaa: asyncio.Task[_Outcome] | None = None
        if self.ipv6:
            aaaa = loop.create_task(self._aresolve_type(client, name, 28))
        try:
            outcomes = [await self._aresolve_type(client, name, 1)]
            if aaaa is not None:
                outcomes.append(await aaaa)
        finally:
            if aaaa is not None and not aaaa.done():
                aaaa.cancel()
                await asyncio.wait((aaaa,))
        return self._combine(name, outcomes)

    def _combine(self, name: str, outcomes: list[_Outcome]) -> tuple[list[str], float | None]:
        addresses: list[str] = []
        reasons: list[str] = []
        ttls: list[float] = []
        for outcome in outcomes:
            if isinstance(outcome, str):
                reasons.append(outcome)
                continue
            found, ttl = outcome
            addresses.extend(found)
            if ttl is not None and found:
                ttls.append(ttl)
        if not addresses:
            if "NXDOMAIN" in reasons:
                reasons = ["NXDOMAIN"]
            raise unknown_host(name, reasons, f"DoH {self._shown}")
        return addresses, (min(ttls) if ttls else None)

    def _resolve_type(self, client: _Client, name: str, rdtype: int) -> _Outcome:
        """``(addresses, ttl)`` for one record type, or the failure reason as a string."""
        try:
            if self.format == "json":
                return self._resolve_json(client, name, rdtype)
            return self._resolve_message(client, name, rdtype)
        except AnswerError as exc:
            return str(exc)
        except Exception as exc:  # noqa: BLE001 - a failed HTTP exchange is one more reason
            return f"DoH request failed: {type(exc).__name__}: {exc}"

    def _resolve_message(self, client: _Client, name: str, number: int) -> tuple[list[str], float | None]:
        dns = load_dnspython()
        qname: Name = dns.name.from_text(name)
        rdtype: RdataType = dns.rdatatype.RdataType.make(number)  # as dnspython's calls would make it
        seen: set[Name] = set()
        ttl: float | None = None
        for _ in range(MAX_CNAME_DEPTH + 1):
            query, method, url, headers, body = self._message_request(qname, rdtype)
            request = Request(method, url, headers=headers, body=body)
            message = parse_message_response(query, *_exchange(client, request))
            found, part_ttl, target = extract_addresses(message, qname, rdtype, seen)
            if part_ttl is not None:
                ttl = part_ttl if ttl is None else min(ttl, part_ttl)
            if target is None:
                return found, ttl
            qname = target
        raise AnswerError(f"CNAME chain longer than {MAX_CNAME_DEPTH}")

    def _resolve_json(self, client: _Client, name: str, rdtype: int) -> tuple[list[str], float | None]:
        current = name
        seen = {name}
        ttl: float | None = None
        for _ in range(MAX_CNAME_DEPTH + 1):
            url = build_json_url(self.url, current, "A" if rdtype == 1 else "AAAA")
            request = Request("GET", url, headers=_asking(JSON_TYPES[0]))
            found, part_ttl, target = parse_json_response(current, rdtype, *_exchange(client, request))
            if part_ttl is not None:
                ttl = part_ttl if ttl is None else min(ttl, part_ttl)
            if target is None:
                return found, ttl
            if target in seen:
                raise AnswerError(f"CNAME loop at {target}")
            seen.add(target)
            current = target
        raise AnswerError(f"CNAME chain longer than {MAX_CNAME_DEPTH}")

    async def _aresolve_type(self, client: _AsyncClient, name: str, rdtype: int) -> _Outcome:
        """:meth:`_resolve_type` over an ``AsyncClient``."""
        try:
            if self.format == "json":
                return await self._aresolve_json(client, name, rdtype)
            return await self._aresolve_message(client, name, rdtype)
        except AnswerError as exc:
            return str(exc)
        except Exception as exc:  # noqa: BLE001 - a failed HTTP exchange is one more reason
            return f"DoH request failed: {type(exc).__name__}: {exc}"

    def _message_request(
        self, qname: Name, rdtype: RdataType
    ) -> tuple[QueryMessage, str, str, dict[str, str], bytes | None]:
        """``(query, method, url, headers, body)`` of the RFC 8484 request for one question."""
        query = make_query(qname, rdtype, zero_id=True)
        wire = query.to_wire()
        if self.method == "GET":
            return query, "GET", build_get_url(self.url, wire), _asking(MESSAGE_TYPE), None
        headers = {"Content-Type": MESSAGE_TYPE, **_asking(MESSAGE_TYPE)}
        return query, "POST", self.url, headers, wire

    async def _aresolve_message(
        self, client: _AsyncClient, name: str, number: int
    ) -> tuple[list[str], float | None]:
        dns = load_dnspython()
        qname: Name = dns.name.from_text(name)
        rdtype: RdataType = dns.rdatatype.RdataType.make(number)  # as dnspython's calls would make it
        seen: set[Name] = set()
        ttl: float | None = None
        for _ in range(MAX_CNAME_DEPTH + 1):
            query, method, url, headers, body = self._message_request(qname, rdtype)
            request = Request(method, url, headers=headers, body=body)
            message = parse_message_response(query, *await _aexchange(client, request))
            found, part_ttl, target = extract_addresses(message, qname, rdtype, seen)
            if part_ttl is not None:
                ttl = part_ttl if ttl is None else min(ttl, part_ttl)
            if target is None:
                return found, ttl
            qname = target
        raise AnswerError(f"CNAME chain longer than {MAX_CNAME_DEPTH}")

    async def _aresolve_json(
        self, client: _AsyncClient, name: str, rdtype: int
    ) -> tuple[list[str], float | None]:
        current = name
        seen = {name}
        ttl: float | None = None
        for _ in range(MAX_CNAME_DEPTH + 1):
            url = build_json_url(self.url, current, "A" if rdtype == 1 else "AAAA")
            request = Request("GET", url, headers=_asking(JSON_TYPES[0]))
            found, part_ttl, target = parse_json_response(current, rdtype, *await _aexchange(client, request))
            if part_ttl is not None:
                ttl = part_ttl if ttl is None else min(ttl, part_ttl)
            if target is None:
                return found, ttl
            if target in seen:
                raise AnswerError(f"CNAME loop at {target}")
            seen.add(target)
            current = target
        raise AnswerError(f"CNAME chain longer than {MAX_CNAME_DEPTH}")

    def __repr__(self) -> str:
        return f"DohDns({self._shown!r}, method={self.method!r}, format={self.format!r})"


def _asking(media_type: str) -> dict[str, str]:
    """The headers of a DoH request: this media type, and no compression (see :func:`read_answer`)."""
    return {"Accept": media_type, "Accept-Encoding": "identity"}


def _exchange(client: _Client, request: Request) -> tuple[int, str | None, bytes]:
    """Status, content type and body (:func:`read_answer`) of one DoH request over ``client``."""
    call = client.new_call(request)
    response = call.execute()
    try:
        body = read_answer(response)
    except BaseException:
        call.cancel()  # abandon the rest of the body: close() would first try to drain it
        raise
    finally:
        response.close()
    return response.status_code, response.headers.get("content-type"), body


async def _aexchange(client: _AsyncClient, request: Request) -> tuple[int, str | None, bytes]:
    """:func:`_exchange` over an ``AsyncClient``: the body streamed through :func:`aread_answer`, the call
    abandoned (never drained) when the answer is bad or the lookup is cancelled."""
    call = client.new_call(request)
    response = await call.execute()
    try:
        body = await aread_answer(response)
    except BaseException:
        call.cancel()  # abandon the rest of the body: aclose() would first try to drain it
        raise
    finally:
        await response.aclose()
    return response.status_code, response.headers.get("content-type"), body


_CLOSING: set[asyncio.Task[None]] = set()  # tasks closing asyncio clients, kept alive until they finish


def _close_async_clients(clients: list[_AsyncClient]) -> None:
    """Close ``AsyncClient``s from blocking code: by a task when this thread runs a loop (which cannot be
    waited for here), else on a loop made for it."""

    async def close_all() -> None:
        for client in clients:
            await client.aclose()

    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is not None:
        task = running.create_task(close_all())
        _CLOSING.add(task)
        task.add_done_callback(_CLOSING.discard)
        return
    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(close_all())
    finally:
        loop.close()
