"""DnsCache, IpBlacklist and CachingDns in both builds (compiled twin and pure twin)."""

from __future__ import annotations

import importlib
import socket
import threading
import time
import types

import pytest

from fastnet import _compat
from fastnet.dns import UdpDns
from fastnet.exceptions import UnknownHostError
from tests.support.dnsfaults import FaultDnsServer
from tests.support.twins import Twins


@pytest.fixture
def impl(twins: Twins) -> types.ModuleType:
    """The pure and the compiled twin of the DNS cache unit (DnsCache, IpBlacklist, CachingDns)."""
    return twins("fastnet.dns.cache")


class Upstream:
    """A resolver that counts calls and can be told to fail."""

    def __init__(self, answer=("127.0.0.1",), ttl=None, delay=0.0):
        self.answer = list(answer)
        self.ttl = ttl
        self.delay = delay
        self.calls = 0
        self.fail = None
        self.lock = threading.Lock()

    def lookup_with_ttl(self, host):
        with self.lock:
            self.calls += 1
        if self.delay:
            time.sleep(self.delay)
        if self.fail is not None:
            raise self.fail
        return list(self.answer), self.ttl

    def lookup(self, host):
        return self.lookup_with_ttl(host)[0]


def test_dns_cache_c_loaded():
    import fastnet.dns.cache as cache

    if _compat.NO_EXTENSIONS:
        assert cache.IMPLEMENTATION == "py"
        assert cache.DnsCache.__module__ == "fastnet.dns._cache_py"
    else:
        assert cache.IMPLEMENTATION == "c"
        assert cache.DnsCache.__module__ == "fastnet.dns._cache_c"
        assert cache.CachingDns.__module__ == "fastnet.dns._cache_c"
        assert importlib.import_module("fastnet.dns._cache_c").__file__.endswith((".so", ".pyd"))


def test_dns_cache_get_put(impl):
    cache = impl.DnsCache(max_entries=10, default_ttl=10.0)
    assert cache.get("app.test") is None
    cache.put("app.test", ["127.0.0.1", "127.0.0.2"])
    got = cache.get("app.test")
    assert got == ["127.0.0.1", "127.0.0.2"]
    got.append("mutated")
    assert cache.get("app.test") == ["127.0.0.1", "127.0.0.2"]
    assert "app.test" in cache and len(cache) == 1
    with pytest.raises(ValueError):
        cache.put("x.test", [])


def test_dns_cache_ttl_expiry(impl):
    cache = impl.DnsCache(default_ttl=10.0, stale_ttl=60.0)
    cache.put("app.test", ["127.0.0.1"], ttl=0.05)
    assert cache.get("app.test") == ["127.0.0.1"]
    time.sleep(0.08)
    assert cache.get("app.test") is None
    assert cache.get_stale("app.test") == ["127.0.0.1"]


def test_dns_cache_lru_bound(impl):
    cache = impl.DnsCache(max_entries=3)
    for name in ("a.test", "b.test", "c.test"):
        cache.put(name, ["127.0.0.1"])
    assert cache.get("a.test") is not None  # a is now the most recently used
    cache.put("d.test", ["127.0.0.1"])
    assert len(cache) == 3
    assert cache.get("b.test") is None
    assert cache.hosts() == ["c.test", "a.test", "d.test"]
    for i in range(100):
        cache.put(f"n{i}.test", ["127.0.0.1"])
    assert len(cache) == 3


def test_dns_cache_negative_entries(impl):
    cache = impl.DnsCache(negative_ttl=0.05, stale_ttl=0.0)
    cache.put_negative("nx.test", "nx.test: NXDOMAIN")
    assert cache.get("nx.test") is None
    assert cache.get_error("nx.test") == "nx.test: NXDOMAIN"
    time.sleep(0.08)
    assert cache.get_error("nx.test") is None


