"""``UdpDns``: a stub resolver that asks one DNS server over UDP, with TCP for truncated answers.

Theory of operation: the A and AAAA queries go out back to back on one UDP socket (so they run in
parallel without threads) with independent random IDs; answers are read until both queries have one or
the timeout passes. A datagram is accepted only if it parses and matches a pending query's ID and
question (``Message.is_response``); anything else (malformed bytes, wrong ID, wrong question) is counted
and ignored, as a stub resolver must to resist spoofing. A truncated (TC) answer is asked again over
TCP. CNAME chains are followed inside the answer, and by asking again for the chain's last name when the
server did not chase it (up to ``MAX_CNAME_DEPTH`` names, loops rejected). The smallest TTL seen is
returned to a cache through ``lookup_with_ttl``.
"""

from __future__ import annotations

import asyncio
import os
import socket
import struct
import time
from types import ModuleType
from typing import TYPE_CHECKING, TypeAlias

from fastnet.dns._base import _strip_brackets, is_ip_literal, normalize_hostname
from fastnet.dns._wire import (
    MAX_CNAME_DEPTH,
    AnswerError,
    extract_addresses,
    load_dnspython,
    make_query,
    unknown_host,
)

if TYPE_CHECKING:
    from dns.message import Message
    from dns.name import Name
    from dns.rdatatype import RdataType

    from fastnet.dns._wire import Outcome

__all__ = ["UdpDns"]

#: One record type's result: ``(addresses, ttl, failure reason)``.
_Found: TypeAlias = "tuple[list[str], float | None, str | None]"
#: The queries in flight by ID: ``(query, rdtype)``.
_Pending: TypeAlias = "dict[int, tuple[Message, RdataType]]"

# Upper bound on datagrams read per exchange, so a flood of junk cannot keep a lookup spinning.
_MAX_DATAGRAMS = 256


