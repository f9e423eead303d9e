"""DnsCache, IpBlacklist and CachingDns in both builds (compiled twin and pure twin).

CachingDns.alookup in both twins, on both loops: the cache shared with lookup, single-flight counted
at a real DNS server (tests/support/dnsfaults.py), cancelled leaders and followers, blocking and asyncio
lookups of one name at once (threads, one loop, several loops), negative entries and stale-if-error."""

from __future__ import annotations

import asyncio
import importlib
import socket
import threading
import time
import types

import pytest

from fastnet import _compat
from fastnet.dns import UdpDns
from fastnet.exceptions import UnknownHostError
from tests.support.aioloop import (
    aio_fixture,  # noqa: F401  (the fixture "aio")
    client_sockets,
    new_loop,
    wait_closed,
    wait_for,
)
from tests.support.dnsfaults import FaultDnsServer
from tests.support.twins import Twins

pytestmark = pytest.mark.filterwarnings("error")


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
        assert not _compat.is_compiled("fastnet.dns.cache")
        assert cache.DnsCache.__module__ == "fastnet.dns.cache"
    else:
        assert _compat.is_compiled("fastnet.dns.cache")
        assert cache.DnsCache.__module__ == "fastnet.dns.cache"
        assert cache.CachingDns.__module__ == "fastnet.dns.cache"
        assert (importlib.import_module("fastnet.dns.cache").__file__ or "").endswith((".so", ".pyd"))


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
    assert first.value.__cause__ is not None
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


# --------------------------------------------------------------------------- asyncio: alookup


APP = ["127.0.0.1", "127.0.0.2"]


@pytest.fixture
def server():
    with FaultDnsServer() as srv:
        srv.add("app.test", "A", *APP)
        srv.add("zero.test", "A", "127.0.0.1", ttl=0)
        yield srv


def udp(server: FaultDnsServer, timeout: float = 10.0, ipv6: bool = True) -> UdpDns:
    return UdpDns(*server.address, timeout=timeout, ipv6=ipv6)


class AsyncUpstream:
    """An asyncio resolver that counts calls; ``gate`` (an asyncio.Event of the running loop, made by the
    test) holds every call until it is set; ``fail`` makes calls raise."""

    def __init__(self, answer=("127.0.0.1",), ttl=None):
        self.answer = list(answer)
        self.ttl = ttl
        self.calls = 0
        self.fail = None
        self.gate = None
        self.cancelled = 0

    async def alookup_with_ttl(self, host):
        self.calls += 1
        try:
            if self.gate is not None:
                await self.gate.wait()
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        if self.fail is not None:
            raise self.fail
        return list(self.answer), self.ttl

    async def alookup(self, host):
        return (await self.alookup_with_ttl(host))[0]

    def lookup_with_ttl(self, host):
        self.calls += 1
        if self.fail is not None:
            raise self.fail
        return list(self.answer), self.ttl

    def lookup(self, host):
        return self.lookup_with_ttl(host)[0]


def test_async_cache_hit_and_miss_shared_with_lookup(aio, impl, server):
    dns = impl.CachingDns(udp(server), ttl=60.0)

    async def main():
        assert await dns.alookup("app.test") == APP
        assert dns.lookup("app.test") == APP  # the blocking lookup hits the entry the asyncio one made
        assert await dns.alookup("app.test") == APP
        assert server.count("app.test", "A") == 1
        dns.invalidate("app.test")
        assert dns.lookup("app.test") == APP
        assert await dns.alookup("app.test") == APP  # and the other way round
        assert server.count("app.test", "A") == 2

    aio.run(main())


def test_async_cache_honours_the_upstream_ttl(aio, impl, server):
    """zero.test has TTL 0 (taken from UdpDns.alookup_with_ttl): every lookup asks again; app.test has 5."""
    dns = impl.CachingDns(udp(server, ipv6=False), ttl=60.0)

    async def main():
        for _ in range(3):
            assert await dns.alookup("zero.test") == ["127.0.0.1"]
            assert await dns.alookup("app.test") == APP
        assert server.count("zero.test", "A") == 3
        assert server.count("app.test", "A") == 1

    aio.run(main())


