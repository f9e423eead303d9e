"""The DNS chain end to end: cache, system resolver and fallbacks with a blacklist, through ``Client``.

Theory of operation
-------------------
Every test builds a ``Client(dns=...)`` and fetches ``/whoami`` from nginx (which answers with the local
address it was reached on), so what is asserted is what the client really connected to. Names under
``.test`` are answered by the testbed's unbound (UDP) and dnsdist (DoH in front of unbound); the
"system" resolver of the chain is a stand-in that always fails, because the real system resolver
must never be asked for ``.test`` names (it would leave the machine). Upstream queries are counted with a
wrapper around the resolver (``Counting``) and, where a name is unique to one test, at the server, from
unbound's query log.

Route selection only resolves a name when the call needs a *new* connection; tests that look at DNS per
call therefore use ``Connection: close`` or a fresh ``Client`` per call (a fresh client also has a fresh
route database, which otherwise postpones an address that failed once and would keep the blacklist from
growing: see ``test_dns_client_route_database_postpones_before_blacklist``).
"""

from __future__ import annotations

import json
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import pytest

from fastnet import _compat
from fastnet.client import Client
from fastnet.dns import (
    RESILIENT,
    BootstrapDns,
    CachingDns,
    ChainDns,
    DohDns,
    IpBlacklist,
    SystemDns,
    UdpDns,
    default_dns,
    lookup_with_ttl,
)
from fastnet.events import EventListener
from fastnet.exceptions import ConnectError, UnknownHostError
from fastnet.testing import MockResponse, MockServer
from tests.support.clients import make_client
from tests.support.testbed import Testbed

pytestmark = [pytest.mark.testbed, pytest.mark.both_clients]

CLOSE = {"Connection": "close"}


# --------------------------------------------------------------------------- helpers


def _blacklist_of(dns: CachingDns) -> IpBlacklist:
    """The IP blacklist of a ``RESILIENT`` resolver: its chain's (the cache in front has none)."""
    chain = dns.inner
    assert isinstance(chain, ChainDns) and chain.blacklist is not None
    return chain.blacklist


def _no_system(host: str) -> list[str]:
    """Stands in for ``SystemDns`` in the chain: never finds ``.test`` names (nor asks anyone)."""
    raise UnknownHostError(f"{host}: system resolver unavailable (test stand-in)")


class Counting:
    """A ``Dns`` that counts the lookups reaching ``inner`` (optionally slowing each one down)."""

    def __init__(self, inner: Any, delay: float = 0.0) -> None:
        self.inner = inner
        self.delay = delay
        self.calls: list[str] = []
        self._lock = threading.Lock()

    def lookup(self, hostname: str) -> list[str]:
        return self.lookup_with_ttl(hostname)[0]

    def lookup_with_ttl(self, hostname: str) -> tuple[list[str], float | None]:
        with self._lock:
            self.calls.append(hostname)
        if self.delay:
            time.sleep(self.delay)
        return lookup_with_ttl(self.inner, hostname)

    def __repr__(self) -> str:
        return f"Counting({self.inner!r})"


class Recorder(EventListener):
    """Records the DNS and connect events of every call, in order."""

    def __init__(self) -> None:
        self.events: list[tuple[Any, ...]] = []
        self._lock = threading.Lock()

    def _add(self, *event: Any) -> None:
        with self._lock:
            self.events.append(event)

    def dns_start(self, call: Any, host: str) -> None:
        self._add("dns_start", host)

    def dns_end(self, call: Any, host: str, addresses: list[str]) -> None:
        self._add("dns_end", host, list(addresses))

    def connect_failed(self, call: Any, route: Any, error: BaseException) -> None:
        self._add("connect_failed", route.socket_address[0])

    def connect_end(self, call: Any, route: Any) -> None:
        self._add("connect_end", route.socket_address[0])

    def of(self, kind: str) -> list[tuple[Any, ...]]:
        with self._lock:
            return [e[1:] for e in self.events if e[0] == kind]

    def connects(self) -> list[tuple[str, str]]:
        """(outcome, ip) for every connect attempt, in order: what the route layer tried."""
        with self._lock:
            return [(e[0], e[1]) for e in self.events if e[0] in ("connect_failed", "connect_end")]

    def clear(self) -> None:
        with self._lock:
            self.events.clear()