class UdpDns:
    """Resolves by asking the DNS server ``server`` (an IP literal) directly.

    >>> dns = UdpDns("127.0.0.1", 19054, timeout=2.0)      # doctest: +SKIP
    >>> dns.lookup("app.test")                              # doctest: +SKIP
    ['127.0.0.1', '127.0.0.2']

    Addresses come back A records first, then AAAA, each in the server's order. ``ipv6=False`` skips
    the AAAA query. NXDOMAIN, SERVFAIL, REFUSED, timeouts and bad answers raise ``UnknownHostError``
    naming the reason. Needs dnspython (``pip install 'fastnet-http[dns]'``; from a checkout:
    ``pip install -e '.[dns]'``).
    """

    __slots__ = ("server", "port", "timeout", "tcp_fallback", "ipv6", "_family")

    def __init__(
        self,
        server: str,
        port: int = 53,
        timeout: float = 3.0,
        tcp_fallback: bool = True,
        ipv6: bool = True,
    ) -> None:
        if not isinstance(server, str) or not is_ip_literal(server):
            raise ValueError(f"server must be an IP address literal, not {server!r}")
        if not 0 < int(port) < 65536:
            raise ValueError(f"port must be in 1-65535, not {port!r}")
        if not timeout > 0:
            raise ValueError(f"timeout must be positive, not {timeout!r}")
        load_dnspython()
        self.server = _strip_brackets(server)
        self.port = int(port)
        self.timeout = float(timeout)
        self.tcp_fallback = tcp_fallback
        self.ipv6 = ipv6
        self._family = socket.AF_INET6 if ":" in self.server else socket.AF_INET

    def lookup(self, hostname: str) -> list[str]:
        return self.lookup_with_ttl(hostname)[0]

    def lookup_with_ttl(self, hostname: str) -> tuple[list[str], float | None]:
        """Addresses and the smallest record TTL along the answer."""
        if is_ip_literal(hostname):
            return [_strip_brackets(hostname)], None
        dns = load_dnspython()
        name = normalize_hostname(hostname)
        qname: Name = dns.name.from_text(name)
        rdtypes = self._rdtypes(dns)
        deadline = time.monotonic() + self.timeout
        outcomes = self._exchange([(qname, t) for t in rdtypes], deadline)
        found = [self._follow(qname, rdtype, outcomes[rdtype], deadline) for rdtype in rdtypes]
        return self._combine(name, found)

    async def alookup(self, hostname: str) -> list[str]:
        """:meth:`lookup` on the running loop (a datagram endpoint, TCP over asyncio when truncated)."""
        return (await self.alookup_with_ttl(hostname))[0]

    async def alookup_with_ttl(self, hostname: str) -> tuple[list[str], float | None]:
        """:meth:`lookup_with_ttl` on the running loop: the same queries, checks, deadline and errors.

        Cancelling it closes the UDP endpoint and any TCP connection it opened."""
        if is_ip_literal(hostname):
            return [_strip_brackets(hostname)], None
        dns = load_dnspython()
        name = normalize_hostname(hostname)
        qname: Name = dns.name.from_text(name)
        rdtypes = self._rdtypes(dns)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout
        outcomes = await self._aexchange(loop, [(qname, t) for t in rdtypes], deadline)
        found = [await self._afollow(loop, qname, rdtype, outcomes[rdtype], deadline) for rdtype in rdtypes]
        return self._combine(name, found)

    def _rdtypes(self, dns: ModuleType) -> list[RdataType]:
        return [dns.rdatatype.A] + ([dns.rdatatype.AAAA] if self.ipv6 else [])

    def _combine(self, name: str, found: list[_Found]) -> tuple[list[str], float | None]:
        """The answer from each record type's (addresses, ttl, reason): A first, then AAAA."""
        addresses: list[str] = []
        reasons: list[str] = []
        ttls: list[float] = []
        for part, ttl, reason in found:
            addresses.extend(part)
            if ttl is not None and part:
                ttls.append(ttl)
            if reason is not None:
                reasons.append(reason)
        if not addresses:
            if any(r == "NXDOMAIN" for r in reasons):
                reasons = ["NXDOMAIN"]
            raise unknown_host(name, reasons, f"udp {self._where()}")
        return addresses, (min(ttls) if ttls else None)

    def _follow(self, qname: Name, rdtype: RdataType, outcome: Outcome, deadline: float) -> _Found:
        """Turn one query's outcome into (addresses, ttl, failure reason), re-asking for CNAME targets."""
        chase = _Chase(qname)
        for _ in range(MAX_CNAME_DEPTH + 1):
            target = chase.step(outcome, rdtype)
            if target is None:
                return chase.found, chase.ttl, chase.reason
            outcome = self._exchange([(target, rdtype)], deadline)[rdtype]
        return [], chase.ttl, f"CNAME chain longer than {MAX_CNAME_DEPTH}"

    async def _afollow(
        self,
        loop: asyncio.AbstractEventLoop,
        qname: Name,
        rdtype: RdataType,
        outcome: Outcome,
        deadline: float,
    ) -> _Found:
        """:meth:`_follow` over the loop."""
        chase = _Chase(qname)
        for _ in range(MAX_CNAME_DEPTH + 1):
            target = chase.step(outcome, rdtype)
            if target is None:
                return chase.found, chase.ttl, chase.reason
            outcome = (await self._aexchange(loop, [(target, rdtype)], deadline))[rdtype]
        return [], chase.ttl, f"CNAME chain longer than {MAX_CNAME_DEPTH}"

    def _where(self) -> str:
        host = f"[{self.server}]" if ":" in self.server else self.server
        return f"{host}:{self.port}"

    def _timed_out(self, ignored: int) -> str:
        note = f" after ignoring {ignored} malformed or mismatched answer(s)" if ignored else ""
        return f"timed out after {self.timeout:g} s{note}"

    def _open(self, pending: _Pending, blocking: bool) -> socket.socket | str:
        """A UDP socket connected to the server with every query sent, or why that failed."""
        sock = socket.socket(self._family, socket.SOCK_DGRAM)
        try:
            sock.setblocking(blocking)
            sock.connect((self.server, self.port))
            for query, _ in pending.values():
                sock.send(query.to_wire())
        except OSError as exc:
            sock.close()
            return f"cannot send to {self._where()}: {exc}"
        return sock

    def _exchange(self, questions: list[tuple[Name, RdataType]], deadline: float) -> dict[RdataType, Outcome]:
        """Send every question at once over UDP; map rdtype to a response or a failure reason."""
        pending = _queries(questions)
        sock = self._open(pending, True)
        if isinstance(sock, str):
            return {rdtype: sock for _, rdtype in questions}
        results: dict[RdataType, Outcome] = {}
        ignored = 0
        with sock:
            for _ in range(_MAX_DATAGRAMS):
                if not pending:
                    break
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                sock.settimeout(remaining)
                try:
                    data = sock.recv(65535)
                except TimeoutError:
                    break
                except OSError as exc:  # ICMP port unreachable shows up here as ECONNREFUSED
                    for _, rdtype in pending.values():
                        results[rdtype] = self._unreachable(exc)
                    pending.clear()
                    break
                match = _match(pending, data)
                if match is None:
                    ignored += 1
                    continue
                query, rdtype, response = match
                if _truncated(response):
                    results[rdtype] = self._tcp(query, deadline) if self.tcp_fallback else "truncated answer"
                else:
                    results[rdtype] = response
        for _, rdtype in pending.values():
            results[rdtype] = self._timed_out(ignored)
        return results

    async def _aexchange(
        self, loop: asyncio.AbstractEventLoop, questions: list[tuple[Name, RdataType]], deadline: float
    ) -> dict[RdataType, Outcome]:
        """:meth:`_exchange` over a datagram endpoint; the deadline is a timer of the loop."""
        pending = _queries(questions)
        sock = self._open(pending, False)
        if isinstance(sock, str):
            return {rdtype: sock for _, rdtype in questions}
        protocol = _Datagrams(self, pending)
        timer: asyncio.TimerHandle | None = None
        try:
            try:
                await loop.create_datagram_endpoint(lambda: protocol, sock=sock)
            except OSError as exc:  # the loop could not take the socket: nothing owns it but us
                if protocol.transport is None:
                    sock.close()
                return {rdtype: f"cannot send to {self._where()}: {exc}" for _, rdtype in questions}
            timer = loop.call_at(deadline, protocol.finish)
            while True:
                while protocol.truncated:  # TCP while the other query's datagram may still arrive
                    query, rdtype = protocol.truncated.pop(0)
                    protocol.results[rdtype] = await self._atcp(loop, query, deadline)
                if protocol.finished:
                    break
                protocol.waiter = loop.create_future()
                await protocol.waiter
                protocol.waiter = None
        finally:
            if timer is not None:
                timer.cancel()
            protocol.close()
        return protocol.results

    def _unreachable(self, exc: OSError) -> str:
        return f"no DNS server at {self._where()}: {exc.strerror or exc}"

    def _tcp(self, query: Message, deadline: float) -> Outcome:
        """Ask ``query`` again over TCP (RFC 7766); a response or a failure reason."""
        dns = load_dnspython()
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return f"timed out after {self.timeout:g} s"
        try:
            response: Message = dns.query.tcp(query, self.server, timeout=remaining, port=self.port)
        except dns.exception.Timeout:
            return f"timed out over TCP after {self.timeout:g} s"
        except OSError as exc:
            return f"TCP to {self._where()} failed: {exc.strerror or exc}"
        except Exception as exc:  # noqa: BLE001 - malformed or mismatched TCP answer
            return f"bad answer over TCP: {type(exc).__name__}: {exc}"
        if not query.is_response(response):
            return "mismatched answer over TCP"
        return response

    async def _atcp(self, loop: asyncio.AbstractEventLoop, query: Message, deadline: float) -> Outcome:
        """:meth:`_tcp` over the loop: the same reasons for the same failures."""
        remaining = deadline - loop.time()
        if remaining <= 0:
            return f"timed out after {self.timeout:g} s"
        try:
            return await asyncio.wait_for(self._tcp_query(loop, query), remaining)
        except TimeoutError as exc:
            if getattr(exc, "errno", None) is None:  # the deadline, not a connect that timed out
                return f"timed out over TCP after {self.timeout:g} s"
            return f"TCP to {self._where()} failed: {_strerror(exc)}"
        except OSError as exc:
            return f"TCP to {self._where()} failed: {_strerror(exc)}"
        except Exception as exc:  # noqa: BLE001 - malformed or mismatched TCP answer
            return f"bad answer over TCP: {type(exc).__name__}: {exc}"

    async def _tcp_query(self, loop: asyncio.AbstractEventLoop, query: Message) -> Message:
        """One query over a new TCP connection: two-byte length, message; the same for the answer,
        never reading more than that (at most 65,537 bytes are kept)."""
        dns = load_dnspython()
        wire = query.to_wire()
        protocol = _StreamAnswer(loop)
        try:
            transport, _ = await loop.create_connection(lambda: protocol, self.server, self.port)
        except BaseException:
            protocol.close()
            raise
        try:
            transport.write(struct.pack("!H", len(wire)) + wire)
            data = await protocol.answer
        finally:
            protocol.close()
        response: Message = dns.message.from_wire(data)
        if not query.is_response(response):
            raise dns.query.BadResponse  # what dns.query.tcp raises on the blocking path
        return response

    def __repr__(self) -> str:
        return f"UdpDns({self._where()})"


