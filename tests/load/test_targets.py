"""What a load run connects to and sends (``fastnet/load/_targets.py``): ``--resolve`` entries, the
overriding resolver, the prebuilt request bytes (read back by MockServer over a real socket), URLs
grouped by connection and resolved once, connections spread over the groups, and the ``Preparer`` that
opens https connections with fastnet's own connection code, against MockServer(tls=True)."""

from __future__ import annotations

import socket
import threading
from typing import Any

import pytest

from fastnet.load._targets import (
    USER_AGENT,
    LoadError,
    OverrideDns,
    Preparer,
    build_request,
    parse_resolve,
    plan_groups,
    resolve_address,
    spread,
)
from fastnet.proxy import Proxy
from fastnet.testing import MockResponse, MockServer
from fastnet.url import URL
from tests.support.clients import ca_path
from tests.support.fakes import FakeDns

# -- --resolve and the resolver -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, parsed",
    [
        ("Example.Test.:443:127.0.0.2", ("example.test", 443, "127.0.0.2")),
        ("a.test:80:[::1]", ("a.test", 80, "::1")),
        ("a.test:8080:::1", ("a.test", 8080, "::1")),
    ],
)
def test_targets_parse_resolve(text: str, parsed: tuple[str, int, str]) -> None:
    assert parse_resolve(text) == parsed


