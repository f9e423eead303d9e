"""``SystemDns`` (``fastnet/dns/_system.py``): the platform's ``getaddrinfo``, both address families in
the order the system gives them, each address once; IP literals never reach it; ``alookup`` through the
running loop's ``getaddrinfo`` with the same answers and errors as ``lookup`` (on asyncio's loop and
uvloop). Only ``localhost`` and IP literals are resolved: nothing here may ask a real DNS server."""

from __future__ import annotations

import asyncio
import socket

import pytest

from fastnet.dns import SystemDns
from fastnet.dns._system import _addresses, _failure
from fastnet.exceptions import UnknownHostError
from tests.support.aioloop import aio_fixture, both  # noqa: F401  (aio_fixture: the fixture "aio")

pytestmark = pytest.mark.filterwarnings("error")


def test_system_dns_resolves_localhost():
    addresses = SystemDns().lookup("localhost")
    assert addresses
    assert set(addresses) <= {"127.0.0.1", "::1"}
    assert len(addresses) == len(set(addresses))


def test_system_dns_ip_literals_skip_getaddrinfo():
    assert SystemDns().lookup("127.0.0.2") == ["127.0.0.2"]
    assert SystemDns().lookup("[::1]") == ["::1"]


def test_system_dns_validates_before_resolving():
    with pytest.raises(ValueError):
        SystemDns().lookup("a..test")


def test_async_system_dns_localhost_parity(aio):
    async def main():
        for family in (socket.AF_UNSPEC, socket.AF_INET):
            dns = SystemDns(family)
            kind, addresses = await both(dns.lookup, dns.alookup, "localhost")
            assert kind == "ok" and addresses and set(addresses) <= {"127.0.0.1", "::1"}
            assert len(addresses) == len(set(addresses))

    aio.run(main())


def test_async_system_dns_ip_literals_and_bad_names(aio):
    async def main():
        dns = SystemDns()
        assert await both(dns.lookup, dns.alookup, "127.0.0.2") == ("ok", ["127.0.0.2"])
        assert await both(dns.lookup, dns.alookup, "[::1]") == ("ok", ["::1"])
        kind, message = await both(dns.lookup, dns.alookup, "a..test")
        assert kind == "ValueError" and "empty label" in message

    aio.run(main())


def test_async_system_dns_runs_on_the_loop_without_blocking_it(aio):
    async def main():
        dns = SystemDns()
        results = await asyncio.gather(*[dns.alookup("localhost") for _ in range(20)])
        assert all(r == results[0] for r in results)

    aio.run(main())


def test_system_dns_family_is_checked() -> None:
    assert SystemDns(socket.AF_INET).family == socket.AF_INET
    assert SystemDns().family == socket.AF_UNSPEC and repr(SystemDns()) == "SystemDns()"
    with pytest.raises(ValueError, match="family"):
        SystemDns(socket.AF_UNIX)


def test_system_dns_one_family_only() -> None:
    assert SystemDns(socket.AF_INET).lookup("localhost") == ["127.0.0.1"]


def _info(family: int, ip: str) -> tuple:
    return (family, socket.SOCK_STREAM, 6, "", (ip, 0) if family == socket.AF_INET else (ip, 0, 0, 0))


def test_system_dns_answers_keep_the_systems_order_each_address_once() -> None:
    infos = [
        _info(socket.AF_INET6, "::1"),
        _info(socket.AF_INET, "127.0.0.1"),
        _info(socket.AF_INET6, "::1"),  # getaddrinfo repeats an address per socket type
        (socket.AF_UNIX, socket.SOCK_STREAM, 0, "", "/tmp/sock"),  # not an IP family: skipped
        _info(socket.AF_INET, "127.0.0.2"),
    ]
    assert _addresses("app.test", infos) == ["::1", "127.0.0.1", "127.0.0.2"]
    with pytest.raises(UnknownHostError, match="returned no addresses"):
        _addresses("app.test", [])


def test_system_dns_failures_are_unknown_host_errors_in_the_dns_phase() -> None:
    gai = _failure("app.test", socket.gaierror(socket.EAI_NONAME, "Name or service not known"))
    assert isinstance(gai, UnknownHostError) and gai.phase == "dns"
    assert str(gai).startswith("app.test: Name or service not known")
    odd = _failure("app.test", UnicodeError("label too long"))
    assert "Broken system behaviour" in str(odd) and odd.phase == "dns"
