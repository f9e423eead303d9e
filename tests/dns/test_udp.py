"""UdpDns against the scripted fault server (tests/support/dnsfaults.py): the faults unbound cannot make."""

from __future__ import annotations

import time

import pytest

from fastnet.dns import CachingDns, UdpDns
from fastnet.exceptions import UnknownHostError
from tests.support.dnsfaults import POISON, FaultDnsServer


@pytest.fixture
def dns_server():
    """The scripted DNS server (``dnsfaults``) with the names most tests ask for."""
    with FaultDnsServer() as srv:
        srv.add("app.test", "A", "127.0.0.1", "127.0.0.2")
        srv.add("dual.test", "A", "127.0.0.1")
        srv.add("dual.test", "AAAA", "::1")
        srv.add("v6.test", "AAAA", "::1")
        yield srv


def test_udp_dns_basic_order_and_ttl(dns_server):
    dns = UdpDns(*dns_server.address, timeout=3)
    assert dns.lookup_with_ttl("app.test") == (["127.0.0.1", "127.0.0.2"], 5)
    assert dns.lookup("dual.test") == ["127.0.0.1", "::1"]
    assert dns.lookup("v6.test") == ["::1"]
    assert dns_server.count("app.test", "A") == 1 and dns_server.count("app.test", "AAAA") == 1


def test_udp_dns_ipv4_only(dns_server):
    dns = UdpDns(*dns_server.address, ipv6=False)
    assert dns.lookup("dual.test") == ["127.0.0.1"]
    assert dns_server.count("dual.test", "AAAA") == 0


def test_udp_dns_queries_in_parallel(dns_server):
    dns_server.fault("app.test", "slow", delay=0.4)
    dns = UdpDns(*dns_server.address, timeout=3)
    started = time.monotonic()
    assert dns.lookup("app.test") == ["127.0.0.1", "127.0.0.2"]
    # sequential queries would take 0.8 s; generous bound, not a speed assertion
    assert time.monotonic() - started < 0.75


def test_udp_dns_nxdomain(dns_server):
    with pytest.raises(UnknownHostError, match="nx.test: NXDOMAIN"):
        UdpDns(*dns_server.address).lookup("nx.test")


def test_udp_dns_servfail(dns_server):
    dns_server.add("servfail.test", "A", "127.0.0.1")
    dns_server.fault("servfail.test", "servfail")
    with pytest.raises(UnknownHostError, match="SERVFAIL"):
        UdpDns(*dns_server.address).lookup("servfail.test")


def test_udp_dns_timeout(dns_server):
    dns_server.add("slow.test", "A", "127.0.0.1")
    dns_server.fault("slow.test", "slow", delay=2.0)
    with pytest.raises(UnknownHostError, match="timed out after 0.3 s"):
        UdpDns(*dns_server.address, timeout=0.3).lookup("slow.test")


def test_udp_dns_truncated_answer_retries_over_tcp(dns_server):
    dns_server.add("tc.test", "A", "127.0.0.5")
    dns_server.fault("tc.test", "truncate")
    assert UdpDns(*dns_server.address).lookup("tc.test") == ["127.0.0.5"]
    assert ("tcp", "tc.test", "A") in dns_server.queries


def test_udp_dns_truncated_without_tcp_fallback(dns_server):
    dns_server.add("tc.test", "A", "127.0.0.5")
    dns_server.fault("tc.test", "truncate")
    with pytest.raises(UnknownHostError, match="truncated"):
        UdpDns(*dns_server.address, tcp_fallback=False).lookup("tc.test")


def test_udp_dns_huge_answer_over_tcp_is_capped(dns_server):
    dns_server.add("huge.test", "A", *[f"10.1.{i // 250}.{i % 250 + 1}" for i in range(1000)])
    dns_server.fault("huge.test", "truncate")
    addresses = UdpDns(*dns_server.address, ipv6=False).lookup("huge.test")
    assert len(addresses) == 64
    assert addresses[0] == "10.1.0.1"


def test_udp_dns_ignores_wrong_id(dns_server):
    dns_server.add("spoof.test", "A", "127.0.0.1")
    dns_server.fault("spoof.test", "bad_id")
    dns = CachingDns(UdpDns(*dns_server.address, ipv6=False))
    assert dns.lookup("spoof.test") == ["127.0.0.1"]
    assert POISON not in dns.lookup("spoof.test")


def test_udp_dns_ignores_wrong_question(dns_server):
    dns_server.add("spoof.test", "A", "127.0.0.1")
    dns_server.fault("spoof.test", "bad_question")
    assert UdpDns(*dns_server.address, ipv6=False).lookup("spoof.test") == ["127.0.0.1"]


def test_udp_dns_only_spoofed_answers_time_out_and_cache_nothing(dns_server):
    dns_server.add("spoof.test", "A", "127.0.0.1")
    dns_server.fault("spoof.test", "bad_id", then_answer=False)
    dns = CachingDns(UdpDns(*dns_server.address, timeout=0.3, ipv6=False), negative_ttl=0)
    with pytest.raises(UnknownHostError, match="ignoring 1 malformed or mismatched"):
        dns.lookup("spoof.test")
    assert dns.cache.get("spoof.test") is None and dns.cache.get_stale("spoof.test") is None


def test_udp_dns_malformed_packets_are_ignored(dns_server):
    dns_server.add("junk.test", "A", "127.0.0.1")
    dns_server.fault("junk.test", "garbage", then_answer=True)
    assert UdpDns(*dns_server.address, ipv6=False).lookup("junk.test") == ["127.0.0.1"]
    dns_server.fault("junk.test", "garbage")
    with pytest.raises(UnknownHostError, match="malformed"):
        UdpDns(*dns_server.address, timeout=0.3, ipv6=False).lookup("junk.test")


def test_udp_dns_cut_off_packet(dns_server):
    dns_server.add("short.test", "A", "127.0.0.1", "127.0.0.2")
    dns_server.fault("short.test", "short")
    with pytest.raises(UnknownHostError, match="malformed"):
        UdpDns(*dns_server.address, timeout=0.3, ipv6=False).lookup("short.test")


def test_udp_dns_follows_cname_in_answer(dns_server):
    dns_server.add("alias.test", "CNAME", "app.test")
    assert UdpDns(*dns_server.address, ipv6=False).lookup("alias.test") == ["127.0.0.1", "127.0.0.2"]
    assert dns_server.count("app.test") == 0


def test_udp_dns_follows_cname_with_a_second_query(dns_server):
    dns_server.add("ext.test", "CNAME", "elsewhere.test")
    dns_server.add("elsewhere.test", "A", "127.0.0.9")
    dns_server.fault("ext.test", "cname_only")
    assert UdpDns(*dns_server.address, ipv6=False).lookup_with_ttl("ext.test") == (["127.0.0.9"], 5)
    assert dns_server.count("elsewhere.test", "A") == 1


def test_udp_dns_cname_loop(dns_server):
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


def test_udp_dns_ip_literal_and_bad_name(dns_server):
    dns = UdpDns(*dns_server.address)
    assert dns.lookup("127.0.0.3") == ["127.0.0.3"]
    with pytest.raises(ValueError):
        dns.lookup("bad name.test")
    assert dns_server.queries == []


def test_udp_dns_over_ipv6_loopback():
    with FaultDnsServer("::1") as srv:
        srv.add("app.test", "A", "127.0.0.1")
        assert UdpDns("::1", srv.address[1], ipv6=False).lookup("app.test") == ["127.0.0.1"]