def _queries(questions: list[tuple[Name, RdataType]]) -> _Pending:
    """One query per question, by ID (IDs random and distinct)."""
    pending: _Pending = {}
    for qname, rdtype in questions:
        query = make_query(qname, rdtype)
        while query.id in pending:
            query = make_query(qname, rdtype)
        pending[query.id] = (query, rdtype)
    return pending


def _match(pending: _Pending, data: bytes) -> tuple[Message, RdataType, Message] | None:
    """``(query, rdtype, response)`` when ``data`` answers a pending query (which leaves ``pending``),
    else ``None``: malformed bytes, an unknown ID or another question."""
    dns = load_dnspython()
    try:
        response: Message = dns.message.from_wire(data)
    except Exception:  # noqa: BLE001 - any parse failure means "not an answer"
        return None
    match = pending.get(response.id)
    if match is None or not match[0].is_response(response):
        return None
    del pending[response.id]
    return match[0], match[1], response


def _truncated(response: Message) -> bool:
    return bool(response.flags & load_dnspython().flags.TC)


def _strerror(exc: OSError) -> str:
    """The reason an OSError gives, as the blocking socket call would word it (asyncio words a refused
    connect "Connect call failed (...)"; the errno says the same thing plainly)."""
    if isinstance(exc.errno, int) and exc.errno > 0:
        return os.strerror(exc.errno)
    return str(exc.strerror or exc)


