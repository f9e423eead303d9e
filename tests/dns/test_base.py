"""Host-name validation, IP literals, the Dns protocol glue and BootstrapDns (``fastnet/dns/_base.py``;
SystemDns: test_system.py).

The asyncio glue (alookup, alookup_with_ttl, FunctionDns.alookup) and BootstrapDns.alookup, held against
their blocking twins, on both loops."""

from __future__ import annotations

import asyncio

import pytest

from fastnet.dns import (
    Dns,
    FunctionDns,
    SystemDns,
    alookup,
    alookup_with_ttl,
    as_dns,
    is_ip_literal,
    lookup_with_ttl,
    normalize_hostname,
)
from fastnet.exceptions import NetworkError, UnknownHostError
from tests.support.aioloop import aio_fixture, both  # noqa: F401  (aio_fixture: the fixture "aio")

pytestmark = pytest.mark.filterwarnings("error")


def test_normalize_hostname_lowercases_and_strips_trailing_dot():
    assert normalize_hostname("App.Test.") == "app.test"
    assert normalize_hostname("a_b-c.example") == "a_b-c.example"


def test_normalize_hostname_idna_encodes():
    assert normalize_hostname("Bücher.example") == "xn--bcher-kva.example"
    assert normalize_hostname("例え.テスト") == "xn--r8jz45g.xn--zckzah"


@pytest.mark.parametrize(
    ("host", "reason"),
    [
        ("", "empty"),
        (".", "empty"),
        ("a..b", "empty label"),
        (".a", "empty label"),
        ("a" * 64 + ".test", "label longer than 63"),
        (".".join(["a" * 60] * 5), "longer than 253"),
        ("bad host.test", "not allowed"),
        ("bad/host.test", "not allowed"),
        ("bad\x00host.test", "not allowed"),
        ("host:80", "not allowed"),
        ("bü..test", "empty label"),
        ("user@host.test", "not allowed"),
    ],
)
def test_normalize_hostname_rejects_bad_names(host, reason):
    with pytest.raises(ValueError, match=reason):
        normalize_hostname(host)


def test_normalize_hostname_rejects_non_str():
    with pytest.raises(TypeError):
        normalize_hostname(b"app.test")  # type: ignore[arg-type]


def test_normalize_hostname_keeps_ip_literals():
    assert normalize_hostname("127.0.0.1") == "127.0.0.1"
    assert normalize_hostname("::1") == "::1"
    assert normalize_hostname("[::1]") == "::1"
    assert normalize_hostname("fe80::1%lo") == "fe80::1%lo"


@pytest.mark.parametrize("host", ["127.0.0.1", "10.0.0.255", "::1", "[::1]", "2001:db8::1", "::ffff:1.2.3.4"])
def test_is_ip_literal_true(host):
    assert is_ip_literal(host)


@pytest.mark.parametrize(
    "host", ["", "app.test", "1.2.3", "256.1.1.1", "1.2.3.4.5", ":::", "localhost", "1e3"]
)
def test_is_ip_literal_false(host):
    assert not is_ip_literal(host)


def test_as_dns_wraps_callables_and_passes_objects():
    dns = as_dns(lambda host: ("127.0.0.1", "::1"))
    assert isinstance(dns, FunctionDns)
    assert isinstance(dns, Dns)
    assert dns.lookup("app.test") == ["127.0.0.1", "::1"]
    system = SystemDns()
    assert as_dns(system) is system
    with pytest.raises(TypeError):
        as_dns(42)  # type: ignore[arg-type]


def test_function_dns_ip_literals_skip_the_function():
    calls: list[str] = []

    def answer(host: str) -> list[str]:
        calls.append(host)
        return ["10.0.0.1"]

    dns = as_dns(answer)
    assert dns.lookup("127.0.0.1") == ["127.0.0.1"]
    assert dns.lookup("[::1]") == ["::1"]
    assert calls == []


def test_function_dns_empty_answer_is_unknown_host():
    dns = as_dns(lambda host: [])
    with pytest.raises(UnknownHostError) as info:
        dns.lookup("app.test")
    assert isinstance(info.value, NetworkError)
    assert "no addresses for app.test" in str(info.value)


def test_function_dns_rejects_a_string_answer():
    with pytest.raises(TypeError):
        as_dns(lambda host: "127.0.0.1").lookup("app.test")


def test_lookup_with_ttl_for_plain_resolvers():
    assert lookup_with_ttl(lambda host: ["127.0.0.1"], "app.test") == (["127.0.0.1"], None)


