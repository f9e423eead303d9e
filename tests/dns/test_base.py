"""Host-name validation, IP literals, the Dns protocol glue, SystemDns and BootstrapDns."""

from __future__ import annotations

import pytest

from fastnet.dns import BootstrapDns, Dns, FunctionDns, SystemDns, as_dns, is_ip_literal, normalize_hostname
from fastnet.dns._base import lookup_with_ttl
from fastnet.exceptions import NetworkError, UnknownHostError


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
        as_dns(42)


def test_function_dns_ip_literals_skip_the_function():
    calls = []
    dns = as_dns(lambda host: calls.append(host) or ["10.0.0.1"])
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


def test_bootstrap_dns_answers_only_for_its_host():
    dns = BootstrapDns("DoH.Test", ["127.0.0.1", "[::1]"])
    assert dns.lookup("doh.test") == ["127.0.0.1", "::1"]
    with pytest.raises(UnknownHostError, match="instead of doh.test"):
        dns.lookup("app.test")
    with pytest.raises(ValueError):
        BootstrapDns("doh.test", ["doh.test"])
    with pytest.raises(ValueError):
        BootstrapDns("doh.test", [])
