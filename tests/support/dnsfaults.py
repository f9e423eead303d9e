"""A small scripted DNS server (dnspython, UDP + TCP on loopback) for the faults real servers cannot make.

Used only where unbound cannot help: slow answers, truncation, SERVFAIL, answers with the wrong ID or
question, malformed or cut-off packets, CNAME loops, huge answers, and counting the queries that reach
the server (single-flight). Everything else is tested against unbound/dnsdist from the testbed.

    with FaultDnsServer() as server:
        server.add("app.test", "A", "127.0.0.1", "127.0.0.2")
        server.fault("slow.test", "slow", delay=0.5)
        UdpDns(*server.address).lookup("app.test")
        server.queries      # [("udp", "app.test", "A"), ("udp", "app.test", "AAAA")]

Faults (``fault(name, kind, ...)``): ``slow`` (answer after ``delay``), ``truncate`` (TC over UDP, the
answer over TCP), ``servfail``, ``refused``, ``bad_id`` / ``bad_question`` (first a spoofed answer
carrying 10.66.66.66, then, unless ``then_answer=False``, the real one), ``garbage`` (random bytes that
start with the query's ID), ``short`` (the real answer cut in half), ``drop`` (never answer),
``cname_only`` (answer a CNAME without chasing its target).
Records for a name are answered in the order added; CNAMEs inside the zone are chased.
"""

from __future__ import annotations

import os
import socket
import struct
import threading
import time
from typing import Any

import dns.flags
import dns.message
import dns.name
import dns.rcode
import dns.rdataclass
import dns.rdatatype
import dns.rrset

__all__ = ["POISON", "FaultDnsServer"]

POISON = "10.66.66.66"