def _client(dns: Any, listener: EventListener | None = None, **options: Any) -> Client:
    options.setdefault("connect_timeout", 5)
    options.setdefault("read_timeout", 5)
    return make_client(dns=dns, event_listener=listener, **options)


def _whoami(client: Client, url: str) -> str:
    response = client.get(url, headers=CLOSE)
    assert response.status_code == 200, response
    content = response.content
    assert content is not None
    return content.decode()


def _addr(body: str) -> str:
    """The server address nginx reports in ``/whoami``: ``addr=<ip> port=...``."""
    assert body.startswith("addr="), body
    return body.split()[0][len("addr=") :]


def _unbound_log(testbed: Testbed) -> Path:
    return Path(testbed.root) / "unbound" / "unbound.log"


def _log_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _queries_for(path: Path, offset: int, name: str, expected: int, wait: float = 3.0) -> list[str]:
    """unbound's ``log-queries`` lines for ``name`` written after ``offset``: polled (bounded) until at
    least ``expected`` appear, then once more after a short settle so late extras would show."""
    deadline = time.monotonic() + wait
    needle = f" {name}. "

    def read() -> list[str]:
        with path.open("rb") as f:
            f.seek(offset)
            text = f.read().decode(errors="replace")
        return [line.split(needle, 1)[1].strip() for line in text.splitlines() if needle in line]

    lines = read()
    for _ in range(100):
        if len(lines) >= expected or time.monotonic() > deadline:
            break
        time.sleep(0.03)
        lines = read()
    time.sleep(0.2)
    return read()


def _udp(testbed: Testbed, server: tuple[str, int] | None = None, timeout: float = 3.0) -> UdpDns:
    host, port = testbed.unbound if server is None else server
    return UdpDns(host, port, timeout=timeout)


@pytest.fixture
def doh_url(testbed: Testbed) -> str:
    """The DoH endpoint named by host (``doh.test``), so only the bootstrap list can reach it."""
    url: str = testbed.doh_url.replace("127.0.0.1", "doh.test")
    return url


@pytest.fixture
def seed_chain(testbed: Testbed, doh_url: str) -> Iterator[tuple[Any, Counting]]:
    """Seed 002's chain: cache -> system (stand-in) -> UDP (unbound) -> DoH (dnsdist), with a blacklist."""
    doh = DohDns(doh_url, bootstrap=["127.0.0.1"], verify=testbed.ca_path, timeout=5)
    udp = Counting(_udp(testbed))
    try:
        yield RESILIENT(udp, doh, system=_no_system), udp
    finally:
        doh.close()


# --------------------------------------------------------------------------- the resilient chain


def test_dns_client_seed_chain_answers_from_first_address(seed_chain: Any, testbed: Testbed) -> None:
    dns, _ = seed_chain
    recorder = Recorder()
    with _client(dns, recorder) as client:
        assert client.dns is dns
        body = _whoami(client, f"http://multi.test:{testbed.http_port}/whoami")
    assert _addr(body) == "127.0.0.3"
    assert "host=multi.test" in body
    assert recorder.of("dns_end") == [("multi.test", ["127.0.0.3", "127.0.0.1"])]
    assert recorder.connects() == [("connect_end", "127.0.0.3")]


def test_dns_client_cache_hit_makes_no_upstream_query(seed_chain: Any, testbed: Testbed) -> None:
    dns, udp = seed_chain
    recorder = Recorder()
    url = f"http://multi.test:{testbed.http_port}/whoami"
    with _client(dns, recorder) as client:
        assert _addr(_whoami(client, url)) == "127.0.0.3"
        assert _addr(_whoami(client, url)) == "127.0.0.3"  # Connection: close -> a new connection
    assert len(recorder.of("dns_start")) == 2  # the client resolved twice...
    assert udp.calls == ["multi.test"]  # ...and only the first reached a resolver
    assert dns.cache.get("multi.test") == ["127.0.0.3", "127.0.0.1"]


