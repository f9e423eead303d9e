"""ChainDns (resolvers asked in order, blacklisted answers skipped), RESILIENT and default_dns.

ChainDns.alookup (resolvers in order, blacklist, error aggregation), RESILIENT, resilient() and the
default resolvers, on both loops, each outcome held against the blocking lookup's."""

from __future__ import annotations

import asyncio
import socket

import pytest

import fastnet.dns
from fastnet.dns import (
    RESILIENT,
    CachingDns,
    ChainDns,
    IpBlacklist,
    SystemDns,
    UdpDns,
    default_dns,
    resilient,
    shared_default_dns,
)
from fastnet.exceptions import UnknownHostError
from tests.support.aioloop import aio_fixture  # noqa: F401  (the fixture "aio")
from tests.support.dnsfaults import FaultDnsServer

pytestmark = pytest.mark.filterwarnings("error")


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


# --------------------------------------------------------------------------- asyncio: alookup


class AsyncRecorder(Recorder):
    """The same, with an ``alookup`` that yields to the loop first."""

    async def alookup(self, host):
        await asyncio.sleep(0)
        return self.lookup(host)


def pair(name, answer=None, error=None):
    """The same resolver as a blocking and as an asyncio one."""
    return Recorder(name, answer, error), AsyncRecorder(name, answer, error)


async def same(sync_chain, async_chain, host, with_ttl=False):
    """Assert the asyncio chain gives what the blocking chain gives (result or error type and text)."""

    def sync():
        return sync_chain.lookup_with_ttl(host) if with_ttl else sync_chain.lookup(host)

    async def run():
        return await (async_chain.alookup_with_ttl(host) if with_ttl else async_chain.alookup(host))

    try:
        expected = ("ok", sync())
    except Exception as exc:  # noqa: BLE001 - compared
        expected = (type(exc).__name__, str(exc))
    try:
        got = ("ok", await run())
    except Exception as exc:  # noqa: BLE001
        got = (type(exc).__name__, str(exc))
    assert got == expected
    return got


def chains(*specs, blacklist_factory=None):
    """A blocking chain and an asyncio chain of the same resolvers (and blacklists built alike)."""
    pairs = [pair(*spec) for spec in specs]
    sync_resolvers = [p[0] for p in pairs]
    async_resolvers = [p[1] for p in pairs]
    sync_bl = blacklist_factory() if blacklist_factory else None
    async_bl = blacklist_factory() if blacklist_factory else None
    return (
        ChainDns(sync_resolvers, blacklist=sync_bl),
        ChainDns(async_resolvers, blacklist=async_bl),
        sync_resolvers,
        async_resolvers,
    )


def test_async_chain_first_non_empty_answer_wins(aio):
    async def main():
        sync_chain, async_chain, sync_r, async_r = chains(
            ("a", None, UnknownHostError("a failed")), ("b", ["127.0.0.2"]), ("c", ["127.0.0.3"])
        )
        assert await same(sync_chain, async_chain, "App.Test") == ("ok", ["127.0.0.2"])
        assert [r.calls for r in async_r] == [r.calls for r in sync_r] == [["app.test"], ["app.test"], []]

    aio.run(main())


def test_async_chain_mixes_blocking_and_asyncio_resolvers(aio):
    async def coroutine_function(host):
        return ["127.0.0.8"]

    def crash(host):
        raise RuntimeError("bug")

    async def main():
        chain = ChainDns([crash, Recorder("empty", []), coroutine_function])
        assert await chain.alookup("app.test") == ["127.0.0.8"]

    aio.run(main())


def test_async_chain_blacklisted_answers_fall_through(aio):
    def blacklist():
        bl = IpBlacklist(threshold=0)
        bl.record_failure("app.test", "127.0.0.4")
        return bl

    async def main():
        sync_chain, async_chain, _, _ = chains(
            ("a", ["127.0.0.4"]), ("b", ["127.0.0.4", "127.0.0.1"]), blacklist_factory=blacklist
        )
        assert await same(sync_chain, async_chain, "app.test") == ("ok", ["127.0.0.1"])

    aio.run(main())


def test_async_chain_total_failure_clears_blacklist_and_returns_collected(aio):
    def blacklist():
        bl = IpBlacklist(threshold=0)
        bl.record_failure("app.test", "127.0.0.4")
        bl.record_failure("app.test", "127.0.0.5")
        bl.record_failure("other.test", "127.0.0.4")
        return bl

    async def main():
        sync_chain, async_chain, _, _ = chains(
            ("a", ["127.0.0.4"]),
            ("b", None, UnknownHostError("b failed")),
            ("c", ["127.0.0.5", "127.0.0.4"]),
            blacklist_factory=blacklist,
        )
        assert await same(sync_chain, async_chain, "app.test") == ("ok", ["127.0.0.4", "127.0.0.5"])
        for chain in (sync_chain, async_chain):
            assert chain.blacklist.blacklisted("app.test") == []
            assert chain.blacklist.blacklisted("other.test") == ["127.0.0.4"]

    aio.run(main())