# --------------------------------------------------------------------------- asyncio: alookup


def test_async_function_dns_parity(aio):
    cases = [
        lambda host: ("127.0.0.1", "::1"),
        lambda host: [],
        lambda host: "127.0.0.1",
        lambda host: None,
    ]

    async def main():
        for function in cases:
            dns = FunctionDns(function)  # type: ignore[arg-type]  # a str or None answer: refused
            await both(dns.lookup, dns.alookup, "app.test")
        kind, message = await both(
            FunctionDns(lambda host: []).lookup, FunctionDns(lambda host: []).alookup, "a.test"
        )
        assert kind == "UnknownHostError" and "no addresses for a.test" in message

    aio.run(main())


def test_async_function_dns_awaits_coroutine_functions(aio):
    calls = []

    async def resolve(host):
        calls.append(host)
        await asyncio.sleep(0)
        return ["127.0.0.7"]

    async def main():
        dns = as_dns(resolve)
        assert isinstance(dns, FunctionDns)
        assert await dns.alookup("app.test") == ["127.0.0.7"]
        assert await dns.alookup("[::1]") == ["::1"]  # an IP literal never calls the function
        assert calls == ["app.test"]
        with pytest.raises(TypeError, match="wraps a coroutine function.*use alookup"):
            dns.lookup("app.test")  # refused before the function is called
        assert calls == ["app.test"]
        with pytest.raises(TypeError, match="returned an awaitable: use alookup"):
            # a plain function returning a coroutine: the coroutine it made is closed (no "never
            # awaited" warning)
            FunctionDns(lambda host: resolve(host)).lookup("app.test")
        assert calls == ["app.test"]  # the coroutine never ran

        async def empty(host):
            return []

        with pytest.raises(UnknownHostError, match="returned no addresses"):
            await FunctionDns(empty).alookup("app.test")

    aio.run(main())


def test_async_alookup_calls_whatever_the_resolver_has(aio):
    class Both:
        def lookup(self, host):
            return ["10.0.0.1"]

        async def alookup(self, host):
            return ["10.0.0.2"]

    class BlockingOnly:
        def lookup(self, host):
            return ["10.0.0.3"]

    class AwaitableLookup:
        async def lookup(self, host):
            return ["10.0.0.4"]

    async def coroutine_function(host):
        return ["10.0.0.6"]

    async def main():
        assert await alookup(Both(), "app.test") == ["10.0.0.2"]
        assert await alookup(BlockingOnly(), "app.test") == ["10.0.0.3"]
        assert await alookup(AwaitableLookup(), "app.test") == ["10.0.0.4"]
        assert await alookup(lambda host: ("10.0.0.5",), "app.test") == ["10.0.0.5"]
        assert await alookup(coroutine_function, "app.test") == ["10.0.0.6"]
        with pytest.raises(UnknownHostError):
            await alookup(lambda host: [], "app.test")

    aio.run(main())


def test_async_alookup_with_ttl_prefers_the_asyncio_methods(aio):
    class Full:
        def lookup(self, host):
            return ["10.0.0.1"]

        def lookup_with_ttl(self, host):
            return ("10.0.0.1",), 1

        async def alookup(self, host):
            return ["10.0.0.2"]

        async def alookup_with_ttl(self, host):
            return ("10.0.0.3",), 3

    class AsyncNoTtl:
        def lookup_with_ttl(self, host):
            return ["10.0.0.1"], 1

        async def alookup(self, host):
            return ("10.0.0.2",)

    class BlockingTtl:
        def lookup_with_ttl(self, host):
            return ("10.0.0.4",), 4

        def lookup(self, host):
            return ["10.0.0.4"]

    class AwaitableTtl:
        async def lookup_with_ttl(self, host):
            return ["10.0.0.5"], 5

    async def main():
        assert await alookup_with_ttl(Full(), "app.test") == (["10.0.0.3"], 3)
        # no asyncio TTL: the asyncio lookup wins over a blocking one that knows the TTL
        assert await alookup_with_ttl(AsyncNoTtl(), "app.test") == (["10.0.0.2"], None)
        assert await alookup_with_ttl(BlockingTtl(), "app.test") == lookup_with_ttl(BlockingTtl(), "app.test")
        assert await alookup_with_ttl(AwaitableTtl(), "app.test") == (["10.0.0.5"], 5)
        assert await alookup_with_ttl(lambda host: ["10.0.0.6"], "app.test") == (["10.0.0.6"], None)

    aio.run(main())