def test_dns_client_cache_miss_falls_through_system_and_udp_to_doh(testbed: Testbed, doh_url: Any) -> None:
    system = Counting(_no_system)
    broken_udp = Counting(_udp(testbed, testbed.refused, timeout=1))
    doh = Counting(DohDns(doh_url, bootstrap=["127.0.0.1"], verify=testbed.ca_path, timeout=5))
    try:
        dns = RESILIENT(broken_udp, doh, system=system)
        with _client(dns) as client:
            assert _addr(_whoami(client, f"http://multi.test:{testbed.http_port}/whoami")) == "127.0.0.3"
            assert _addr(_whoami(client, f"http://multi.test:{testbed.http_port}/whoami")) == "127.0.0.3"
        assert (system.calls, broken_udp.calls, doh.calls) == (["multi.test"], ["multi.test"], ["multi.test"])
    finally:
        doh.inner.close()


def test_dns_client_udp_answers_before_doh(testbed: Testbed) -> None:
    class NeverDoh:
        def lookup(self, hostname: str) -> list[str]:
            raise AssertionError("DoH must not be asked when UDP answered")

    dns = RESILIENT(_udp(testbed), NeverDoh(), system=_no_system)
    with _client(dns) as client:
        assert _addr(_whoami(client, f"http://app.test:{testbed.http_port}/whoami")) == "127.0.0.1"


# --------------------------------------------------------------------------- blacklist from real connects


def test_dns_client_blacklist_grows_from_real_connect_failures(testbed: Testbed) -> None:
    """failover.test = 127.0.0.4 (refused) then 127.0.0.1 (nginx). Each call fails over and succeeds; the
    sixth failed connect to .4 blacklists it, and from then on the client is never given .4."""
    udp = Counting(_udp(testbed))
    dns = RESILIENT(udp, system=_no_system)
    blacklist = _blacklist_of(dns)
    url = f"http://failover.test:{testbed.http_port}/whoami"
    tried: list[list[tuple[str, str]]] = []
    resolved: list[list[str]] = []
    for _ in range(9):
        recorder = Recorder()
        with _client(dns, recorder) as client:  # a fresh route database: .4 is not postponed
            assert _addr(_whoami(client, url)) == "127.0.0.1"
        tried.append(recorder.connects())
        resolved.append(recorder.of("dns_end")[0][1])
    failover = [("connect_failed", "127.0.0.4"), ("connect_end", "127.0.0.1")]
    assert tried == [failover] * 6 + [[("connect_end", "127.0.0.1")]] * 3
    assert resolved == [["127.0.0.4", "127.0.0.1"]] * 6 + [["127.0.0.1"]] * 3
    assert blacklist.blacklisted("failover.test") == ["127.0.0.4"]
    assert blacklist.failures("failover.test", "127.0.0.4") == 6
    # the cache was dropped once .4 got blacklisted, so unbound was asked again exactly once
    assert udp.calls == ["failover.test", "failover.test"]


def test_dns_client_successful_connect_resets_failure_count(testbed: Testbed) -> None:
    """A real success to an address (a listener appears on 127.0.0.4) starts its count from zero."""
    dns = RESILIENT(_udp(testbed), system=_no_system)
    blacklist = _blacklist_of(dns)
    with MockServer(host="127.0.0.1") as good:
        good.default_response = MockResponse(200, body=b"good")
        url = good.url("/", host="failover.test")
        port = good.port

        def call() -> tuple[bytes | None, list[tuple[str, str]]]:
            recorder = Recorder()
            with _client(dns, recorder) as client:
                response = client.get(url, headers=CLOSE)
            return response.content, recorder.connects()

        for _ in range(3):
            assert call() == (b"good", [("connect_failed", "127.0.0.4"), ("connect_end", "127.0.0.1")])
        assert blacklist.failures("failover.test", "127.0.0.4") == 3
        with MockServer(host="127.0.0.4", port=port) as back:
            back.default_response = MockResponse(200, body=b"back")
            assert call() == (b"back", [("connect_end", "127.0.0.4")])
        assert blacklist.failures("failover.test", "127.0.0.4") == 0
        for _ in range(5):  # counting starts again: five more failures are not enough
            assert call() == (b"good", [("connect_failed", "127.0.0.4"), ("connect_end", "127.0.0.1")])
        assert blacklist.blacklisted("failover.test") == []
        assert call()[1] == [("connect_failed", "127.0.0.4"), ("connect_end", "127.0.0.1")]
        assert blacklist.blacklisted("failover.test") == ["127.0.0.4"]
        assert call() == (b"good", [("connect_end", "127.0.0.1")])


