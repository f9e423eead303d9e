"""UdpDns against the scripted fault server (tests/support/dnsfaults.py): the faults unbound cannot make.

UdpDns.alookup against real servers on loopback: the scripted fault server
(tests/support/dnsfaults.py), the TCP servers below, and the testbed's unbound. Every answer and every
error is held against the blocking lookup's for the same name; cancellation must leave no socket open and
no task pending."""

from __future__ import annotations

import asyncio
import socket
import struct
import threading
import time
import tracemalloc

import dns.flags
import dns.message
import dns.rrset
import pytest

from fastnet.dns import CachingDns, UdpDns
from fastnet.exceptions import UnknownHostError
from tests.support.aioloop import (
    aio_fixture,  # noqa: F401  (the fixture "aio")
    client_sockets,
    wait_closed,
    wait_for,
)
from tests.support.dnsfaults import POISON, FaultDnsServer
from tests.support.testbed import Testbed

pytestmark = pytest.mark.filterwarnings("error")


@pytest.fixture
def dns_server():
    """The scripted DNS server (``dnsfaults``) with the names most tests ask for."""
    with FaultDnsServer() as srv:
        srv.add("app.test", "A", "127.0.0.1", "127.0.0.2")
        srv.add("dual.test", "A", "127.0.0.1")
        srv.add("dual.test", "AAAA", "::1")
        srv.add("v6.test", "AAAA", "::1")
        yield srv


def test_udp_dns_basic_order_and_ttl(dns_server: FaultDnsServer):
    dns = UdpDns(*dns_server.address, timeout=3)
    assert dns.lookup_with_ttl("app.test") == (["127.0.0.1", "127.0.0.2"], 5)
    assert dns.lookup("dual.test") == ["127.0.0.1", "::1"]
    assert dns.lookup("v6.test") == ["::1"]
    assert dns_server.count("app.test", "A") == 1 and dns_server.count("app.test", "AAAA") == 1


def test_udp_dns_ipv4_only(dns_server: FaultDnsServer):
    dns = UdpDns(*dns_server.address, ipv6=False)
    assert dns.lookup("dual.test") == ["127.0.0.1"]
    assert dns_server.count("dual.test", "AAAA") == 0


def test_udp_dns_queries_in_parallel(dns_server: FaultDnsServer):
    dns_server.fault("app.test", "slow", delay=0.4)
    dns = UdpDns(*dns_server.address, timeout=3)
    started = time.monotonic()
    assert dns.lookup("app.test") == ["127.0.0.1", "127.0.0.2"]
    # sequential queries would take 0.8 s; generous bound, not a speed assertion
    assert time.monotonic() - started < 0.75


def test_udp_dns_nxdomain(dns_server: FaultDnsServer):
    with pytest.raises(UnknownHostError, match="nx.test: NXDOMAIN"):
        UdpDns(*dns_server.address).lookup("nx.test")


def test_udp_dns_servfail(dns_server: FaultDnsServer):
    dns_server.add("servfail.test", "A", "127.0.0.1")
    dns_server.fault("servfail.test", "servfail")
    with pytest.raises(UnknownHostError, match="SERVFAIL"):
        UdpDns(*dns_server.address).lookup("servfail.test")


def test_udp_dns_timeout(dns_server: FaultDnsServer):
    dns_server.add("slow.test", "A", "127.0.0.1")
    dns_server.fault("slow.test", "slow", delay=2.0)
    with pytest.raises(UnknownHostError, match="timed out after 0.3 s"):
        UdpDns(*dns_server.address, timeout=0.3).lookup("slow.test")


def test_udp_dns_truncated_answer_retries_over_tcp(dns_server: FaultDnsServer):
    dns_server.add("tc.test", "A", "127.0.0.5")
    dns_server.fault("tc.test", "truncate")
    assert UdpDns(*dns_server.address).lookup("tc.test") == ["127.0.0.5"]
    assert ("tcp", "tc.test", "A") in dns_server.queries


def test_udp_dns_truncated_without_tcp_fallback(dns_server: FaultDnsServer):
    dns_server.add("tc.test", "A", "127.0.0.5")
    dns_server.fault("tc.test", "truncate")
    with pytest.raises(UnknownHostError, match="truncated"):
        UdpDns(*dns_server.address, tcp_fallback=False).lookup("tc.test")


