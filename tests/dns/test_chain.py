"""ChainDns (resolvers asked in order, blacklisted answers skipped), RESILIENT and default_dns."""

from __future__ import annotations

import socket

import pytest

import fastnet.dns
from fastnet.dns import RESILIENT, CachingDns, ChainDns, IpBlacklist, SystemDns, default_dns, resilient
from fastnet.exceptions import UnknownHostError


class Recorder:
    def __init__(self, name, answer=None, error=None):
        self.name = name
        self.answer = answer
        self.error = error
        self.calls = []

    def lookup(self, host):
        self.calls.append(host)
        if self.error is not None:
            raise self.error
        return list(self.answer)

    def __repr__(self):
        return self.name


def test_chain_first_non_empty_answer_wins():
    a = Recorder("a", error=UnknownHostError("a failed"))
    b = Recorder("b", answer=["127.0.0.2"])
    c = Recorder("c", answer=["127.0.0.3"])
    assert ChainDns([a, b, c]).lookup("App.Test") == ["127.0.0.2"]
    assert a.calls == ["app.test"] and b.calls == ["app.test"] and c.calls == []


def test_chain_skips_broken_resolvers_of_any_kind():
    def crash(host):
        raise RuntimeError("bug")

    assert ChainDns([crash, lambda host: ["127.0.0.1"]]).lookup("app.test") == ["127.0.0.1"]


def test_chain_blacklisted_answers_fall_through():
    bl = IpBlacklist(threshold=0)
    bl.record_failure("app.test", "127.0.0.4")
    a = Recorder("a", answer=["127.0.0.4"])
    b = Recorder("b", answer=["127.0.0.4", "127.0.0.1"])
    assert ChainDns([a, b], blacklist=bl).lookup("app.test") == ["127.0.0.1"]


def test_chain_total_failure_clears_blacklist_and_returns_collected():
    bl = IpBlacklist(threshold=0)
    bl.record_failure("app.test", "127.0.0.4")
    bl.record_failure("app.test", "127.0.0.5")
    bl.record_failure("other.test", "127.0.0.4")
    a = Recorder("a", answer=["127.0.0.4"])
    b = Recorder("b", error=UnknownHostError("b failed"))
    c = Recorder("c", answer=["127.0.0.5", "127.0.0.4"])
    assert ChainDns([a, b, c], blacklist=bl).lookup("app.test") == ["127.0.0.4", "127.0.0.5"]
    assert bl.blacklisted("app.test") == []
    assert bl.blacklisted("other.test") == ["127.0.0.4"]


def test_chain_nothing_found_lists_every_failure():
    a = Recorder("first", error=UnknownHostError("nx.test: NXDOMAIN"))
    b = Recorder("second", answer=[])
    c = Recorder("third", error=OSError("network unreachable"))
    with pytest.raises(UnknownHostError) as info:
        ChainDns([a, b, c]).lookup("nx.test")
    text = str(info.value)
    assert "first: nx.test: NXDOMAIN" in text
    assert "second: no addresses" in text
    assert "third: network unreachable" in text


def test_chain_failure_is_one_sentence():
    a = Recorder("first", error=UnknownHostError("nx.test: NXDOMAIN", phase="dns"))
    b = Recorder("second", error=UnknownHostError("nx.test: SERVFAIL", phase="dns"))
    with pytest.raises(UnknownHostError) as info:
        ChainDns([a, b]).lookup("nx.test")
    assert (
        str(info.value)
        == "Unable to resolve nx.test: first: nx.test: NXDOMAIN; second: nx.test: SERVFAIL (dns)"
    )


def test_chain_ip_literals_skip_resolvers():
    a = Recorder("a", answer=["10.0.0.1"])
    assert ChainDns([a]).lookup("::1") == ["::1"]
    assert a.calls == []


def test_chain_bad_names_raise_value_error():
    with pytest.raises(ValueError):
        ChainDns([lambda host: ["127.0.0.1"]]).lookup("-" * 64 + ".test")
    with pytest.raises(ValueError):
        ChainDns([])


def test_chain_reports_winning_ttl():
    class WithTtl:
        def lookup_with_ttl(self, host):
            return ["127.0.0.1"], 7

        def lookup(self, host):
            return ["127.0.0.1"]

    assert ChainDns([WithTtl()]).lookup_with_ttl("app.test") == (["127.0.0.1"], 7)


def test_chain_hooks_feed_blacklist_from_real_refused_connects():
    """failover.test's first address refuses: after 6 failures it is no longer returned."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    port = listener.getsockname()[1]
    dns = ChainDns([lambda host: ["127.0.0.4", "127.0.0.1"]], blacklist=IpBlacklist(threshold=5))
    try:
        rounds = 0
        for _ in range(10):
            addresses = dns.lookup("failover.test")
            if addresses[0] != "127.0.0.4":
                break
            rounds += 1
            for ip in addresses:  # the route layer: try in order, report each outcome
                try:
                    socket.create_connection((ip, port), timeout=2).close()
                except OSError as exc:
                    dns.connect_failed("failover.test", ip, exc)
                else:
                    dns.connected("failover.test", ip)
                    break
        assert rounds == 6
        assert dns.lookup("failover.test") == ["127.0.0.1"]
        # a success resets the count
        dns.connected("failover.test", "127.0.0.4")
        assert dns.lookup("failover.test") == ["127.0.0.4", "127.0.0.1"]
    finally:
        listener.close()


def test_resilient_seed_chain_cache_hit_then_fallbacks():
    system = Recorder("system", error=UnknownHostError("system: no network"))
    udp = Recorder("udp", error=UnknownHostError("udp: timed out"))
    doh = Recorder("doh", answer=["127.0.0.1"])
    dns = resilient(udp, doh, system=system)
    assert isinstance(dns, CachingDns)
    assert dns.lookup("app.test") == ["127.0.0.1"]
    assert (len(system.calls), len(udp.calls), len(doh.calls)) == (1, 1, 1)
    assert dns.lookup("app.test") == ["127.0.0.1"]  # cache hit
    assert (len(system.calls), len(udp.calls), len(doh.calls)) == (1, 1, 1)


def test_resilient_blacklist_through_cache():
    dns = resilient(system=lambda host: ["127.0.0.4", "127.0.0.1"])
    error = ConnectionRefusedError()
    for _ in range(6):
        dns.connect_failed("failover.test", "127.0.0.4", error)
    assert dns.lookup("failover.test") == ["127.0.0.1"]
    dns.connected("failover.test", "127.0.0.4")
    dns.invalidate("failover.test")
    assert dns.lookup("failover.test") == ["127.0.0.4", "127.0.0.1"]


def test_resilient_constant_is_a_ready_dns_and_a_factory():
    assert RESILIENT.lookup("127.0.0.1") == ["127.0.0.1"]
    assert set(RESILIENT.lookup("localhost")) <= {"127.0.0.1", "::1"}
    built = RESILIENT(lambda host: ["127.0.0.1"], system=lambda host: [])
    assert built.lookup("app.test") == ["127.0.0.1"]
    assert repr(RESILIENT) == "fastnet.dns.RESILIENT"


def test_default_dns_is_system_behind_ten_second_cache():
    dns = default_dns()
    assert isinstance(dns, CachingDns)
    assert isinstance(dns.inner, SystemDns)
    assert dns.cache.default_ttl == 10.0
    assert set(dns.lookup("localhost")) <= {"127.0.0.1", "::1"}
    assert default_dns() is not dns


def test_package_exports():
    for name in fastnet.dns.__all__:
        assert hasattr(fastnet.dns, name), name