def test_async_cache_clamps_ttl_and_uses_default(aio, impl):
    async def main():
        upstream = AsyncUpstream(ttl=0)
        dns = impl.CachingDns(upstream, min_ttl=30.0)
        await dns.alookup("app.test")
        await dns.alookup("app.test")
        assert upstream.calls == 1
        plain = AsyncUpstream(ttl=None)
        dns = impl.CachingDns(plain, ttl=0.0)  # no TTL from upstream: the default, here 0
        await dns.alookup("app.test")
        await dns.alookup("app.test")
        assert plain.calls == 2

    aio.run(main())


def test_async_cache_ip_literals_and_bad_names(aio, impl, server):
    dns = impl.CachingDns(udp(server))

    async def main():
        assert await dns.alookup("10.1.2.3") == dns.lookup("10.1.2.3") == ["10.1.2.3"]
        assert await dns.alookup("[::1]") == ["::1"]
        for _ in range(2):
            with pytest.raises(ValueError) as sync_error:
                dns.lookup("bad..test")
            with pytest.raises(ValueError) as async_error:
                await dns.alookup("bad..test")
            assert str(async_error.value) == str(sync_error.value)
        assert len(dns.cache) == 0

    aio.run(main())
    assert server.queries == []


def test_async_cache_negative_entries(aio, impl, server):
    dns = impl.CachingDns(udp(server), negative_ttl=30.0)

    async def main():
        with pytest.raises(UnknownHostError) as first:
            await dns.alookup("nx.test")
        assert "nx.test: NXDOMAIN" in str(first.value)
        for lookup in (dns.alookup, dns.lookup, dns.alookup):
            with pytest.raises(UnknownHostError) as again:
                result = lookup("nx.test")
                if asyncio.iscoroutine(result):
                    await result
            assert str(again.value) == str(first.value)  # the cached failure reads like the first
        assert server.count("nx.test", "A") == 1

    aio.run(main())


def test_async_cache_negative_entry_parity(aio, impl):
    """A sync and an asyncio cache in front of the same failing resolver cache the same failure."""

    class Failing:
        def lookup(self, host):
            try:
                raise OSError(-2, "Name or service not known")
            except OSError as exc:
                raise UnknownHostError(f"{host}: {exc.strerror}", phase="dns") from exc

    async def main():
        sync_dns = impl.CachingDns(Failing(), negative_ttl=5.0)
        async_dns = impl.CachingDns(Failing(), negative_ttl=5.0)
        for _ in range(2):
            with pytest.raises(UnknownHostError) as sync_error:
                sync_dns.lookup("nx.test")
            with pytest.raises(UnknownHostError) as async_error:
                await async_dns.alookup("nx.test")
            assert (
                str(async_error.value) == str(sync_error.value) == "nx.test: Name or service not known (dns)"
            )
            assert type(async_error.value.__cause__) is OSError
        assert async_dns.cache.get_error("nx.test") == sync_dns.cache.get_error("nx.test")

    aio.run(main())


def test_async_cache_empty_answer(aio, impl):
    async def main():
        upstream = AsyncUpstream(answer=[])
        dns = impl.CachingDns(upstream)
        with pytest.raises(UnknownHostError, match="returned no addresses for app.test"):
            await dns.alookup("app.test")

    aio.run(main())


def test_async_cache_stale_if_error(aio, impl, server):
    dns = impl.CachingDns(udp(server), stale_if_error=60.0, negative_ttl=30.0)

    async def main():
        assert await dns.alookup("app.test") == APP
        dns.cache.expire("app.test")
        server.fault("app.test", "servfail")
        assert await dns.alookup("app.test") == APP  # served stale
        assert server.count("app.test", "A") == 2
        dns.cache.expire("app.test")
        server.fault("app.test", "drop")  # now a timeout
        dns.inner.timeout = 0.3
        assert await dns.alookup("app.test") == APP
        assert server.count("app.test", "A") == 3
        assert dns.cache.get_error("app.test") is None  # no negative entry over a stale answer

    aio.run(main())


def test_async_cache_stale_if_error_off(aio, impl, server):
    dns = impl.CachingDns(udp(server), stale_if_error=0.0)

    async def main():
        await dns.alookup("app.test")
        dns.cache.expire("app.test")
        server.fault("app.test", "servfail")
        with pytest.raises(UnknownHostError, match="SERVFAIL"):
            await dns.alookup("app.test")

    aio.run(main())