def test_udp_dns_huge_answer_over_tcp_is_capped(dns_server: FaultDnsServer):
    dns_server.add("huge.test", "A", *[f"10.1.{i // 250}.{i % 250 + 1}" for i in range(1000)])
    dns_server.fault("huge.test", "truncate")
    addresses = UdpDns(*dns_server.address, ipv6=False).lookup("huge.test")
    assert len(addresses) == 64
    assert addresses[0] == "10.1.0.1"


def test_udp_dns_ignores_wrong_id(dns_server: FaultDnsServer):
    dns_server.add("spoof.test", "A", "127.0.0.1")
    dns_server.fault("spoof.test", "bad_id")
    dns = CachingDns(UdpDns(*dns_server.address, ipv6=False))
    assert dns.lookup("spoof.test") == ["127.0.0.1"]
    assert POISON not in dns.lookup("spoof.test")


def test_udp_dns_ignores_wrong_question(dns_server: FaultDnsServer):
    dns_server.add("spoof.test", "A", "127.0.0.1")
    dns_server.fault("spoof.test", "bad_question")
    assert UdpDns(*dns_server.address, ipv6=False).lookup("spoof.test") == ["127.0.0.1"]


def test_udp_dns_only_spoofed_answers_time_out_and_cache_nothing(dns_server: FaultDnsServer):
    dns_server.add("spoof.test", "A", "127.0.0.1")
    dns_server.fault("spoof.test", "bad_id", then_answer=False)
    dns = CachingDns(UdpDns(*dns_server.address, timeout=0.3, ipv6=False), negative_ttl=0)
    with pytest.raises(UnknownHostError, match="ignoring 1 malformed or mismatched"):
        dns.lookup("spoof.test")
    assert dns.cache.get("spoof.test") is None and dns.cache.get_stale("spoof.test") is None


def test_udp_dns_malformed_packets_are_ignored(dns_server: FaultDnsServer):
    dns_server.add("junk.test", "A", "127.0.0.1")
    dns_server.fault("junk.test", "garbage", then_answer=True)
    assert UdpDns(*dns_server.address, ipv6=False).lookup("junk.test") == ["127.0.0.1"]
    dns_server.fault("junk.test", "garbage")
    with pytest.raises(UnknownHostError, match="malformed"):
        UdpDns(*dns_server.address, timeout=0.3, ipv6=False).lookup("junk.test")


def test_udp_dns_cut_off_packet(dns_server: FaultDnsServer):
    dns_server.add("short.test", "A", "127.0.0.1", "127.0.0.2")
    dns_server.fault("short.test", "short")
    with pytest.raises(UnknownHostError, match="malformed"):
        UdpDns(*dns_server.address, timeout=0.3, ipv6=False).lookup("short.test")


def test_udp_dns_follows_cname_in_answer(dns_server: FaultDnsServer):
    dns_server.add("alias.test", "CNAME", "app.test")
    assert UdpDns(*dns_server.address, ipv6=False).lookup("alias.test") == ["127.0.0.1", "127.0.0.2"]
    assert dns_server.count("app.test") == 0


def test_udp_dns_follows_cname_with_a_second_query(dns_server: FaultDnsServer):
    dns_server.add("ext.test", "CNAME", "elsewhere.test")
    dns_server.add("elsewhere.test", "A", "127.0.0.9")
    dns_server.fault("ext.test", "cname_only")
    assert UdpDns(*dns_server.address, ipv6=False).lookup_with_ttl("ext.test") == (["127.0.0.9"], 5)
    assert dns_server.count("elsewhere.test", "A") == 1


def test_udp_dns_cname_loop(dns_server: FaultDnsServer):
    dns_server.add("loop.test", "CNAME", "loop2.test")
    dns_server.add("loop2.test", "CNAME", "loop.test")
    with pytest.raises(UnknownHostError, match="CNAME loop"):
        UdpDns(*dns_server.address, ipv6=False).lookup("loop.test")


def test_udp_dns_no_server_listening():
    with FaultDnsServer() as srv:
        address = srv.address
    with pytest.raises(UnknownHostError):
        UdpDns(*address, timeout=0.5).lookup("app.test")


def test_udp_dns_bad_arguments():
    with pytest.raises(ValueError):
        UdpDns("dns.example")
    with pytest.raises(ValueError):
        UdpDns("127.0.0.1", port=0)
    with pytest.raises(ValueError):
        UdpDns("127.0.0.1", timeout=0)