def test_dns_client_total_failure_clears_blacklist_and_returns_collected(
    seed_chain: Any, testbed: Testbed
) -> None:
    """Nothing listens on failover.test's port: both addresses fail every time. Once both are
    blacklisted no resolver can win, so the chain clears the blacklist and hands back what it saw."""
    dns, udp = seed_chain
    blacklist = _blacklist_of(dns)
    url = f"http://failover.test:{testbed.refused[1]}/"
    both = [("connect_failed", "127.0.0.4"), ("connect_failed", "127.0.0.1")]
    for i in range(7):
        recorder = Recorder()
        with _client(dns, recorder) as client:
            with pytest.raises(ConnectError):
                client.get(url, headers=CLOSE)
        assert recorder.connects() == both, i
        assert recorder.of("dns_end") == [("failover.test", ["127.0.0.4", "127.0.0.1"])], i
        if i == 5:
            assert sorted(blacklist.blacklisted("failover.test")) == ["127.0.0.1", "127.0.0.4"]
    # the 7th call got the collected answer (UDP's, DoH's being the same) and counting started again
    assert blacklist.blacklisted("failover.test") == []
    assert blacklist.failures("failover.test", "127.0.0.4") == 1
    assert blacklist.failures("failover.test", "127.0.0.1") == 1
    assert udp.calls == ["failover.test", "failover.test"]


def test_dns_client_route_database_postpones_before_blacklist(testbed: Testbed) -> None:
    """One long-lived client: its route database tries the failed .4 last, so after one failure the
    good address answers and the blacklist count stays at one (the blacklist matters across clients)."""
    dns = RESILIENT(_udp(testbed), system=_no_system)
    recorder = Recorder()
    url = f"http://failover.test:{testbed.http_port}/whoami"
    with _client(dns, recorder) as client:
        for _ in range(4):
            assert _addr(_whoami(client, url)) == "127.0.0.1"
    assert recorder.connects() == [("connect_failed", "127.0.0.4")] + [("connect_end", "127.0.0.1")] * 4
    assert _blacklist_of(dns).failures("failover.test", "127.0.0.4") == 1


class _Hanging:
    """``ip:port`` where a connect hangs (SYN dropped) without root: a listener with a full accept queue."""

    def __init__(self, ip: str, port: int) -> None:
        self.listener = socket.socket()
        self.listener.bind((ip, port))
        self.listener.listen(0)
        self.filler = socket.create_connection((ip, port), timeout=2)

    def __enter__(self) -> _Hanging:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.filler.close()
        self.listener.close()


def test_dns_client_hanging_address_is_blacklisted_without_happy_eyeballs(testbed: Testbed) -> None:
    """failover.test's .4 hangs (connect timeout) instead of refusing: six timeouts blacklist it and
    later calls stop paying the connect timeout for it."""
    dns = RESILIENT(_udp(testbed), system=_no_system)
    with MockServer(host="127.0.0.1") as good, _Hanging("127.0.0.4", good.port):
        good.default_response = MockResponse(200, body=b"good")
        url = good.url("/", host="failover.test")
        tried: list[list[tuple[str, str]]] = []
        for _ in range(7):
            recorder = Recorder()
            with _client(dns, recorder, connect_timeout=0.3, happy_eyeballs=False) as client:
                assert client.get(url, headers=CLOSE).content == b"good"
            tried.append(recorder.connects())
    failover = [("connect_failed", "127.0.0.4"), ("connect_end", "127.0.0.1")]
    assert tried == [failover] * 6 + [[("connect_end", "127.0.0.1")]]
    assert _blacklist_of(dns).blacklisted("failover.test") == ["127.0.0.4"]


