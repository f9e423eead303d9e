"""fastnet.dns against the real servers of the testbed: unbound (UDP/TCP) and dnsdist (DoH) in front of it."""

from __future__ import annotations

import socket
import time

import pytest

from fastnet.client import Client
from fastnet.dns import CachingDns, ChainDns, DohDns, IpBlacklist, UdpDns, resilient
from fastnet.exceptions import UnknownHostError
from tests.support.testbed import Testbed

pytestmark = pytest.mark.testbed


def _no_system(host):
    """Stands in for SystemDns, which would ask a resolver off loopback for *.test names."""
    raise UnknownHostError(f"{host}: system resolver unavailable (test stand-in)")


def _connect(ip, port):
    with socket.create_connection((ip, port), timeout=3):
        pass


@pytest.fixture
def udp(testbed: Testbed):
    return UdpDns(*testbed.unbound, timeout=3)


@pytest.fixture(params=["GET", "POST"])
def doh(request, testbed: Testbed):
    with DohDns(testbed.doh_url, method=request.param, verify=testbed.ca_path, timeout=5) as resolver:
        yield resolver


def test_dns_udp_unbound_records_in_order(udp):
    assert udp.lookup_with_ttl("app.test") == (["127.0.0.1", "127.0.0.2"], 5)
    assert udp.lookup("multi.test") == ["127.0.0.3", "127.0.0.1"]
    assert udp.lookup("failover.test") == ["127.0.0.4", "127.0.0.1"]


def test_dns_udp_unbound_ipv6_answers(udp):
    assert udp.lookup("v6.test") == ["::1"]
    assert udp.lookup("dual.test") == ["127.0.0.1", "::1"]


def test_dns_udp_unbound_over_ipv6_transport(testbed: Testbed):
    assert UdpDns("::1", testbed.unbound[1], timeout=3).lookup("app.test") == ["127.0.0.1", "127.0.0.2"]


def test_dns_udp_unbound_nxdomain_and_refused(udp):
    with pytest.raises(UnknownHostError, match="nope.test: NXDOMAIN"):
        udp.lookup("nope.test")
    with pytest.raises(UnknownHostError, match="REFUSED"):
        udp.lookup("example.com")


def test_dns_udp_ip_literal_skips_server(testbed: Testbed):
    assert UdpDns(*testbed.refused, timeout=1).lookup("127.0.0.9") == ["127.0.0.9"]


def test_dns_udp_nothing_listening(testbed: Testbed):
    with pytest.raises(UnknownHostError):
        UdpDns(*testbed.refused, timeout=1).lookup("app.test")


def test_dns_cache_ttl_expiry_from_record_ttl(udp):
    dns = CachingDns(udp, ttl=60.0)
    assert dns.lookup("ttl1.test") == ["127.0.0.1"]
    assert dns.cache.get("ttl1.test") == ["127.0.0.1"]
    time.sleep(1.2)
    assert dns.cache.get("ttl1.test") is None
    assert dns.lookup("ttl1.test") == ["127.0.0.1"]


def test_dns_doh_dns_message(doh):
    assert doh.lookup_with_ttl("app.test") == (["127.0.0.1", "127.0.0.2"], 5)
    assert doh.lookup("multi.test") == ["127.0.0.3", "127.0.0.1"]
    assert doh.lookup("dual.test") == ["127.0.0.1", "::1"]
    assert doh.lookup("v6.test") == ["::1"]
    with pytest.raises(UnknownHostError, match="NXDOMAIN"):
        doh.lookup("nope.test")


def test_dns_doh_hostname_url_uses_bootstrap(testbed: Testbed):
    url = testbed.doh_url.replace("127.0.0.1", "doh.test")
    with DohDns(url, bootstrap=["127.0.0.1"], verify=testbed.ca_path, timeout=5) as doh:
        assert doh.lookup("app.test") == ["127.0.0.1", "127.0.0.2"]
        assert doh.lookup("multi.test") == ["127.0.0.3", "127.0.0.1"]


def test_dns_doh_untrusted_certificate_is_unknown_host(testbed: Testbed):
    with DohDns(testbed.doh_url, timeout=5) as doh:  # the system trust store does not know the test CA
        with pytest.raises(UnknownHostError, match="DoH request failed"):
            doh.lookup("app.test")


def test_dns_seed_chain_miss_falls_to_udp_then_doh(testbed: Testbed):
    asked = []

    def system(host):
        asked.append("system")
        return _no_system(host)

    broken_udp = UdpDns(*testbed.refused, timeout=1)
    doh = DohDns(testbed.doh_url, verify=testbed.ca_path, timeout=5)
    try:
        dns = resilient(broken_udp, doh, system=system)
        assert dns.lookup("multi.test") == ["127.0.0.3", "127.0.0.1"]
        assert asked == ["system"]
        assert dns.lookup("multi.test") == ["127.0.0.3", "127.0.0.1"]  # cache hit: nobody asked again
        assert asked == ["system"]
    finally:
        doh.close()


def test_dns_seed_chain_udp_answers_before_doh(testbed: Testbed):
    class NeverDoh:
        def lookup(self, host):
            raise AssertionError("DoH must not be asked when UDP answered")

    dns = resilient(UdpDns(*testbed.unbound, timeout=3), NeverDoh(), system=_no_system)
    assert dns.lookup("app.test") == ["127.0.0.1", "127.0.0.2"]


def test_dns_blacklist_growth_from_real_connect_failures(testbed: Testbed):
    """failover.test = 127.0.0.4 (refused) + 127.0.0.1 (nginx): after 6 failures .4 is skipped."""
    dns = resilient(UdpDns(*testbed.unbound, timeout=3), system=_no_system)
    port = testbed.http_port
    failures = 0
    for _ in range(10):
        addresses = dns.lookup("failover.test")
        if addresses[0] != "127.0.0.4":
            break
        for ip in addresses:  # what the route layer does, hooks included
            try:
                _connect(ip, port)
            except OSError as exc:
                failures += 1
                dns.connect_failed("failover.test", ip, exc)
            else:
                dns.connected("failover.test", ip)
                break
    assert failures == 6
    assert dns.lookup("failover.test") == ["127.0.0.1"]
    # a success resets the count: the next resolution includes the address again
    dns.connected("failover.test", "127.0.0.4")
    dns.invalidate("failover.test")
    assert dns.lookup("failover.test") == ["127.0.0.4", "127.0.0.1"]


def test_dns_total_failure_clears_blacklist_and_returns_collected(testbed: Testbed):
    blacklist = IpBlacklist(threshold=5)
    chain = ChainDns([_no_system, UdpDns(*testbed.unbound, timeout=3)], blacklist=blacklist)
    for ip, port in (("127.0.0.4", testbed.http_port), ("127.0.0.1", testbed.refused[1])):
        for _ in range(6):
            with pytest.raises(OSError) as info:
                _connect(ip, port)
            chain.connect_failed("failover.test", ip, info.value)
    assert sorted(blacklist.blacklisted("failover.test")) == ["127.0.0.1", "127.0.0.4"]
    assert chain.lookup("failover.test") == ["127.0.0.4", "127.0.0.1"]
    assert blacklist.blacklisted("failover.test") == []


def test_dns_client_get_through_caching_udp(testbed: Testbed):
    dns = CachingDns(UdpDns(*testbed.unbound, timeout=3))
    client = Client(dns=dns, connect_timeout=5, read_timeout=5)
    try:
        response = client.get(f"http://multi.test:{testbed.http_port}/whoami")
        assert response.status_code == 200
        assert b"addr=127.0.0.3" in response.content
    finally:
        client.close()