def test_udp_dns_ip_literal_and_bad_name(dns_server: FaultDnsServer):
    dns = UdpDns(*dns_server.address)
    assert dns.lookup("127.0.0.3") == ["127.0.0.3"]
    with pytest.raises(ValueError):
        dns.lookup("bad name.test")
    assert dns_server.queries == []


def test_udp_dns_over_ipv6_loopback():
    with FaultDnsServer("::1") as srv:
        srv.add("app.test", "A", "127.0.0.1")
        assert UdpDns("::1", srv.address[1], ipv6=False).lookup("app.test") == ["127.0.0.1"]


# --------------------------------------------------------------------------- asyncio: alookup


def outcome(call, *args):
    """What a blocking call gave: ``("ok", result)`` or ``(exception type name, message)``."""
    try:
        return ("ok", call(*args))
    except Exception as exc:  # noqa: BLE001 - compared, not handled
        return (type(exc).__name__, str(exc))


async def aoutcome(call, *args):
    """:func:`outcome` for a coroutine function."""
    try:
        return ("ok", await call(*args))
    except Exception as exc:  # noqa: BLE001
        return (type(exc).__name__, str(exc))


async def same(dns, name, with_ttl=True):
    """The asyncio lookup's outcome, asserted equal to the blocking one's (asked first)."""
    if with_ttl:
        expected = outcome(dns.lookup_with_ttl, name)
        got = await aoutcome(dns.alookup_with_ttl, name)
    else:
        expected = outcome(dns.lookup, name)
        got = await aoutcome(dns.alookup, name)
    assert got == expected
    return got