def test_dns_client_hanging_address_is_blacklisted_with_happy_eyeballs(testbed: Testbed) -> None:
    dns = RESILIENT(_udp(testbed), system=_no_system)
    with MockServer(host="127.0.0.1") as good, _Hanging("127.0.0.4", good.port):
        good.default_response = MockResponse(200, body=b"good")
        url = good.url("/", host="failover.test")
        for _ in range(6):
            with _client(dns, connect_timeout=2) as client:
                assert client.get(url, headers=CLOSE).content == b"good"
    assert _blacklist_of(dns).failures("failover.test", "127.0.0.4") == 6


def test_dns_client_stale_answer_served_when_every_resolver_fails(testbed: Testbed) -> None:
    class Switch(Counting):
        broken = False

        def lookup_with_ttl(self, hostname: str) -> tuple[list[str], float | None]:
            if self.broken:
                self.calls.append(hostname)
                raise UnknownHostError(f"{hostname}: upstream down (test switch)")
            return super().lookup_with_ttl(hostname)

    upstream = Switch(_udp(testbed))
    dns = RESILIENT(upstream, system=_no_system)
    url = f"http://multi.test:{testbed.http_port}/whoami"
    with _client(dns) as client:
        assert _addr(_whoami(client, url)) == "127.0.0.3"
        dns.cache.expire("multi.test")
        upstream.broken = True
        assert _addr(_whoami(client, url)) == "127.0.0.3"  # expired, but better than nothing
    assert upstream.calls == ["multi.test", "multi.test"]
    with pytest.raises(UnknownHostError, match="upstream down"):
        dns.lookup("app.test")  # never answered before: nothing stale to fall back on


# --------------------------------------------------------------------------- TTL, IPv6, literals


def test_dns_client_ttl_expiry(testbed: Testbed) -> None:
    udp = Counting(_udp(testbed))
    dns = RESILIENT(udp, system=_no_system, ttl=60.0)  # the record's TTL (1 s) wins over the default
    url = f"http://ttl1.test:{testbed.http_port}/whoami"
    with _client(dns) as client:
        assert _addr(_whoami(client, url)) == "127.0.0.1"
        assert _addr(_whoami(client, url)) == "127.0.0.1"
        assert len(udp.calls) == 1
        time.sleep(1.3)
        assert dns.cache.get("ttl1.test") is None
        assert _addr(_whoami(client, url)) == "127.0.0.1"
    assert udp.calls == ["ttl1.test", "ttl1.test"]


def test_dns_client_ipv6_only_name(seed_chain: Any, testbed: Testbed) -> None:
    dns, _ = seed_chain
    recorder = Recorder()
    with _client(dns, recorder) as client:
        body = _whoami(client, f"http://v6.test:{testbed.http_port}/whoami")
    assert _addr(body) == "::1"
    assert recorder.of("dns_end") == [("v6.test", ["::1"])]


def test_dns_client_dual_stack_name(seed_chain: Any, testbed: Testbed) -> None:
    dns, _ = seed_chain
    recorder = Recorder()
    with _client(dns, recorder) as client:
        assert _addr(_whoami(client, f"http://dual.test:{testbed.http_port}/whoami")) == "127.0.0.1"
    assert recorder.of("dns_end") == [("dual.test", ["127.0.0.1", "::1"])]
    # only [::1] listens on this port: the IPv4 address is refused and the call fails over to IPv6
    recorder.clear()
    with MockServer(host="::1") as server:
        server.default_response = MockResponse(200, body=b"v6 only")
        with _client(dns, recorder) as client:
            response = client.get(server.url("/", host="dual.test"), headers=CLOSE)
        assert response.content == b"v6 only"
    assert recorder.connects() == [("connect_failed", "127.0.0.1"), ("connect_end", "::1")]


def test_dns_client_ip_literals_never_reach_the_resolver(testbed: Testbed) -> None:
    class Refuse:
        def lookup(self, hostname: str) -> list[str]:
            raise AssertionError(f"the resolver was asked for {hostname}")

    recorder = Recorder()
    with _client(Refuse(), recorder) as client:
        assert _addr(_whoami(client, f"http://127.0.0.2:{testbed.http_port}/whoami")) == "127.0.0.2"
        assert _addr(_whoami(client, f"http://[::1]:{testbed.http_port}/whoami")) == "::1"
    assert recorder.of("dns_start") == []
    # the same through the resilient chain: literals are answered before any resolver is consulted
    udp = Counting(_udp(testbed))
    dns = RESILIENT(udp, system=Counting(_no_system))
    with _client(dns) as client:
        assert _addr(_whoami(client, f"http://127.0.0.3:{testbed.http_port}/whoami")) == "127.0.0.3"
    assert dns.lookup("127.0.0.3") == ["127.0.0.3"] and dns.lookup("[::1]") == ["::1"]
    assert udp.calls == []