@pytest.mark.parametrize(
    "text, message",
    [
        ("a.test:80", "host:port:addr"),
        (":80:127.0.0.1", "host:port:addr"),
        ("a.test:http:127.0.0.1", "bad port"),
        ("a.test:70000:127.0.0.1", "out of range"),
        ("a.test:80:not-an-ip", "not an IP address"),
    ],
)
def test_targets_parse_resolve_refuses(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_resolve(text)


def test_targets_override_dns_then_the_fallback() -> None:
    fallback = FakeDns({"other.test": ["127.0.0.9"]})
    dns = OverrideDns({"app.test": "127.0.0.2"}, fallback)
    assert dns.lookup("APP.test.") == ["127.0.0.2"] and fallback.lookups == []
    assert dns.lookup("other.test") == ["127.0.0.9"] and fallback.lookups == ["other.test"]
    assert OverrideDns({}, lambda host: ["10.0.0.1"]).lookup("x.test") == ["10.0.0.1"]  # a plain function


def test_targets_resolve_address() -> None:
    # an IP literal never consults the resolver (None would fail if it did)
    assert resolve_address("127.0.0.1", 80, None) == ((socket.AF_INET, "127.0.0.1", 80), -1)  # type: ignore[arg-type]
    assert resolve_address("[::1]", 8080, None) == ((socket.AF_INET6, "::1", 8080), -1)  # type: ignore[arg-type]
    address, dns_us = resolve_address("app.test", 81, FakeDns({"app.test": ["127.0.0.3", "127.0.0.4"]}))
    assert address == (socket.AF_INET, "127.0.0.3", 81) and dns_us >= 0
    with pytest.raises(LoadError, match="cannot resolve nowhere.test"):
        resolve_address("nowhere.test", 80, FakeDns())


# -- request bytes ---------------------------------------------------------------------------------------


def _send(server: MockServer, data: bytes) -> Any:
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        sock.sendall(data)
        sock.recv(65536)
    return server.take_request()


def test_targets_build_request_is_what_the_server_reads(server: MockServer) -> None:
    server.default_response = MockResponse(200, body=b"ok")
    url = URL(server.url("/path?q=1"))
    data = build_request(
        url, "POST", [("X-A", "1"), ("accept", "text/plain")], b"body", keepalive=True, proxy=None
    )
    recorded = _send(server, data)
    assert (recorded.method, recorded.target, recorded.body) == ("POST", "/path?q=1", b"body")
    assert recorded.header("user-agent") == USER_AGENT and recorded.header("accept") == "text/plain"
    assert recorded.header("x-a") == "1" and recorded.header("content-length") == "4"
    assert recorded.header("host") == f"127.0.0.1:{server.port}" and recorded.header("connection") is None


def test_targets_build_request_without_keepalive_and_through_an_http_proxy(server: MockServer) -> None:
    server.default_response = MockResponse(200)
    url = URL("http://origin.test/x")
    proxy = Proxy.http("127.0.0.1", server.port, "user", "pw")
    recorded = _send(server, build_request(url, "GET", [], None, keepalive=False, proxy=proxy))
    assert recorded.target == "http://origin.test/x" and recorded.header("connection") == "close"
    assert recorded.header("proxy-authorization") == "Basic dXNlcjpwdw=="
    put = build_request(URL("http://origin.test/"), "PUT", [], None, keepalive=True, proxy=None)
    assert b"Content-Length: 0\r\n" in put


# -- groups and connections ------------------------------------------------------------------------------


def test_targets_plan_groups_by_connection() -> None:
    dns = FakeDns({"a.test": ["127.0.0.2"]})
    urls = [
        URL(u) for u in ("http://a.test/1", "http://a.test/2", "http://127.0.0.1:8080/", "https://a.test/")
    ]
    groups = plan_groups(urls, method="GET", headers=[], body=None, keepalive=True, proxy=None, dns=dns)
    assert [g.label for g in groups] == ["a.test:80", "127.0.0.1:8080", "a.test:443"]
    plain, literal, tls = groups
    assert (
        plain.weight == 2 and len(plain.requests) == 2 and plain.address == (socket.AF_INET, "127.0.0.2", 80)
    )
    assert plain.dns_us >= 0 and literal.dns_us == -1
    assert tls.address is None  # a Preparer makes https connections
    assert dns.lookups == ["a.test"]  # resolved once, for the group the loop connects itself


def test_targets_plan_groups_through_proxies() -> None:
    urls = [URL("http://a.test/")]
    http = plan_groups(
        urls,
        method="GET",
        headers=[],
        body=None,
        keepalive=True,
        proxy=Proxy.http("127.0.0.1", 3128),
        dns=FakeDns(),
    )
    assert http[0].address == (socket.AF_INET, "127.0.0.1", 3128)  # the loop connects to the proxy
    socks = plan_groups(
        urls,
        method="GET",
        headers=[],
        body=None,
        keepalive=True,
        proxy=Proxy.socks("127.0.0.1", 1080),
        dns=FakeDns(),
    )
    assert socks[0].address is None
    with pytest.raises(LoadError, match="credentials in the URL"):
        plan_groups(
            [URL("http://u:p@a.test/")],
            method="GET",
            headers=[],
            body=None,
            keepalive=True,
            proxy=None,
            dns=FakeDns(),
        )
    with pytest.raises(LoadError, match="TLS inside TLS"):
        plan_groups(
            [URL("https://a.test/")],
            method="GET",
            headers=[],
            body=None,
            keepalive=True,
            proxy=Proxy.https("127.0.0.1", 3129),
            dns=FakeDns(),
        )


def test_targets_spread_connections_by_weight() -> None:
    dns = FakeDns({"a.test": ["127.0.0.2"], "b.test": ["127.0.0.3"]})
    urls = [URL(u) for u in ("http://a.test/1", "http://a.test/2", "http://a.test/3", "http://b.test/")]
    groups = plan_groups(urls, method="GET", headers=[], body=None, keepalive=True, proxy=None, dns=dns)
    plan = spread(groups, 10)
    assert len(plan) == 10 and plan == sorted(plan) and set(plan) == {0, 1}
    assert (groups[0].connections, groups[1].connections) == (7, 3)
    assert spread(groups, 2) == [0, 1]  # every group gets one first
    with pytest.raises(LoadError, match="at least as many connections"):
        spread(groups, 1)


def test_targets_preparer_opens_tls_connections_with_fastnets_code(tls_server: MockServer) -> None:
    tls_server.default_response = MockResponse(200, body=b"ok")
    url = URL(tls_server.url("/"))
    groups = plan_groups(
        [url], method="GET", headers=[], body=None, keepalive=True, proxy=None, dns=FakeDns()
    )
    delivered: list[tuple[int, Any, BaseException | None, Any]] = []
    done = threading.Event()

    def deliver(index: int, sock: Any, error: BaseException | None, phases: Any) -> None:
        delivered.append((index, sock, error, phases))
        done.set()

    preparer = Preparer(
        groups, proxy=None, verify=ca_path(tls_server), dns=FakeDns(), timeout=5.0, threads=2, deliver=deliver
    )
    try:
        preparer.submit(7, 0)
        assert done.wait(10)
        index, sock, error, phases = delivered[0]
        assert index == 7 and error is None and phases[1] >= 0 and phases[2] >= 0  # connect and TLS timed
        sock.settimeout(5)  # the loop gets it non-blocking
        sock.sendall(groups[0].requests[0])
        assert sock.recv(65536).startswith(b"HTTP/1.1 200")
        sock.close()
    finally:
        preparer.close()
    with pytest.raises(LoadError, match="ended"):
        preparer.open(url)