def test_dns_cache_negative_does_not_replace_stale_answer(impl):
    cache = impl.DnsCache(stale_ttl=60.0)
    cache.put("app.test", ["127.0.0.1"], ttl=0)
    cache.put_negative("app.test", "SERVFAIL")
    assert cache.get_error("app.test") is None
    assert cache.get_stale("app.test") == ["127.0.0.1"]


def test_dns_cache_rejects_bad_arguments(impl):
    with pytest.raises(ValueError):
        impl.DnsCache(max_entries=0)
    with pytest.raises(ValueError):
        impl.DnsCache(default_ttl=-1)


def test_ip_blacklist_threshold_and_reset(impl):
    bl = impl.IpBlacklist(threshold=5)
    results = [bl.record_failure("app.test", "127.0.0.4") for _ in range(6)]
    assert results == [False] * 5 + [True]
    assert bl.is_blacklisted("app.test", "127.0.0.4")
    assert not bl.is_blacklisted("other.test", "127.0.0.4")
    assert bl.filter("app.test", ["127.0.0.4", "127.0.0.1"]) == ["127.0.0.1"]
    assert bl.blacklisted("app.test") == ["127.0.0.4"]
    bl.record_success("app.test", "127.0.0.4")
    assert bl.failures("app.test", "127.0.0.4") == 0
    assert not bl.is_blacklisted("app.test", "127.0.0.4")


def test_ip_blacklist_filter_returns_input_when_clean(impl):
    bl = impl.IpBlacklist()
    ips = ["127.0.0.1"]
    assert bl.filter("app.test", ips) is ips


def test_ip_blacklist_clear(impl):
    bl = impl.IpBlacklist(threshold=0)
    bl.record_failure("a.test", "127.0.0.4")
    bl.record_failure("b.test", "127.0.0.4")
    bl.clear("a.test")
    assert not bl.is_blacklisted("a.test", "127.0.0.4")
    assert bl.is_blacklisted("b.test", "127.0.0.4")
    bl.clear()
    assert len(bl) == 0


def test_ip_blacklist_bounded_hosts(impl):
    bl = impl.IpBlacklist(threshold=0, max_hosts=10)
    for i in range(50):
        bl.record_failure(f"h{i}.test", "127.0.0.4")
    assert len(bl) == 10
    assert bl.is_blacklisted("h49.test", "127.0.0.4")