# --------------------------------------------------------------------------- DNS over HTTPS


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_dns_client_doh_dns_message(testbed: Testbed, doh_url: Any, method: Any) -> None:
    seen: list[tuple[str, str | None]] = []

    def record(chain: Any) -> Any:
        request = chain.request
        seen.append((request.method, request.headers.get("content-type")))
        return chain.proceed(request)

    transport = Client(
        dns=BootstrapDns("doh.test", ["127.0.0.1"]),
        verify=testbed.ca_path,
        interceptors=[record],
        connect_timeout=5,
        read_timeout=5,
        trust_env=False,
    )
    doh = DohDns(doh_url, method=method, client=transport)
    try:
        dns = CachingDns(doh)
        with _client(dns) as client:
            assert _addr(_whoami(client, f"http://multi.test:{testbed.http_port}/whoami")) == "127.0.0.3"
            assert _addr(_whoami(client, f"http://v6.test:{testbed.http_port}/whoami")) == "::1"
        with pytest.raises(UnknownHostError, match="NXDOMAIN"):
            dns.lookup("nope.test")
    finally:
        doh.close()
        transport.close()
    assert len(seen) == 6  # A and AAAA for each of three names
    wanted = "application/dns-message" if method == "POST" else None
    assert set(seen) == {(method, wanted)}


def _json_answers(request: Any) -> MockResponse:
    """A Google-style JSON DNS API over the testbed's records (multi.test and v6.test)."""
    records = {
        ("multi.test", "A"): ["127.0.0.3", "127.0.0.1"],
        ("v6.test", "AAAA"): ["::1"],
    }
    query = parse_qs(request.query or "")
    name, rtype = query["name"][0], query["type"][0]
    code = {"A": 1, "AAAA": 28}[rtype]
    data = records.get((name, rtype), [])
    document = {
        "Status": 0,
        "Question": [{"name": name + ".", "type": code}],
        "Answer": [{"name": name + ".", "type": code, "TTL": 30, "data": d} for d in data],
    }
    return MockResponse(200, headers={"Content-Type": "application/json"}, body=json.dumps(document))


def test_dns_client_doh_json_against_mock_server(testbed: Testbed) -> None:
    with MockServer(tls=True) as server:
        server.dispatcher = _json_answers
        url = server.url("/resolve", host="doh.test")
        assert server.ca_path is not None
        doh = DohDns(url, bootstrap=["127.0.0.1"], format="json", verify=server.ca_path, timeout=5)
        try:
            dns = RESILIENT(doh, system=_no_system)
            recorder = Recorder()
            with _client(dns, recorder) as client:
                assert _addr(_whoami(client, f"http://multi.test:{testbed.http_port}/whoami")) == "127.0.0.3"
                assert _addr(_whoami(client, f"http://v6.test:{testbed.http_port}/whoami")) == "::1"
                assert _addr(_whoami(client, f"http://multi.test:{testbed.http_port}/whoami")) == "127.0.0.3"
        finally:
            doh.close()
        assert server.errors == []
        assert server.request_count == 4  # A + AAAA per name; the third call was a cache hit
        assert server.connection_count <= 2  # kept alive (one per parallel A/AAAA query at most)
    assert recorder.of("dns_end")[0] == ("multi.test", ["127.0.0.3", "127.0.0.1"])


# --------------------------------------------------------------------------- single flight