def test_async_cache_blacklist_and_hooks(aio, impl):
    async def main():
        upstream = AsyncUpstream(["127.0.0.4", "127.0.0.1"])
        bl = impl.IpBlacklist(threshold=5)
        dns = impl.CachingDns(upstream, blacklist=bl)
        error = ConnectionRefusedError(111, "Connection refused")
        for _ in range(5):
            assert await dns.alookup("failover.test") == ["127.0.0.4", "127.0.0.1"]
            dns.connect_failed("failover.test", "127.0.0.4", error)
        dns.connect_failed("failover.test", "127.0.0.4", error)
        assert await dns.alookup("failover.test") == ["127.0.0.1"]
        assert upstream.calls == 2
        dns.connected("failover.test", "127.0.0.4")
        assert not bl.is_blacklisted("failover.test", "127.0.0.4")

    aio.run(main())


def test_async_cache_accepts_functions_and_coroutine_functions(aio, impl):
    async def resolve(host):
        await asyncio.sleep(0)
        return ["127.0.0.7"]

    async def main():
        assert await impl.CachingDns(lambda host: ["127.0.0.1"]).alookup("app.test") == ["127.0.0.1"]
        dns = impl.CachingDns(resolve)
        assert await dns.alookup("app.test") == ["127.0.0.7"]
        assert dns.lookup("app.test") == ["127.0.0.7"]  # a hit: the coroutine function is not called
        dns.invalidate()
        with pytest.raises(TypeError, match="wraps a coroutine function"):
            dns.lookup("app.test")  # a miss cannot await it

    aio.run(main())


def test_async_cache_single_flight_one_query_at_the_server(aio, impl, server):
    """64 tasks miss at once: one A and one AAAA query reach the DNS server."""
    server.fault("app.test", "slow", delay=0.3)
    dns = impl.CachingDns(udp(server))

    async def main():
        results = await asyncio.gather(*[dns.alookup("app.test") for _ in range(64)])
        assert results == [APP] * 64
        await wait_closed(server.address[1])

    aio.run(main())
    assert server.count("app.test", "A") == 1 and server.count("app.test", "AAAA") == 1


def test_async_cache_single_flight_shares_failures(aio, impl, server):
    server.add("sf.test", "A", "127.0.0.1")
    server.fault("sf.test", "servfail", delay=0.3)
    dns = impl.CachingDns(udp(server), negative_ttl=0.0)

    async def main():
        results = await asyncio.gather(*[dns.alookup("sf.test") for _ in range(16)], return_exceptions=True)
        assert all(isinstance(r, UnknownHostError) and "SERVFAIL" in str(r) for r in results)
        assert len({str(r) for r in results}) == 1

    aio.run(main())
    assert server.count("sf.test", "A") == 1


def test_async_cache_cancelled_leader_does_not_strand_followers(aio, impl, server):
    server.fault("app.test", "slow", delay=0.5)
    dns = impl.CachingDns(udp(server))

    async def main():
        leader = asyncio.ensure_future(dns.alookup("app.test"))
        await wait_for(lambda: server.count("app.test") == 2, what="the leader's queries")
        followers = [asyncio.ensure_future(dns.alookup("app.test")) for _ in range(8)]
        await asyncio.sleep(0)  # the followers join the flight
        leader.cancel()
        with pytest.raises(asyncio.CancelledError):
            await leader
        assert await asyncio.gather(*followers) == [APP] * 8
        await wait_closed(server.address[1])

    aio.run(main())
    # the leader's query went on for the followers: nobody asked a second time
    assert server.count("app.test", "A") == 1 and server.count("app.test", "AAAA") == 1


def test_async_cache_cancelled_follower_leaves_the_rest(aio, impl):
    async def main():
        upstream = AsyncUpstream()
        upstream.gate = asyncio.Event()
        dns = impl.CachingDns(upstream)
        tasks = [asyncio.ensure_future(dns.alookup("app.test")) for _ in range(4)]
        await wait_for(lambda: upstream.calls == 1, what="the upstream call")
        tasks[2].cancel()
        with pytest.raises(asyncio.CancelledError):
            await tasks[2]
        upstream.gate.set()
        assert list(await asyncio.gather(tasks[0], tasks[1], tasks[3])) == [["127.0.0.1"]] * 3
        assert upstream.calls == 1 and upstream.cancelled == 0

    aio.run(main())