def test_ip_blacklist_hooks_from_real_refused_connects(impl):
    """Connects refused by the kernel feed the blacklist exactly as the route layer will."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    port = listener.getsockname()[1]
    bl = impl.IpBlacklist(threshold=5)
    try:
        for _ in range(6):
            with pytest.raises(ConnectionRefusedError) as info:
                socket.create_connection(("127.0.0.4", port), timeout=2).close()
            bl.connect_failed("app.test", "127.0.0.4", info.value)
        assert bl.filter("app.test", ["127.0.0.4", "127.0.0.1"]) == ["127.0.0.1"]
        with socket.create_connection(("127.0.0.1", port), timeout=2):
            bl.connected("app.test", "127.0.0.1")
        assert bl.failures("app.test", "127.0.0.1") == 0
    finally:
        listener.close()


def test_caching_dns_hit_and_miss(impl):
    upstream = Upstream(["127.0.0.1", "::1"])
    dns = impl.CachingDns(upstream, ttl=10.0)
    assert dns.lookup("app.test") == ["127.0.0.1", "::1"]
    assert dns.lookup("app.test") == ["127.0.0.1", "::1"]
    assert upstream.calls == 1
    dns.invalidate("app.test")
    dns.lookup("app.test")
    assert upstream.calls == 2


def test_caching_dns_accepts_a_function(impl):
    dns = impl.CachingDns(lambda host: ["127.0.0.1"])
    assert dns.lookup("app.test") == ["127.0.0.1"]
    with pytest.raises(TypeError):
        impl.CachingDns(None)


def test_caching_dns_ip_literals_skip_dns(impl):
    upstream = Upstream()
    dns = impl.CachingDns(upstream)
    assert dns.lookup("10.1.2.3") == ["10.1.2.3"]
    assert dns.lookup("::1") == ["::1"]
    assert upstream.calls == 0


def test_caching_dns_bad_names_are_value_errors_and_not_cached(impl):
    upstream = Upstream()
    dns = impl.CachingDns(upstream)
    for _ in range(2):
        with pytest.raises(ValueError):
            dns.lookup("bad..test")
    assert upstream.calls == 0
    assert len(dns.cache) == 0


def test_caching_dns_honours_record_ttl(impl):
    upstream = Upstream(ttl=0.05)
    dns = impl.CachingDns(upstream, ttl=60.0)
    dns.lookup("app.test")
    dns.lookup("app.test")
    assert upstream.calls == 1
    time.sleep(0.08)
    dns.lookup("app.test")
    assert upstream.calls == 2


def test_caching_dns_clamps_ttl(impl):
    upstream = Upstream(ttl=0)
    dns = impl.CachingDns(upstream, min_ttl=30.0)
    dns.lookup("app.test")
    dns.lookup("app.test")
    assert upstream.calls == 1


def test_caching_dns_default_ttl_when_unknown(impl):
    upstream = Upstream(ttl=None)
    dns = impl.CachingDns(upstream, ttl=0.05)
    dns.lookup("app.test")
    time.sleep(0.08)
    dns.lookup("app.test")
    assert upstream.calls == 2


def test_caching_dns_negative_caching(impl):
    upstream = Upstream()
    upstream.fail = UnknownHostError("nx.test: NXDOMAIN")
    dns = impl.CachingDns(upstream, negative_ttl=5.0)
    for _ in range(3):
        with pytest.raises(UnknownHostError, match="NXDOMAIN"):
            dns.lookup("nx.test")
    assert upstream.calls == 1


def test_caching_dns_negative_hit_reads_like_the_first_failure(impl):
    class Failing:
        def lookup(self, host):
            try:
                raise OSError(-2, "Name or service not known")
            except OSError as exc:
                raise UnknownHostError(f"{host}: {exc.strerror}", phase="dns") from exc

    dns = impl.CachingDns(Failing(), negative_ttl=5.0)
    with pytest.raises(UnknownHostError) as first:
        dns.lookup("nx.test")
    with pytest.raises(UnknownHostError) as second:
        dns.lookup("nx.test")  # answered by the negative entry
    assert str(first.value) == str(second.value) == "nx.test: Name or service not known (dns)"
    assert second.value.message == first.value.message and second.value.phase == "dns"
    cause = second.value.__cause__
    assert type(cause) is OSError and cause.args == first.value.__cause__.args
    assert cause is not first.value.__cause__ and cause.__traceback__ is None
    assert dns.cache.get_error("nx.test") == "nx.test: Name or service not known"


def test_caching_dns_negative_hit_without_a_cause(impl):
    upstream = Upstream()
    upstream.fail = UnknownHostError("nx.test: NXDOMAIN", phase="dns")
    dns = impl.CachingDns(upstream, negative_ttl=5.0)
    for _ in range(2):
        with pytest.raises(UnknownHostError) as info:
            dns.lookup("nx.test")
        assert str(info.value) == "nx.test: NXDOMAIN (dns)" and info.value.__cause__ is None


def test_caching_dns_stale_if_error(impl):
    upstream = Upstream(["127.0.0.1"], ttl=0.05)
    dns = impl.CachingDns(upstream, stale_if_error=60.0)
    assert dns.lookup("app.test") == ["127.0.0.1"]
    time.sleep(0.08)
    upstream.fail = UnknownHostError("app.test: SERVFAIL")
    assert dns.lookup("app.test") == ["127.0.0.1"]
    upstream.fail = OSError("network down")
    assert dns.lookup("app.test") == ["127.0.0.1"]
    assert upstream.calls == 3


def test_caching_dns_stale_if_error_off(impl):
    upstream = Upstream(["127.0.0.1"], ttl=0.05)
    dns = impl.CachingDns(upstream, stale_if_error=0.0)
    dns.lookup("app.test")
    time.sleep(0.08)
    upstream.fail = UnknownHostError("app.test: SERVFAIL")
    with pytest.raises(UnknownHostError, match="SERVFAIL"):
        dns.lookup("app.test")


def test_caching_dns_single_flight_across_threads(impl):
    upstream = Upstream(delay=0.2)
    dns = impl.CachingDns(upstream)
    results = []
    barrier = threading.Barrier(32, timeout=10)

    def worker():
        barrier.wait()
        results.append(dns.lookup("app.test"))

    threads = [threading.Thread(target=worker) for _ in range(32)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert results == [["127.0.0.1"]] * 32
    assert upstream.calls == 1


def test_caching_dns_single_flight_shares_failures(impl):
    upstream = Upstream(delay=0.2)
    upstream.fail = UnknownHostError("nx.test: NXDOMAIN")
    dns = impl.CachingDns(upstream, negative_ttl=0.0)
    errors = []
    barrier = threading.Barrier(8, timeout=10)

    def worker():
        barrier.wait()
        try:
            dns.lookup("nx.test")
        except UnknownHostError as exc:
            errors.append(str(exc))

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert len(errors) == 8 and all("NXDOMAIN" in e for e in errors)
    assert upstream.calls == 1


def test_caching_dns_single_flight_one_query_at_the_server(impl):
    """32 threads miss at once: one A and one AAAA query reach the DNS server."""
    with FaultDnsServer() as server:
        server.add("app.test", "A", "127.0.0.1", "127.0.0.2")
        server.fault("app.test", "slow", delay=0.3)
        dns = impl.CachingDns(UdpDns(*server.address, timeout=5))
        results = []
        barrier = threading.Barrier(32, timeout=10)

        def worker():
            barrier.wait()
            results.append(dns.lookup("app.test"))

        threads = [threading.Thread(target=worker) for _ in range(32)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(15)
        assert results == [["127.0.0.1", "127.0.0.2"]] * 32
        assert server.count("app.test", "A") == 1
        assert server.count("app.test", "AAAA") == 1


def test_caching_dns_blacklist_drops_cached_answer(impl):
    upstream = Upstream(["127.0.0.4", "127.0.0.1"])
    bl = impl.IpBlacklist(threshold=5)
    dns = impl.CachingDns(upstream, blacklist=bl)
    error = ConnectionRefusedError(111, "Connection refused")
    for _ in range(5):
        assert dns.lookup("failover.test") == ["127.0.0.4", "127.0.0.1"]
        dns.connect_failed("failover.test", "127.0.0.4", error)
    dns.connect_failed("failover.test", "127.0.0.4", error)
    assert dns.lookup("failover.test") == ["127.0.0.1"]
    assert upstream.calls == 2
    dns.connected("failover.test", "127.0.0.4")
    assert not bl.is_blacklisted("failover.test", "127.0.0.4")


def test_caching_dns_forwards_hooks_to_inner(impl):
    seen = []

    class Inner:
        def lookup(self, host):
            return ["127.0.0.1"]

        def connect_failed(self, host, ip, error):
            seen.append(("failed", host, ip))

        def connected(self, host, ip):
            seen.append(("ok", host, ip))

    dns = impl.CachingDns(Inner())
    dns.connect_failed("app.test", "127.0.0.1", OSError())
    dns.connected("app.test", "127.0.0.1")
    assert seen == [("failed", "app.test", "127.0.0.1"), ("ok", "app.test", "127.0.0.1")]


def test_caching_dns_returns_fresh_lists(impl):
    dns = impl.CachingDns(lambda host: ["127.0.0.1"])
    first = dns.lookup("app.test")
    first.clear()
    assert dns.lookup("app.test") == ["127.0.0.1"]