class TcpScriptServer:
    """UDP answers every query truncated (TC); TCP then does what ``mode`` says, after reading the query:

    ``answer`` (the right answer, A 127.0.0.5), ``hold`` (never answer), ``eof`` (close),
    ``mismatch`` (an answer with another ID), ``flood`` (a 65,535-byte length, then ``flood`` bytes);
    ``closed``: the TCP port is bound but not listening (connects are refused)."""

    def __init__(self, mode="answer", flood=32 * 1024 * 1024):
        self.mode = mode
        self.flood = flood
        for _ in range(20):
            self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            self.udp.bind(("127.0.0.1", 0))
            self.port = self.udp.getsockname()[1]
            self.tcp = socket.socket()
            self.tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                self.tcp.bind(("127.0.0.1", self.port))
                break
            except OSError:
                self.udp.close()
                self.tcp.close()
        if mode != "closed":
            self.tcp.listen(16)
        self.address: tuple[str, int] = ("127.0.0.1", self.port)
        self.tcp_queries = 0
        self.held = []
        self._stop = threading.Event()
        serve = (self._serve_udp,) if mode == "closed" else (self._serve_udp, self._serve_tcp)
        self._threads = [threading.Thread(target=f, daemon=True) for f in serve]

    def __enter__(self) -> TcpScriptServer:
        for t in self._threads:
            t.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        for t in self._threads:
            t.join(10)
        for conn in self.held:
            conn.close()
        self.udp.close()
        self.tcp.close()

    def _serve_udp(self):
        self.udp.settimeout(0.05)
        while not self._stop.is_set():
            try:
                data, peer = self.udp.recvfrom(65535)
            except OSError:
                continue
            query = dns.message.from_wire(data)
            response = dns.message.make_response(query)
            response.flags |= dns.flags.TC
            self.udp.sendto(response.to_wire(), peer)

    def _serve_tcp(self):
        self.tcp.settimeout(0.05)
        while not self._stop.is_set():
            try:
                conn, _ = self.tcp.accept()
            except OSError:
                continue
            conn.settimeout(5)
            try:
                size = struct.unpack("!H", _recv_exact(conn, 2))[0]
                query = dns.message.from_wire(_recv_exact(conn, size))
            except (OSError, struct.error):
                conn.close()
                continue
            self.tcp_queries += 1
            if self.mode == "hold":
                self.held.append(conn)
                continue
            try:
                if self.mode == "answer" or self.mode == "mismatch":
                    response = dns.message.make_response(query)
                    if query.question[0].rdtype == 1:
                        response.answer.append(
                            dns.rrset.from_text(query.question[0].name, 5, "IN", "A", "127.0.0.5")
                        )
                    if self.mode == "mismatch":
                        response.id = (query.id + 1) % 65536
                    wire = response.to_wire()
                    conn.sendall(struct.pack("!H", len(wire)) + wire)
                elif self.mode == "flood":
                    conn.sendall(b"\xff\xff")
                    chunk = b"\0" * 65536
                    for _ in range(self.flood // len(chunk)):
                        conn.sendall(chunk)
            except OSError:
                pass
            conn.close()


def _recv_exact(conn, n):
    buf = b""
    while len(buf) < n:
        chunk = conn.recv(n - len(buf))
        if not chunk:
            raise OSError("closed")
        buf += chunk
    return buf


def test_async_udp_basic_order_and_ttl(aio, dns_server: FaultDnsServer):
    resolver = UdpDns(*dns_server.address, timeout=3)

    async def main():
        assert await same(resolver, "app.test") == ("ok", (["127.0.0.1", "127.0.0.2"], 5))
        assert await same(resolver, "dual.test", with_ttl=False) == ("ok", ["127.0.0.1", "::1"])
        assert await same(resolver, "v6.test", with_ttl=False) == ("ok", ["::1"])

    aio.run(main())
    # each lookup asked A and AAAA once
    assert dns_server.count("app.test", "A") == 2 and dns_server.count("app.test", "AAAA") == 2


def test_async_udp_ipv4_only(aio, dns_server: FaultDnsServer):
    resolver = UdpDns(*dns_server.address, ipv6=False)

    async def main():
        assert await resolver.alookup("dual.test") == ["127.0.0.1"]

    aio.run(main())
    assert dns_server.count("dual.test", "AAAA") == 0


def test_async_udp_queries_in_parallel(aio, dns_server: FaultDnsServer):
    dns_server.fault("app.test", "slow", delay=1.0)
    resolver = UdpDns(*dns_server.address, timeout=10)

    async def main():
        loop = asyncio.get_running_loop()
        started = loop.time()
        assert await resolver.alookup("app.test") == ["127.0.0.1", "127.0.0.2"]
        # one query after the other would take 2 s; a generous bound, not a speed assertion
        assert loop.time() - started < 1.9

    aio.run(main())


@pytest.mark.parametrize(
    ("fault", "reason"), [(None, "nx.test: NXDOMAIN"), ("servfail", "SERVFAIL"), ("refused", "REFUSED")]
)
def test_async_udp_error_rcodes(aio, dns_server: FaultDnsServer, fault, reason):
    name = "nx.test"
    if fault is not None:
        name = f"{fault}.test"
        dns_server.add(name, "A", "127.0.0.1")
        dns_server.fault(name, fault)
    resolver = UdpDns(*dns_server.address)

    async def main():
        kind, message = await same(resolver, name)
        assert kind == "UnknownHostError" and reason in message

    aio.run(main())


def test_async_udp_timeout(aio, dns_server: FaultDnsServer):
    dns_server.add("slow.test", "A", "127.0.0.1")
    dns_server.fault("slow.test", "drop")
    resolver = UdpDns(*dns_server.address, timeout=0.3)

    async def main():
        assert await same(resolver, "slow.test") == (
            "UnknownHostError",
            f"slow.test: timed out after 0.3 s (udp 127.0.0.1:{dns_server.address[1]}) (dns)",
        )

    aio.run(main())


def test_async_udp_truncated_answer_retries_over_tcp(aio, dns_server: FaultDnsServer):
    dns_server.add("tc.test", "A", "127.0.0.5")
    dns_server.fault("tc.test", "truncate")
    resolver = UdpDns(*dns_server.address)

    async def main():
        del dns_server.queries[:]
        assert await resolver.alookup_with_ttl("tc.test") == (["127.0.0.5"], 5)
        assert ("tcp", "tc.test", "A") in dns_server.queries
        assert await same(resolver, "tc.test") == ("ok", (["127.0.0.5"], 5))
        await wait_closed(dns_server.address[1])

    aio.run(main())


def test_async_udp_truncated_without_tcp_fallback(aio, dns_server: FaultDnsServer):
    dns_server.add("tc.test", "A", "127.0.0.5")
    dns_server.fault("tc.test", "truncate")
    resolver = UdpDns(*dns_server.address, tcp_fallback=False)

    async def main():
        kind, message = await same(resolver, "tc.test")
        assert kind == "UnknownHostError" and "truncated answer" in message

    aio.run(main())
    assert not any(q[0] == "tcp" for q in dns_server.queries)


def test_async_udp_huge_answer_over_tcp_is_capped(aio, dns_server: FaultDnsServer):
    dns_server.add("huge.test", "A", *[f"10.1.{i // 250}.{i % 250 + 1}" for i in range(1000)])
    dns_server.fault("huge.test", "truncate")
    resolver = UdpDns(*dns_server.address, ipv6=False)

    async def main():
        kind, (addresses, _) = await same(resolver, "huge.test")
        assert len(addresses) == 64 and addresses[0] == "10.1.0.1"

    aio.run(main())


def test_async_udp_ignores_spoofed_answers(aio, dns_server: FaultDnsServer):
    dns_server.add("spoof.test", "A", "127.0.0.1")
    dns_server.add("spoof2.test", "A", "127.0.0.1")
    dns_server.fault("spoof.test", "bad_id")
    dns_server.fault("spoof2.test", "bad_question")
    resolver = UdpDns(*dns_server.address, ipv6=False)

    async def main():
        assert await same(resolver, "spoof.test") == ("ok", (["127.0.0.1"], 5))
        assert await same(resolver, "spoof2.test") == ("ok", (["127.0.0.1"], 5))

    aio.run(main())


def test_async_udp_only_spoofed_answers_time_out(aio, dns_server: FaultDnsServer):
    dns_server.add("spoof.test", "A", "127.0.0.1")
    dns_server.fault("spoof.test", "bad_id", then_answer=False)
    resolver = UdpDns(*dns_server.address, timeout=0.3, ipv6=False)

    async def main():
        kind, message = await same(resolver, "spoof.test")
        assert kind == "UnknownHostError"
        assert "timed out after 0.3 s after ignoring 1 malformed or mismatched answer(s)" in message
        assert POISON not in message

    aio.run(main())


def test_async_udp_malformed_and_cut_off_packets(aio, dns_server: FaultDnsServer):
    dns_server.add("junk.test", "A", "127.0.0.1")
    dns_server.add("short.test", "A", "127.0.0.1", "127.0.0.2")
    dns_server.fault("short.test", "short")
    resolver = UdpDns(*dns_server.address, timeout=0.3, ipv6=False)

    async def main():
        dns_server.fault("junk.test", "garbage", then_answer=True)
        assert await same(resolver, "junk.test") == ("ok", (["127.0.0.1"], 5))
        dns_server.fault("junk.test", "garbage")
        kind, message = await same(resolver, "junk.test")
        assert kind == "UnknownHostError" and "malformed" in message
        kind, message = await same(resolver, "short.test")
        assert kind == "UnknownHostError" and "malformed" in message

    aio.run(main())


def test_async_udp_cname_chains(aio, dns_server: FaultDnsServer):
    dns_server.add("alias.test", "CNAME", "app.test")
    dns_server.add("ext.test", "CNAME", "elsewhere.test")
    dns_server.add("elsewhere.test", "A", "127.0.0.9")
    dns_server.fault("ext.test", "cname_only")
    dns_server.add("loop.test", "CNAME", "loop2.test")
    dns_server.add("loop2.test", "CNAME", "loop.test")
    resolver = UdpDns(*dns_server.address, ipv6=False)

    async def main():
        assert await same(resolver, "alias.test") == ("ok", (["127.0.0.1", "127.0.0.2"], 5))
        assert await same(resolver, "ext.test") == ("ok", (["127.0.0.9"], 5))
        kind, message = await same(resolver, "loop.test")
        assert kind == "UnknownHostError" and "CNAME loop" in message

    aio.run(main())
    assert dns_server.count("elsewhere.test", "A") == 2  # the second query, once per lookup


@pytest.mark.parametrize("ipv6", [True, False])
def test_async_udp_no_server_listening(aio, ipv6):
    with FaultDnsServer() as srv:
        address = srv.address
    resolver = UdpDns(*address, timeout=0.5, ipv6=ipv6)

    async def main():
        kind, message = await same(resolver, "app.test")
        assert kind == "UnknownHostError" and f"127.0.0.1:{address[1]}" in message
        await wait_closed(address[1])

    aio.run(main())


def test_async_udp_ip_literal_and_bad_name(aio, dns_server: FaultDnsServer):
    resolver = UdpDns(*dns_server.address)

    async def main():
        assert await same(resolver, "127.0.0.3") == ("ok", (["127.0.0.3"], None))
        assert await same(resolver, "[::1]", with_ttl=False) == ("ok", ["::1"])
        kind, message = await same(resolver, "bad name.test")
        assert kind == "ValueError" and "not allowed" in message

    aio.run(main())
    assert dns_server.queries == []


def test_async_udp_over_ipv6_loopback(aio):
    with FaultDnsServer("::1") as srv:
        srv.add("app.test", "A", "127.0.0.1")
        resolver = UdpDns("::1", srv.address[1], ipv6=False)

        async def main():
            assert await same(resolver, "app.test") == ("ok", (["127.0.0.1"], 5))

        aio.run(main())


def test_async_udp_tcp_answer(aio):
    with TcpScriptServer("answer") as server:
        resolver = UdpDns(*server.address, ipv6=False)

        async def main():
            assert await same(resolver, "tc.test") == ("ok", (["127.0.0.5"], 5))
            await wait_closed(server.port)

        aio.run(main())


def test_async_udp_tcp_timeout(aio):
    with TcpScriptServer("hold") as server:
        resolver = UdpDns(*server.address, timeout=0.5, ipv6=False)

        async def main():
            assert await same(resolver, "tc.test") == (
                "UnknownHostError",
                f"tc.test: timed out over TCP after 0.5 s (udp 127.0.0.1:{server.port}) (dns)",
            )
            await wait_closed(server.port)

        aio.run(main())


@pytest.mark.parametrize(("mode", "reason"), [("eof", "EOFError: EOF"), ("mismatch", "BadResponse")])
def test_async_udp_tcp_bad_answers(aio, mode, reason):
    with TcpScriptServer(mode) as server:
        resolver = UdpDns(*server.address, ipv6=False)

        async def main():
            kind, message = await same(resolver, "tc.test")
            assert kind == "UnknownHostError" and f"bad answer over TCP: {reason}" in message
            await wait_closed(server.port)

        aio.run(main())


def test_async_udp_tcp_refused(aio):
    with TcpScriptServer("closed") as server:
        resolver = UdpDns(*server.address, ipv6=False)

        async def main():
            assert await same(resolver, "tc.test") == (
                "UnknownHostError",
                f"tc.test: TCP to 127.0.0.1:{server.port} failed: Connection refused "
                f"(udp 127.0.0.1:{server.port}) (dns)",
            )

        aio.run(main())


def test_async_udp_tcp_flood_is_not_read_past_one_message(aio):
    """The server sends a 65,535-byte length and then 32 MiB: the lookup keeps one message's worth."""
    with TcpScriptServer("flood") as server:
        resolver = UdpDns(*server.address, timeout=10, ipv6=False)

        async def main():
            tracemalloc.start()
            try:
                with pytest.raises(UnknownHostError, match="bad answer over TCP"):
                    await resolver.alookup("tc.test")
                _, peak = tracemalloc.get_traced_memory()
            finally:
                tracemalloc.stop()
            assert peak < 4 * 1024 * 1024
            await wait_closed(server.port)

        aio.run(main())


def test_async_udp_cancel_while_waiting_for_udp(aio, dns_server: FaultDnsServer):
    dns_server.add("slow.test", "A", "127.0.0.1")
    dns_server.fault("slow.test", "drop")
    resolver = UdpDns(*dns_server.address, timeout=30)
    port = dns_server.address[1]

    async def main():
        task = asyncio.ensure_future(resolver.alookup("slow.test"))
        await wait_for(lambda: dns_server.count("slow.test") == 2, what="both queries at the server")
        assert client_sockets(port, "udp")  # the endpoint is open while the lookup waits
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await wait_closed(port)

    aio.run(main())


def test_async_udp_cancel_during_tcp_fallback(aio):
    with TcpScriptServer("hold") as server:
        resolver = UdpDns(*server.address, timeout=30)

        async def main():
            task = asyncio.ensure_future(resolver.alookup("tc.test"))
            await wait_for(lambda: server.tcp_queries >= 1, what="the query over TCP")
            assert client_sockets(server.port, "tcp")
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            await wait_closed(server.port)

        aio.run(main())


def test_async_udp_cancel_at_once(aio, dns_server: FaultDnsServer):
    """Cancelled before it ever ran, and right after it started: nothing open either way."""
    resolver = UdpDns(*dns_server.address, timeout=30)

    async def main():
        for spins in (0, 1, 2, 3):
            task = asyncio.ensure_future(resolver.alookup("app.test"))
            for _ in range(spins):
                await asyncio.sleep(0)
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass
            await wait_closed(dns_server.address[1])

    aio.run(main())


def test_async_udp_wait_for_timeout_closes_everything(aio, dns_server: FaultDnsServer):
    dns_server.add("slow.test", "A", "127.0.0.1")
    dns_server.fault("slow.test", "drop")
    resolver = UdpDns(*dns_server.address, timeout=30)

    async def main():
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(resolver.alookup("slow.test"), 0.2)
        await wait_closed(dns_server.address[1])

    aio.run(main())


def test_async_udp_many_lookups_at_once(aio, dns_server: FaultDnsServer):
    resolver = UdpDns(*dns_server.address, timeout=5)

    async def main():
        results = await asyncio.gather(*[resolver.alookup("app.test") for _ in range(50)])
        assert results == [["127.0.0.1", "127.0.0.2"]] * 50
        await wait_closed(dns_server.address[1])

    aio.run(main())
    assert dns_server.count("app.test", "A") == 50  # no cache here: every lookup asks


def test_async_udp_loop_keeps_running_while_waiting(aio, dns_server: FaultDnsServer):
    dns_server.fault("app.test", "slow", delay=0.5)
    resolver = UdpDns(*dns_server.address, timeout=5)

    async def main():
        ticks = 0
        task = asyncio.ensure_future(resolver.alookup("app.test"))
        while not task.done():
            ticks += 1
            await asyncio.sleep(0.01)
        assert task.result() == ["127.0.0.1", "127.0.0.2"]
        assert ticks > 5

    aio.run(main())


@pytest.mark.testbed
def test_async_udp_unbound_parity(aio, testbed: Testbed):
    resolver = UdpDns(*testbed.unbound, timeout=3)
    over_v6 = UdpDns("::1", testbed.unbound[1], timeout=3)

    async def main():
        assert await same(resolver, "app.test") == ("ok", (["127.0.0.1", "127.0.0.2"], 5))
        assert await same(resolver, "multi.test", with_ttl=False) == ("ok", ["127.0.0.3", "127.0.0.1"])
        assert await same(resolver, "failover.test", with_ttl=False) == ("ok", ["127.0.0.4", "127.0.0.1"])
        assert await same(resolver, "v6.test", with_ttl=False) == ("ok", ["::1"])
        assert await same(resolver, "dual.test", with_ttl=False) == ("ok", ["127.0.0.1", "::1"])
        assert await same(over_v6, "app.test", with_ttl=False) == ("ok", ["127.0.0.1", "127.0.0.2"])
        kind, message = await same(resolver, "nope.test")
        assert kind == "UnknownHostError" and "nope.test: NXDOMAIN" in message
        kind, message = await same(resolver, "example.com")
        assert kind == "UnknownHostError" and "REFUSED" in message

    aio.run(main())


@pytest.mark.testbed
def test_async_udp_unbound_nothing_listening(aio, testbed: Testbed):
    resolver = UdpDns(*testbed.refused, timeout=1)

    async def main():
        kind, _ = await same(resolver, "app.test")
        assert kind == "UnknownHostError"
        assert await resolver.alookup("127.0.0.9") == ["127.0.0.9"]

    aio.run(main())


def test_async_udp_blocking_and_asyncio_lookups_from_threads(aio, dns_server: FaultDnsServer):
    """A blocking lookup in a thread and asyncio lookups on the loop, at the same time."""
    resolver = UdpDns(*dns_server.address, timeout=5)
    results = []

    def blocking():
        for _ in range(5):
            results.append(resolver.lookup("app.test"))

    async def main():
        thread = threading.Thread(target=blocking)
        thread.start()
        got = await asyncio.gather(*[resolver.alookup("app.test") for _ in range(5)])
        while thread.is_alive():
            await asyncio.sleep(0.01)
        assert got == [["127.0.0.1", "127.0.0.2"]] * 5

    aio.run(main())
    assert results == [["127.0.0.1", "127.0.0.2"]] * 5
