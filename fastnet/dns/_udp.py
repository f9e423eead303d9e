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

import socket
import time
from typing import Any

from fastnet.dns._base import _strip_brackets, is_ip_literal, normalize_hostname
from fastnet.dns._wire import (
    MAX_CNAME_DEPTH,
    AnswerError,
    extract_addresses,
    load_dnspython,
    make_query,
    unknown_host,
)

__all__ = ["UdpDns"]

# Upper bound on datagrams read per exchange, so a flood of junk cannot keep a lookup spinning.
_MAX_DATAGRAMS = 256


class UdpDns:
    """Resolves by asking the DNS server ``server`` (an IP literal) directly.

    >>> dns = UdpDns("127.0.0.1", 19054, timeout=2.0)      # doctest: +SKIP
    >>> dns.lookup("app.test")                              # doctest: +SKIP
    ['127.0.0.1', '127.0.0.2']

    Addresses come back A records first, then AAAA, each in the server's order. ``ipv6=False`` skips
    the AAAA query. NXDOMAIN, SERVFAIL, REFUSED, timeouts and bad answers raise ``UnknownHostError``
    naming the reason. Needs dnspython (``pip install 'fastnet-http[dns]'``).
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
        qname = dns.name.from_text(name)
        rdtypes = [dns.rdatatype.A] + ([dns.rdatatype.AAAA] if self.ipv6 else [])
        deadline = time.monotonic() + self.timeout
        outcomes = self._exchange([(qname, t) for t in rdtypes], deadline)
        addresses: list[str] = []
        reasons: list[str] = []
        ttls: list[float] = []
        for rdtype in rdtypes:
            found, ttl, reason = self._follow(qname, rdtype, outcomes[rdtype], deadline)
            addresses.extend(found)
            if ttl is not None and found:
                ttls.append(ttl)
            if reason is not None:
                reasons.append(reason)
        if not addresses:
            if any(r == "NXDOMAIN" for r in reasons):
                reasons = ["NXDOMAIN"]
            raise unknown_host(name, reasons, f"udp {self._where()}")
        return addresses, (min(ttls) if ttls else None)

    def _follow(self, qname: Any, rdtype: Any, outcome: Any, deadline: float) -> tuple[list[str], Any, Any]:
        """Turn one query's outcome into (addresses, ttl, failure reason), re-asking for CNAME targets."""
        seen: set[Any] = set()
        ttl = None
        for _ in range(MAX_CNAME_DEPTH + 1):
            if isinstance(outcome, str):
                return [], ttl, outcome
            try:
                found, part_ttl, target = extract_addresses(outcome, qname, rdtype, seen)
            except AnswerError as exc:
                return [], ttl, str(exc)
            if part_ttl is not None:
                ttl = part_ttl if ttl is None else min(ttl, part_ttl)
            if target is None:
                return found, ttl, None
            qname = target
            outcome = self._exchange([(qname, rdtype)], deadline)[rdtype]
        return [], ttl, f"CNAME chain longer than {MAX_CNAME_DEPTH}"

    def _where(self) -> str:
        host = f"[{self.server}]" if ":" in self.server else self.server
        return f"{host}:{self.port}"

    def _exchange(self, questions: list[tuple[Any, Any]], deadline: float) -> dict[Any, Any]:
        """Send every question at once over UDP; map rdtype to a response or a failure reason."""
        dns = load_dnspython()
        pending: dict[int, tuple[Any, Any]] = {}
        for qname, rdtype in questions:
            query = make_query(qname, rdtype)
            while query.id in pending:
                query = make_query(qname, rdtype)
            pending[query.id] = (query, rdtype)
        results: dict[Any, Any] = {}
        ignored = 0
        with socket.socket(self._family, socket.SOCK_DGRAM) as sock:
            try:
                sock.connect((self.server, self.port))
                for query, _ in pending.values():
                    sock.send(query.to_wire())
            except OSError as exc:
                return {rdtype: f"cannot send to {self._where()}: {exc}" for _, rdtype in questions}
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
                        results[rdtype] = f"no DNS server at {self._where()}: {exc.strerror or exc}"
                    pending.clear()
                    break
                try:
                    response = dns.message.from_wire(data)
                except Exception:  # noqa: BLE001 - any parse failure means "not an answer"
                    ignored += 1
                    continue
                match = pending.get(response.id)
                if match is None or not match[0].is_response(response):
                    ignored += 1
                    continue
                query, rdtype = match
                del pending[response.id]
                if response.flags & dns.flags.TC:
                    results[rdtype] = self._tcp(query, deadline) if self.tcp_fallback else "truncated answer"
                else:
                    results[rdtype] = response
        note = f" after ignoring {ignored} malformed or mismatched answer(s)" if ignored else ""
        for _, rdtype in pending.values():
            results[rdtype] = f"timed out after {self.timeout:g} s{note}"
        return results

    def _tcp(self, query: Any, deadline: float) -> Any:
        """Ask ``query`` again over TCP (RFC 7766); a response or a failure reason."""
        dns = load_dnspython()
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return f"timed out after {self.timeout:g} s"
        try:
            response = dns.query.tcp(query, self.server, timeout=remaining, port=self.port)
        except dns.exception.Timeout:
            return f"timed out over TCP after {self.timeout:g} s"
        except OSError as exc:
            return f"TCP to {self._where()} failed: {exc.strerror or exc}"
        except Exception as exc:  # noqa: BLE001 - malformed or mismatched TCP answer
            return f"bad answer over TCP: {type(exc).__name__}: {exc}"
        if not query.is_response(response):
            return "mismatched answer over TCP"
        return response

    def __repr__(self) -> str:
        return f"UdpDns({self._where()})"