def test_async_chain_nothing_found_lists_every_failure(aio):
    async def main():
        sync_chain, async_chain, _, _ = chains(
            ("first", None, UnknownHostError("nx.test: NXDOMAIN", phase="dns")),
            ("second", []),
            ("third", None, OSError("network unreachable")),
        )
        assert await same(sync_chain, async_chain, "nx.test") == (
            "UnknownHostError",
            "Unable to resolve nx.test: first: nx.test: NXDOMAIN; second: no addresses; "
            "third: network unreachable (dns)",
        )

    aio.run(main())


def test_async_chain_ip_literals_bad_names_and_ttl(aio):
    class WithTtl:
        def lookup(self, host):
            return ["127.0.0.1"]

        def lookup_with_ttl(self, host):
            return ["127.0.0.1"], 7

        async def alookup_with_ttl(self, host):
            return ["127.0.0.1"], 7

    async def main():
        sync_chain, async_chain, _, async_r = chains(("a", ["10.0.0.1"]))
        assert await same(sync_chain, async_chain, "::1") == ("ok", ["::1"])
        assert async_r[0].calls == []
        kind, _ = await same(sync_chain, async_chain, "-" * 64 + ".test")
        assert kind == "ValueError"
        chain = ChainDns([WithTtl()])
        assert await same(chain, chain, "app.test", with_ttl=True) == ("ok", (["127.0.0.1"], 7))

    aio.run(main())


def test_async_chain_value_errors_are_not_swallowed(aio):
    class Picky:
        def lookup(self, host):
            raise ValueError("no")

        async def alookup(self, host):
            raise ValueError("no")

    async def main():
        with pytest.raises(ValueError, match="no"):
            await ChainDns([Picky(), lambda host: ["127.0.0.1"]]).alookup("app.test")

    aio.run(main())


def test_async_chain_of_udp_servers(aio):
    """A UdpDns with no server behind it, then a working one: the same answer and order as blocking."""
    with FaultDnsServer() as gone:
        address = gone.address
    with FaultDnsServer() as srv:
        srv.add("multi.test", "A", "127.0.0.3", "127.0.0.1")
        chain = ChainDns([UdpDns(*address, timeout=0.5), UdpDns(*srv.address, timeout=3)])

        async def main():
            assert await same(chain, chain, "multi.test", with_ttl=True) == (
                "ok",
                (["127.0.0.3", "127.0.0.1"], 5),
            )
            kind, message = await same(chain, chain, "nx.test")
            assert (
                kind == "UnknownHostError"
                and "NXDOMAIN" in message
                and "Unable to resolve nx.test" in message
            )

        aio.run(main())


def test_async_chain_cancelled_mid_chain(aio):
    gate = {}

    class Hanging:
        def lookup(self, host):
            raise AssertionError("the asyncio chain must not call lookup")

        async def alookup(self, host):
            gate["started"] = True
            await asyncio.Event().wait()

    async def main():
        after = AsyncRecorder("after", ["127.0.0.1"])
        task = asyncio.ensure_future(ChainDns([Hanging(), after]).alookup("app.test"))
        while "started" not in gate:
            await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert after.calls == []  # a cancellation is not a failure to fall back from

    aio.run(main())


def test_async_resilient_chain_cache_hit_then_fallbacks(aio):
    async def main():
        system = AsyncRecorder("system", error=UnknownHostError("system: no network"))
        udp = AsyncRecorder("udp", error=UnknownHostError("udp: timed out"))
        doh = AsyncRecorder("doh", answer=["127.0.0.1"])
        dns = resilient(udp, doh, system=system)
        assert await dns.alookup("app.test") == ["127.0.0.1"]
        assert (len(system.calls), len(udp.calls), len(doh.calls)) == (1, 1, 1)
        assert await dns.alookup("app.test") == ["127.0.0.1"]  # cache hit
        assert dns.lookup("app.test") == ["127.0.0.1"]  # shared with the blocking path
        assert (len(system.calls), len(udp.calls), len(doh.calls)) == (1, 1, 1)

    aio.run(main())


def test_async_resilient_blacklist_through_cache(aio):
    async def main():
        dns = resilient(system=lambda host: ["127.0.0.4", "127.0.0.1"])
        error = ConnectionRefusedError()
        for _ in range(6):
            dns.connect_failed("failover.test", "127.0.0.4", error)
        assert await dns.alookup("failover.test") == ["127.0.0.1"]
        dns.connected("failover.test", "127.0.0.4")
        dns.invalidate("failover.test")
        assert await dns.alookup("failover.test") == ["127.0.0.4", "127.0.0.1"]

    aio.run(main())


def test_async_resilient_constant_and_defaults(aio):
    async def main():
        assert await RESILIENT.alookup("127.0.0.1") == ["127.0.0.1"]
        assert set(await RESILIENT.alookup("localhost")) <= {"127.0.0.1", "::1"}
        built = RESILIENT(lambda host: ["127.0.0.1"], system=lambda host: [])
        assert await built.alookup("app.test") == ["127.0.0.1"]
        dns = default_dns()
        assert isinstance(dns, CachingDns) and isinstance(dns.inner, SystemDns)
        assert await dns.alookup("localhost") == dns.lookup("localhost")
        shared = shared_default_dns()
        assert await shared.alookup("localhost") == shared.lookup("localhost")

    aio.run(main())