class FaultDnsServer:
    """UDP and TCP on the same loopback port; ``address`` is ``(host, port)``."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        # the kernel picks a free UDP port; the same TCP port may be taken, so try a few times
        for attempt in range(20):
            self.udp = socket.socket(family, socket.SOCK_DGRAM)
            self.udp.bind((host, 0))
            self.address: tuple[str, int] = (host, self.udp.getsockname()[1])
            self.tcp = socket.socket(family, socket.SOCK_STREAM)
            self.tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                self.tcp.bind(self.address)
                break
            except OSError:
                self.udp.close()
                self.tcp.close()
                if attempt == 19:
                    raise
        self.tcp.listen(16)
        self.records: dict[tuple[str, str], tuple[int, list[str]]] = {}
        self.faults: dict[str, dict[str, Any]] = {}
        self.queries: list[tuple[str, str, str]] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    # -- scripting ------------------------------------------------------------------------------

    def add(self, name: str, rdtype: str, *values: str, ttl: int = 5) -> None:
        """Records ``name rdtype values...`` (added to any already there)."""
        key = (name.lower().rstrip("."), rdtype.upper())
        if key[1] == "CNAME":
            values = tuple(v if v.endswith(".") else v + "." for v in values)
        old_ttl, old = self.records.get(key, (ttl, []))
        self.records[key] = (ttl, old + list(values))

    def fault(self, name: str, kind: str, **options: Any) -> None:
        """Make ``name`` misbehave (see the module docstring)."""
        self.faults[name.lower().rstrip(".")] = {"kind": kind, **options}

    def count(self, name: str, rdtype: str | None = None) -> int:
        """Queries received for ``name`` (of ``rdtype``), over either transport."""
        with self._lock:
            return sum(1 for _, n, t in self.queries if n == name and (rdtype is None or t == rdtype))

    # -- lifecycle ------------------------------------------------------------------------------

    def __enter__(self) -> FaultDnsServer:
        for target in (self._serve_udp, self._serve_tcp):
            thread = threading.Thread(target=target, daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        deadline = time.monotonic() + 10
        for thread in list(self._threads):
            thread.join(max(0.0, deadline - time.monotonic()))
        self.udp.close()
        self.tcp.close()

    # -- answering ------------------------------------------------------------------------------

    def _answer(self, query: Any) -> Any:
        response = dns.message.make_response(query)
        response.flags |= dns.flags.AA | dns.flags.RA
        question = query.question[0]
        name = question.name
        for _ in range(10):
            text = name.to_text(omit_final_dot=True).lower()
            cname = self.records.get((text, "CNAME"))
            found = self.records.get((text, dns.rdatatype.to_text(question.rdtype)))
            if found:
                ttl, values = found
                response.answer.append(
                    dns.rrset.from_text_list(name, ttl, "IN", dns.rdatatype.to_text(question.rdtype), values)
                )
                return response
            if cname:
                ttl, values = cname
                response.answer.append(dns.rrset.from_text_list(name, ttl, "IN", "CNAME", values[:1]))
                name = dns.name.from_text(values[0])
                if self.faults.get(text, {}).get("kind") == "cname_only":
                    return response  # like unbound with a local CNAME: the target is not chased
                continue
            break
        if not any(key[0] == text for key in self.records) and name == question.name:
            response.set_rcode(dns.rcode.NXDOMAIN)
        return response

    def _packets(self, data: bytes, transport: str) -> tuple[list[bytes], float]:
        """What to send back for one query, and after how long."""
        try:
            query = dns.message.from_wire(data)
        except Exception:  # noqa: BLE001
            return [], 0.0
        question = query.question[0]
        name = question.name.to_text(omit_final_dot=True).lower()
        with self._lock:
            self.queries.append((transport, name, dns.rdatatype.to_text(question.rdtype)))
        fault = self.faults.get(name, {})
        kind = fault.get("kind")
        delay = float(fault.get("delay", 0.0))
        response = self._answer(query)
        good = response.to_wire(want_shuffle=False)
        if kind == "drop":
            return [], 0.0
        if kind == "servfail":
            response.answer.clear()
            response.set_rcode(dns.rcode.SERVFAIL)
            return [response.to_wire()], delay
        if kind == "refused":
            response.answer.clear()
            response.set_rcode(dns.rcode.REFUSED)
            return [response.to_wire()], delay
        if kind == "truncate" and transport == "udp":
            response.answer.clear()
            response.flags |= dns.flags.TC
            return [response.to_wire()], delay
        if transport == "tcp":
            return [good], delay
        if kind in ("bad_id", "bad_question"):
            spoof = dns.message.make_response(query)
            if kind == "bad_id":
                spoof.id = (query.id + 1) % 65536
                rrname = question.name
            else:
                rrname = dns.name.from_text("poison.test")
                spoof.question = [dns.rrset.RRset(rrname, dns.rdataclass.IN, question.rdtype)]
            rdtype = question.rdtype
            value = POISON if rdtype == dns.rdatatype.A else "fd66::66"
            spoof.answer.append(
                dns.rrset.from_text_list(rrname, 300, "IN", dns.rdatatype.to_text(rdtype), [value])
            )
            packets = [spoof.to_wire()]
            if fault.get("then_answer", True):
                packets.append(good)
            return packets, delay
        if kind == "garbage":
            packets = [data[:2] + os.urandom(40)]
            if fault.get("then_answer", False):
                packets.append(good)
            return packets, delay
        if kind == "short":
            return [good[: len(good) // 2]], delay
        return [good], delay

    def _serve_udp(self) -> None:
        self.udp.settimeout(0.05)
        while not self._stop.is_set():
            try:
                data, peer = self.udp.recvfrom(65535)
            except (TimeoutError, OSError):
                continue
            packets, delay = self._packets(data, "udp")
            if delay > 0:
                thread = threading.Thread(target=self._send_later, args=(packets, peer, delay), daemon=True)
                thread.start()
                self._threads.append(thread)
            else:
                self._send(packets, peer)

    def _send(self, packets: list[bytes], peer: Any) -> None:
        for packet in packets:
            try:
                self.udp.sendto(packet, peer)
            except OSError:
                return

    def _send_later(self, packets: list[bytes], peer: Any, delay: float) -> None:
        if not self._stop.wait(delay):
            self._send(packets, peer)

    def _serve_tcp(self) -> None:
        self.tcp.settimeout(0.05)
        while not self._stop.is_set():
            try:
                conn, _ = self.tcp.accept()
            except (TimeoutError, OSError):
                continue
            with conn:
                conn.settimeout(2.0)
                try:
                    for _ in range(16):  # bounded number of queries per connection
                        head = self._recv_exact(conn, 2)
                        if head is None:
                            break
                        data = self._recv_exact(conn, struct.unpack("!H", head)[0])
                        if data is None:
                            break
                        packets, delay = self._packets(data, "tcp")
                        if delay and self._stop.wait(delay):
                            break
                        for packet in packets:
                            conn.sendall(struct.pack("!H", len(packet)) + packet)
                except OSError:
                    continue

    @staticmethod
    def _recv_exact(conn: socket.socket, n: int) -> bytes | None:
        buf = b""
        for _ in range(n + 1):
            if len(buf) >= n:
                break
            chunk = conn.recv(n - len(buf))
            if not chunk:
                return None
            buf += chunk
        return buf