class _Chase:
    """Following one record type's answers along a CNAME chain (the state of ``_follow``)."""

    __slots__ = ("qname", "seen", "ttl", "found", "reason")

    def __init__(self, qname: Name) -> None:
        self.qname = qname
        self.seen: set[Name] = set()
        self.ttl: float | None = None
        self.found: list[str] = []
        self.reason: str | None = None

    def step(self, outcome: Outcome, rdtype: RdataType) -> Name | None:
        """Take one query's outcome: ``None`` when done (``found`` or ``reason`` set), else the name
        to ask for next (a CNAME target the server did not chase)."""
        if isinstance(outcome, str):
            self.reason = outcome
            return None
        try:
            found, part_ttl, target = extract_addresses(outcome, self.qname, rdtype, self.seen)
        except AnswerError as exc:
            self.reason = str(exc)
            return None
        if part_ttl is not None:
            self.ttl = part_ttl if self.ttl is None else min(self.ttl, part_ttl)
        if target is None:
            self.found = found
            return None
        self.qname = target
        return target


class _Datagrams(asyncio.DatagramProtocol):
    """The loop's side of one UDP exchange: datagrams are matched to the pending queries as they arrive
    (the blocking loop's steps); the exchange ends when every query has an answer, on an ICMP error,
    after ``_MAX_DATAGRAMS`` datagrams, or at the deadline (:meth:`finish`, a timer of the loop)."""

    def __init__(self, owner: UdpDns, pending: _Pending) -> None:
        self.owner = owner
        self.pending = pending
        self.results: dict[RdataType, Outcome] = {}
        self.truncated: list[tuple[Message, RdataType]] = []  # (query, rdtype) to ask again over TCP
        self.ignored = 0
        self.received = 0
        self.finished = False
        self.closed = False
        self.transport: asyncio.BaseTransport | None = None
        self.waiter: asyncio.Future[None] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport
        if self.closed:  # given up while the endpoint was being made
            transport.close()

    def datagram_received(self, data: bytes, addr: object) -> None:
        if self.finished:
            return
        self.received += 1
        match = _match(self.pending, data)
        if match is None:
            self.ignored += 1
        else:
            query, rdtype, response = match
            if not _truncated(response):
                self.results[rdtype] = response
            elif self.owner.tcp_fallback:
                self.truncated.append((query, rdtype))
                self._wake()
            else:
                self.results[rdtype] = "truncated answer"
        if not self.pending or self.received >= _MAX_DATAGRAMS:
            self.finish()

    def error_received(self, exc: Exception) -> None:
        if self.finished:
            return
        reason = self.owner._unreachable(exc) if isinstance(exc, OSError) else str(exc)
        for _, rdtype in self.pending.values():
            self.results[rdtype] = reason
        self.pending.clear()
        self.finish()

    def connection_lost(self, exc: Exception | None) -> None:
        if exc is not None:
            self.error_received(exc)
        self.finish()

    def finish(self) -> None:
        """No more datagrams are taken; queries still unanswered have timed out."""
        if self.finished:
            return
        self.finished = True
        for _, rdtype in self.pending.values():
            self.results[rdtype] = self.owner._timed_out(self.ignored)
        self.pending.clear()
        self._wake()

    def _wake(self) -> None:
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def close(self) -> None:
        """Done with the endpoint (answered, or the lookup was cancelled): close it."""
        self.finished = True
        self.closed = True
        if self.transport is not None:
            self.transport.close()