def test_dns_client_single_flight_under_32_threads(seed_chain: Any, testbed: Testbed) -> None:
    """32 threads call at once; every call needs a connection and so a lookup: one reaches unbound."""
    dns, udp = seed_chain
    udp.delay = 0.3  # keep the first resolution in flight while the others arrive
    recorder = Recorder()
    barrier = threading.Barrier(32)
    results: list[str] = []
    errors: list[BaseException] = []
    lock = threading.Lock()
    with _client(dns, recorder) as client:

        def worker() -> None:
            try:
                barrier.wait(timeout=10)
                body = _whoami(client, f"http://multi.test:{testbed.http_port}/whoami")
                with lock:
                    results.append(_addr(body))
            except BaseException as exc:  # noqa: BLE001 - reported below
                with lock:
                    errors.append(exc)

        threads = [threading.Thread(target=worker) for _ in range(32)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=30)
    assert not any(t.is_alive() for t in threads)
    assert errors == []
    assert results == ["127.0.0.3"] * 32
    assert len(recorder.of("dns_start")) == 32
    assert udp.calls == ["multi.test"]


def test_dns_client_single_flight_asserted_at_the_server(testbed: Testbed) -> None:
    """A name nobody else asks for (NXDOMAIN): 32 concurrent calls put exactly one A and one AAAA query
    in unbound's query log, and every call fails with UnknownHostError."""
    name = f"sf-{uuid.uuid4().hex[:12]}.test"
    log = _unbound_log(testbed)
    if not log.exists():
        pytest.skip(f"unbound query log not found at {log}")
    offset = _log_size(log)
    dns = RESILIENT(Counting(_udp(testbed), delay=0.3), system=_no_system)
    barrier = threading.Barrier(32)
    outcomes: list[BaseException | None] = []
    lock = threading.Lock()
    with _client(dns) as client:

        def worker() -> None:
            outcome: BaseException | None = None
            try:
                barrier.wait(timeout=10)
                client.get(f"http://{name}:{testbed.http_port}/", headers=CLOSE)
            except BaseException as exc:  # noqa: BLE001 - inspected below
                outcome = exc
            with lock:
                outcomes.append(outcome)

        threads = [threading.Thread(target=worker) for _ in range(32)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=30)
    assert len(outcomes) == 32
    assert all(isinstance(o, UnknownHostError) for o in outcomes), outcomes[:3]
    assert sorted(_queries_for(log, offset, name, expected=2)) == ["A IN", "AAAA IN"]


def test_dns_client_plain_function_as_dns(testbed: Testbed) -> None:
    asked: list[str] = []

    def resolve(host: str) -> list[str]:
        asked.append(host)
        return ["127.0.0.2"]

    with _client(resolve) as client:
        assert _addr(_whoami(client, f"http://app.test:{testbed.http_port}/whoami")) == "127.0.0.2"
        assert _addr(_whoami(client, f"http://127.0.0.3:{testbed.http_port}/whoami")) == "127.0.0.3"
    assert asked == ["app.test"]


# --------------------------------------------------------------------------- default and no caching


def test_dns_client_default_is_system_behind_a_10s_cache(testbed: Testbed) -> None:
    with _client(None) as client:
        dns = client.dns
        assert isinstance(dns, CachingDns)
        assert isinstance(dns.inner, SystemDns)
        assert dns.cache.default_ttl == 10.0
        assert _addr(_whoami(client, f"http://localhost:{testbed.http_port}/whoami")) in ("127.0.0.1", "::1")
        assert "localhost" in dns.cache
    assert type(default_dns()) is CachingDns


def test_dns_client_system_dns_turns_caching_off(testbed: Testbed) -> None:
    class CountingSystem(SystemDns):
        calls = 0

        def lookup(self, hostname: str) -> list[str]:
            type(self).calls += 1
            return super().lookup(hostname)

    system = CountingSystem()
    with _client(system) as client:
        assert client.dns is system
        for _ in range(3):
            body = _whoami(client, f"http://localhost:{testbed.http_port}/whoami")
            assert _addr(body) in ("127.0.0.1", "::1")
    assert CountingSystem.calls == 3  # one resolution per new connection: nothing cached


def test_dns_client_compiled_cache_is_loaded() -> None:

    if _compat.NO_EXTENSIONS:
        assert not _compat.is_compiled("fastnet.dns.cache")
        assert type(default_dns()).__module__ == "fastnet.dns.cache"
    else:
        assert _compat.is_compiled("fastnet.dns.cache")
        assert type(default_dns()).__module__ == "fastnet.dns.cache"