def test_async_cache_everyone_cancelled_stops_the_query(aio, impl, server):
    """When the last waiter is cancelled the upstream lookup is cancelled too, its socket closed by the
    time the cancelled lookup returns; the next lookup starts afresh."""
    server.add("slow.test", "A", "127.0.0.1")
    server.fault("slow.test", "drop")
    dns = impl.CachingDns(udp(server, timeout=30))
    port = server.address[1]

    async def main():
        tasks = [asyncio.ensure_future(dns.alookup("slow.test")) for _ in range(3)]
        await wait_for(lambda: server.count("slow.test") == 2, what="the queries")
        assert client_sockets(port, "udp")
        for task in tasks:
            task.cancel()
        results = await asyncio.gather(*tasks, return_exceptions=True)
        assert all(isinstance(r, asyncio.CancelledError) for r in results)
        await wait_closed(port)
        assert dns._flights == {}
        server.faults.pop("slow.test")
        assert await dns.alookup("slow.test") == ["127.0.0.1"]
        assert server.count("slow.test", "A") == 2

    aio.run(main())


def test_async_cache_cancelled_leader_alone_waits_for_its_query(aio, impl):
    """The only waiter cancelled: by the time its cancellation is delivered the upstream is cancelled."""

    async def main():
        upstream = AsyncUpstream()
        upstream.gate = asyncio.Event()
        dns = impl.CachingDns(upstream)
        task = asyncio.ensure_future(dns.alookup("app.test"))
        await wait_for(lambda: upstream.calls == 1, what="the upstream call")
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert upstream.cancelled == 1  # the upstream call was over before the cancellation came out
        assert dns._flights == {}

    aio.run(main())


def test_async_cache_timeout_of_one_caller(aio, impl):
    """asyncio.wait_for on one lookup: it times out, the others still get the answer."""

    async def main():
        upstream = AsyncUpstream()
        upstream.gate = asyncio.Event()
        dns = impl.CachingDns(upstream)
        other = asyncio.ensure_future(dns.alookup("app.test"))
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(dns.alookup("app.test"), 0.05)
        upstream.gate.set()
        assert await other == ["127.0.0.1"]
        assert upstream.calls == 1

    aio.run(main())


def test_async_cache_leader_gets_its_own_error_followers_a_copy(aio, impl):
    async def main():
        upstream = AsyncUpstream()
        upstream.gate = asyncio.Event()
        upstream.fail = UnknownHostError("app.test: SERVFAIL", phase="dns")
        dns = impl.CachingDns(upstream, negative_ttl=0.0)
        tasks = [asyncio.ensure_future(dns.alookup("app.test")) for _ in range(3)]
        await wait_for(lambda: upstream.calls == 1, what="the upstream call")
        upstream.gate.set()
        errors = await asyncio.gather(*tasks, return_exceptions=True)
        assert errors[0] is upstream.fail
        assert all(type(e) is UnknownHostError and str(e) == str(upstream.fail) for e in errors)
        assert errors[1] is not errors[2] and errors[1].__cause__ is upstream.fail

    aio.run(main())


def test_async_cache_joins_a_blocking_flight_without_blocking_the_loop(aio, impl, server):
    server.fault("app.test", "slow", delay=0.5)
    dns = impl.CachingDns(udp(server))
    blocking_result = []

    async def main():
        thread = threading.Thread(target=lambda: blocking_result.append(dns.lookup("app.test")))
        thread.start()
        await wait_for(lambda: server.count("app.test") == 2, what="the blocking lookup's queries")
        ticks = 0
        task = asyncio.ensure_future(asyncio.gather(*[dns.alookup("app.test") for _ in range(8)]))
        while not task.done():
            ticks += 1
            await asyncio.sleep(0.01)
        assert task.result() == [APP] * 8
        assert ticks > 5  # the loop kept running while they waited
        while thread.is_alive():
            await asyncio.sleep(0.01)

    aio.run(main())
    assert blocking_result == [APP]
    assert server.count("app.test", "A") == 1