class _StreamAnswer(asyncio.Protocol):
    """Receives one length-prefixed DNS message over TCP into ``answer``, keeping no byte past it."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.answer: asyncio.Future[bytes] = loop.create_future()
        self.buffer = bytearray()
        self.limit = 2 + 65535  # until the length prefix says how much
        self.transport: asyncio.BaseTransport | None = None
        self.closed = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport
        if self.closed:
            transport.close()

    def data_received(self, data: bytes) -> None:
        if self.answer.done():
            return
        buffer = self.buffer
        buffer += data[: self.limit - len(buffer)]
        if len(buffer) >= 2:
            self.limit = 2 + struct.unpack_from("!H", buffer)[0]
            if len(buffer) >= self.limit:
                self.answer.set_result(bytes(buffer[2 : self.limit]))

    def eof_received(self) -> bool:
        self._fail(EOFError("EOF"))  # what dnspython raises for an answer cut short
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self._fail(exc if exc is not None else EOFError("EOF"))

    def _fail(self, exc: BaseException) -> None:
        if not self.answer.done():
            self.answer.set_exception(exc)

    def close(self) -> None:
        self.closed = True
        answer = self.answer
        if not answer.done():
            answer.cancel()
        elif not answer.cancelled():
            answer.exception()  # retrieved: an error nobody awaits any more is not logged
        if self.transport is not None:
            self.transport.close()