def test_async_cache_blocking_lookup_in_a_thread_joins_an_asyncio_flight(aio, impl, server):
    server.fault("app.test", "slow", delay=0.5)
    dns = impl.CachingDns(udp(server))
    blocking_result = []

    async def main():
        task = asyncio.ensure_future(dns.alookup("app.test"))
        await wait_for(lambda: server.count("app.test") == 2, what="the asyncio lookup's queries")
        threads = [
            threading.Thread(target=lambda: blocking_result.append(dns.lookup("app.test"))) for _ in range(4)
        ]
        for thread in threads:
            thread.start()
        assert await task == APP
        while any(thread.is_alive() for thread in threads):
            await asyncio.sleep(0.01)

    aio.run(main())
    assert blocking_result == [APP] * 4
    assert server.count("app.test", "A") == 1


def test_async_cache_blocking_lookup_on_the_loop_thread_does_not_deadlock(aio, impl, server):
    """A blocking lookup called on the loop's own thread while an asyncio flight for the name is in
    progress cannot wait for it (the flight needs the loop): it resolves on its own."""
    server.fault("app.test", "slow", delay=0.3)
    dns = impl.CachingDns(udp(server))

    async def main():
        task = asyncio.ensure_future(dns.alookup("app.test"))
        await wait_for(lambda: server.count("app.test") == 2, what="the asyncio lookup's queries")
        assert dns.lookup("app.test") == APP  # blocks the loop, but returns
        assert await task == APP

    aio.run(main())
    assert server.count("app.test", "A") == 2


def test_async_cache_a_cancelled_asyncio_flight_does_not_fail_a_waiting_thread(aio, impl):
    """A thread waits for an asyncio flight whose only coroutine is then cancelled: the flight goes on
    for the thread (it is a waiter too) and the thread gets the answer."""

    async def main():
        upstream = AsyncUpstream()
        upstream.gate = asyncio.Event()
        dns = impl.CachingDns(upstream)
        task = asyncio.ensure_future(dns.alookup("app.test"))
        await wait_for(lambda: upstream.calls == 1, what="the upstream call")
        result = []
        thread = threading.Thread(target=lambda: result.append(dns.lookup("app.test")))
        thread.start()
        await wait_for(lambda: _blocked(dns, "app.test") == 1, what="the thread waiting")
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        upstream.gate.set()
        while thread.is_alive():
            await asyncio.sleep(0.01)
        assert result == [["127.0.0.1"]]
        assert upstream.calls == 1 and upstream.cancelled == 0

    aio.run(main())


def _blocked(dns, host):
    flight = dns._flights.get(host)
    return 0 if flight is None else flight.blocked


def test_async_cache_flights_across_two_loops(aio, impl, server):
    """Another loop in another thread joins this loop's flight: one query."""
    server.fault("app.test", "slow", delay=0.5)
    dns = impl.CachingDns(udp(server))
    other = []

    async def four():
        return await asyncio.gather(*[dns.alookup("app.test") for _ in range(4)])

    def other_loop():
        loop = new_loop(aio.kind)
        try:
            other.append(loop.run_until_complete(four()))
        finally:
            loop.close()

    async def main():
        task = asyncio.ensure_future(dns.alookup("app.test"))
        await wait_for(lambda: server.count("app.test") == 2, what="the queries")
        thread = threading.Thread(target=other_loop)
        thread.start()
        assert await task == APP
        while thread.is_alive():
            await asyncio.sleep(0.01)

    aio.run(main())
    assert other == [[APP] * 4]
    assert server.count("app.test", "A") == 1


def test_async_cache_flight_of_a_stopped_loop_does_not_strand_others(aio, impl, server):
    """A loop stops (run_until_complete returned) with its flight still pending: a blocking lookup and an
    asyncio lookup on another loop, both waiting for it, notice and resolve themselves."""
    server.fault("app.test", "slow", delay=0.5)
    dns = impl.CachingDns(udp(server))
    stopped = new_loop(aio.kind)
    try:
        flight_task = stopped.create_task(dns.alookup("app.test"))
        stopped.run_until_complete(asyncio.sleep(0.05))  # the flight has started; the loop stops

        blocking_result = []
        thread = threading.Thread(target=lambda: blocking_result.append(dns.lookup("app.test")))
        thread.start()

        async def main():
            assert await dns.alookup("app.test") == APP

        aio.run(main())
        thread.join(10)
        assert blocking_result == [APP]
        server.faults.pop("app.test")
        assert stopped.run_until_complete(flight_task) == APP  # it can still finish when run again
    finally:
        stopped.close()
