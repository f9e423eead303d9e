"""Client: option validation, siblings from with_options, lifecycle, the request methods and Call."""

from __future__ import annotations

import enum
import ssl
from typing import Any

import pytest

import fastnet
from fastnet.testing import MockResponse, MockServer
from tests.support.clients import make_client, make_fast_client
from tests.support.fakes import FakeDns
from tests.support.wire import CRAWLED_TARGETS

pytestmark = pytest.mark.both_clients

# -- options --------------------------------------------------------------------------------------


def test_client_defaults() -> None:
    with fastnet.Client() as c:
        assert c.connect_timeout == 10 and c.read_timeout == 10 and c.write_timeout == 10
        assert c.call_timeout is None and c.follow_redirects is True and c.verify is True
        assert c.retry_on_connection_failure is True
        assert isinstance(c.connection_pool, fastnet.ConnectionPool)


def test_client_accepts_every_documented_option() -> None:
    pool = fastnet.ConnectionPool()
    with fastnet.Client(
        connect_timeout=1,
        read_timeout=2.5,
        write_timeout=None,
        call_timeout=30,
        follow_redirects=False,
        follow_ssl_redirects=False,
        retry_on_connection_failure=False,
        proxy=None,
        proxy_selector=None,
        authenticator=None,
        proxy_authenticator=None,
        dns=None,
        interceptors=(),
        network_interceptors=[],
        cookie_jar=fastnet.MemoryCookieJar(),
        connection_pool=pool,
        event_listener=fastnet.EventListener(),
        verify=False,
    ) as c:
        assert c.connection_pool is pool and c.read_timeout == 2.5 and c.write_timeout is None


@pytest.mark.parametrize(
    ("options", "error", "names"),
    [
        ({"bogus": 1}, TypeError, "bogus"),
        ({"connect_timeout": -1}, ValueError, "connect_timeout"),
        ({"read_timeout": "5"}, TypeError, "read_timeout"),
        ({"write_timeout": float("nan")}, ValueError, "write_timeout"),
        ({"call_timeout": True}, TypeError, "call_timeout"),
        ({"read_timeout": 1e12}, ValueError, "read_timeout"),
        ({"follow_redirects": "yes"}, TypeError, "follow_redirects"),
        ({"follow_ssl_redirects": 1}, TypeError, "follow_ssl_redirects"),
        ({"retry_on_connection_failure": None}, TypeError, "retry_on_connection_failure"),
        ({"max_follow_ups": -1}, ValueError, "max_follow_ups"),
        ({"proxy": 8080}, TypeError, "proxy"),
        ({"proxy_selector": object()}, TypeError, "proxy_selector"),
        ({"authenticator": 5}, TypeError, "authenticator"),
        ({"proxy_authenticator": 5}, TypeError, "proxy_authenticator"),
        ({"dns": 5}, TypeError, "dns"),
        ({"interceptors": "abc"}, TypeError, "interceptors"),
        ({"interceptors": [5]}, TypeError, "interceptors"),
        ({"network_interceptors": [object()]}, TypeError, "network_interceptors"),
        ({"cookie_jar": object()}, TypeError, "cookie_jar"),
        ({"connection_pool": object()}, TypeError, "connection_pool"),
        ({"event_listener": object()}, TypeError, "event_listener"),
        ({"event_listener_factory": 5}, TypeError, "event_listener_factory"),
        ({"verify": 5}, TypeError, "verify"),
        ({"verify": "/no/such/ca.pem"}, ValueError, "verify"),
        ({"max_connections_per_host": 0}, ValueError, "max_connections_per_host"),
        ({"max_connections_per_host": "2"}, TypeError, "max_connections_per_host"),
        ({"user_agent": 5}, TypeError, "user_agent"),
        ({"user_agent": "x\r\ny"}, ValueError, "User-Agent"),
        ({"sensitive_headers": "Authorization"}, TypeError, "sensitive_headers"),
        ({"happy_eyeballs": "no"}, TypeError, "happy_eyeballs"),
        ({"trust_env": 0}, TypeError, "trust_env"),
    ],
)
def test_client_options_validated_with_clear_messages(
    options: dict[str, Any], error: type, names: str
) -> None:
    with pytest.raises(error, match=names):
        fastnet.Client(**options)


def test_client_pool_and_per_host_limit_conflict() -> None:
    with pytest.raises(ValueError, match="max_connections_per_host"):
        fastnet.Client(connection_pool=fastnet.ConnectionPool(), max_connections_per_host=2)


def test_client_unknown_option_in_with_options() -> None:
    with fastnet.Client() as c, pytest.raises(TypeError, match="nope"):
        c.with_options(nope=1)  # type: ignore[call-arg]


def test_client_misspelt_option_suggests_the_nearest() -> None:
    with pytest.raises(TypeError, match=r"'read_timeot' \(did you mean 'read_timeout'\?\)"):
        fastnet.Client(read_timeot=5)  # type: ignore[call-arg]
    with fastnet.Client() as c, pytest.raises(TypeError, match=r"did you mean 'connect_timeout'"):
        c.with_options(conect_timeout=1)  # type: ignore[call-arg]


def test_client_signature_is_explicit_and_shared_by_with_options() -> None:
    import inspect

    init = inspect.signature(fastnet.Client)
    assert (
        "read_timeout" in init.parameters
        and init.parameters["read_timeout"].kind is inspect.Parameter.KEYWORD_ONLY
    )
    assert not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in init.parameters.values())
    assert list(inspect.signature(fastnet.Client().with_options).parameters) == list(init.parameters)


def test_client_options_are_read_only_attributes_and_a_frozen_value() -> None:
    with fastnet.Client(read_timeout=3) as c:
        assert c.read_timeout == 3 and c.config.read_timeout == 3
        assert c.with_options(read_timeout=4).config.read_timeout == 4 and c.read_timeout == 3
        with pytest.raises(AttributeError):
            c.read_timeout = 5
        with pytest.raises(AttributeError):
            c.config.read_timeout = 5  # type: ignore[misc]


def test_client_with_options_validates_too() -> None:
    with fastnet.Client() as c, pytest.raises(ValueError, match="read_timeout"):
        c.with_options(read_timeout=-5)


def test_client_with_options_shares_pool_and_route_database(server: MockServer) -> None:
    with fastnet.Client(trust_env=False) as parent:
        sibling = parent.with_options(read_timeout=3, follow_redirects=False)
        assert sibling is not parent
        assert sibling.read_timeout == 3 and parent.read_timeout == 10
        assert sibling.follow_redirects is False and parent.follow_redirects is True
        assert sibling.connection_pool is parent.connection_pool
        assert sibling.route_database is parent.route_database
        assert sibling.dns is parent.dns
        server.enqueue(MockResponse(200, body=b"a"), MockResponse(200, body=b"b"))
        assert parent.get(server.url("/")).content == b"a"
        assert sibling.get(server.url("/")).content == b"b"
        # the sibling reused the parent's pooled connection
        assert server.take_request().connection_index == server.take_request().connection_index
        assert parent.connection_pool.connection_count() == 1


def test_client_with_options_route_options_get_own_route_database() -> None:
    with fastnet.Client(trust_env=False) as parent:
        other = parent.with_options(verify=False)
        assert other.connection_pool is parent.connection_pool
        assert other.route_database is not parent.route_database


def test_client_with_options_own_pool_when_limit_changes() -> None:
    with fastnet.Client() as parent:
        limited = parent.with_options(max_connections_per_host=2)
        assert limited.connection_pool is not parent.connection_pool
        assert limited.connection_pool.max_connections_per_host == 2


def test_client_context_manager_and_close_evict_idle_connections(server: MockServer) -> None:
    server.enqueue(MockResponse(200))
    with fastnet.Client(trust_env=False) as c:
        c.get(server.url("/"))
        pool = c.connection_pool
        assert pool.idle_connection_count() == 1
    assert pool.idle_connection_count() == 0 and pool.connection_count() == 0
    c.close()  # idempotent


def test_client_repr() -> None:
    with fastnet.Client() as c:
        assert "fastnet.Client" in repr(c)


def test_client_user_agent_may_be_a_str_subclass(server: MockServer) -> None:
    class Agent(enum.StrEnum):
        CRAWLER = "crawler/1.0"

    server.enqueue(MockResponse(200))
    with make_fast_client(user_agent=Agent.CRAWLER) as client:
        client.get(server.url("/"))
    assert server.take_request().header("user-agent") == "crawler/1.0"


# -- request methods --------------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["get", "head", "options", "delete"])
def test_client_methods_without_body(server: MockServer, fast_client: fastnet.Client, method: str) -> None:
    server.enqueue(MockResponse(200, body=b"ok"))
    r = getattr(fast_client, method)(server.url("/m"), headers={"X-A": "1"})
    rec = server.take_request()
    assert rec.method == method.upper() and rec.path == "/m" and rec.header("x-a") == "1"
    assert r.status_code == 200 and r.content == (b"" if method == "head" else b"ok")


def test_client_sends_the_request_target_of_a_url_as_found(
    server: MockServer, fast_client: fastnet.Client
) -> None:
    origin = f"http://127.0.0.1:{server.port}"
    for found, _ in CRAWLED_TARGETS:
        server.enqueue(MockResponse(200))
        fast_client.get(origin + found)
    for found, target in CRAWLED_TARGETS:
        line = server.take_request().raw_head.split(b"\r\n", 1)[0]
        assert line == b"GET " + target.encode("ascii") + b" HTTP/1.1", found


def test_client_request_target_after_a_redirect_and_for_an_idna_host(server: MockServer) -> None:
    server.enqueue(MockResponse(302, headers={"Location": "/to?data[0]=a|b&c=\\d"}), MockResponse(200))
    server.enqueue(MockResponse(200))
    dns = FakeDns({"xn--bcher-kva.example": ["127.0.0.1"]})
    with make_fast_client(dns=dns) as client:
        client.get(server.url("/from?x=[1]"))
        client.get(f"http://b\u00fccher.example:{server.port}/p\u00e4th/[x]?q=\u00fc|[y]#frag")
    first, redirected, idna = server.take_request(), server.take_request(), server.take_request()
    assert (first.target, redirected.target) == ("/from?x=[1]", "/to?data[0]=a|b&c=\\d")
    assert idna.target == "/p%C3%A4th/[x]?q=%C3%BC|[y]"
    assert idna.header("host") == f"xn--bcher-kva.example:{server.port}" and dns.lookups == [
        "xn--bcher-kva.example"
    ]


@pytest.mark.parametrize("method", ["post", "put", "patch"])
def test_client_methods_with_body_and_json(
    server: MockServer, fast_client: fastnet.Client, method: str
) -> None:
    server.enqueue(MockResponse(200), MockResponse(200))
    getattr(fast_client, method)(server.url("/b"), body=b"raw")
    getattr(fast_client, method)(server.url("/j"), json=[1])
    rec, rec_json = server.take_request(), server.take_request()
    assert rec.method == method.upper() and rec.body == b"raw"
    assert rec_json.body == b"[1]" and rec_json.header("content-type") == "application/json"


def test_client_delete_with_body(server: MockServer, fast_client: fastnet.Client) -> None:
    server.enqueue(MockResponse(200))
    fast_client.delete(server.url("/"), body=b"gone")
    assert server.take_request().body == b"gone"


def test_client_request_any_method(server: MockServer, fast_client: fastnet.Client) -> None:
    server.enqueue(MockResponse(207, body=b"multi"))
    r = fast_client.request("PROPFIND", server.url("/dav"), headers=[("Depth", "1")], body="<x/>")
    rec = server.take_request()
    assert rec.method == "PROPFIND" and rec.header("depth") == "1" and rec.body == b"<x/>"
    assert r.status_code == 207 and r.content == b"multi"


def test_client_request_accepts_url_object(server: MockServer, fast_client: fastnet.Client) -> None:
    server.enqueue(MockResponse(200))
    assert fast_client.get(fastnet.URL(server.url("/u"))).status_code == 200
    assert server.take_request().path == "/u"


def test_client_get_reads_the_body_and_pools(server: MockServer, fast_client: fastnet.Client) -> None:
    server.enqueue(MockResponse(200, body=b"x" * 200_000))
    r = fast_client.get(server.url("/"))
    assert fast_client.connection_pool.idle_connection_count() == 1
    assert len(r.content) == 200_000


def test_client_stream_holds_the_connection_until_closed(
    server: MockServer, fast_client: fastnet.Client
) -> None:
    server.enqueue(MockResponse(200, body=b"streamed"))
    with fast_client.stream("GET", server.url("/")) as r:
        assert fast_client.connection_pool.idle_connection_count() == 0
        assert fast_client.connection_pool.connection_count() == 1
        assert b"".join(r.iter_bytes()) == b"streamed"
    assert fast_client.connection_pool.idle_connection_count() == 1


def test_client_stream_post(server: MockServer, fast_client: fastnet.Client) -> None:
    server.enqueue(MockResponse(200, body=b"ok"))
    with fast_client.stream("POST", server.url("/"), json={"a": 1}) as r:
        assert r.read() == b"ok"
    assert server.take_request().body == b'{"a":1}'


def test_client_unknown_scheme_rejected(fast_client: fastnet.Client) -> None:
    with pytest.raises(ValueError, match="scheme"):
        fast_client.get("ftp://127.0.0.1/")


# -- Call ---------------------------------------------------------------------------------------------


def test_call_executes_once(server: MockServer, fast_client: fastnet.Client) -> None:
    server.enqueue(MockResponse(200, body=b"once"))
    request = fastnet.Request("POST", server.url("/c"), headers={"X": "1"}, body=b"b")
    call = fast_client.new_call(request)
    assert isinstance(call, fastnet.Call)
    assert call.request is request and not call.is_executed and not call.is_canceled
    with call.execute() as r:
        assert r.content == b"once" and r.request is not None and r.request.method == "POST"
    assert call.is_executed
    with pytest.raises(RuntimeError, match="Already Executed"):
        call.execute()
    assert server.request_count == 1


def test_call_cancel_before_execute(server: MockServer, fast_client: fastnet.Client) -> None:
    call = fast_client.new_call(fastnet.Request("GET", server.url("/")))
    call.cancel()
    assert call.is_canceled
    with pytest.raises(fastnet.CanceledError):
        call.execute()
    assert server.request_count == 0
    call.cancel()  # idempotent


def test_call_clone_runs_again(server: MockServer, fast_client: fastnet.Client) -> None:
    server.enqueue(MockResponse(200, body=b"1"), MockResponse(200, body=b"2"))
    call = fast_client.new_call(fastnet.Request("GET", server.url("/")))
    assert call.execute().content == b"1"
    again = call.clone()
    assert not again.is_executed and again.execute().content == b"2"


def test_call_new_call_type_checked(fast_client: fastnet.Client) -> None:
    with pytest.raises(TypeError, match="Request"):
        fast_client.new_call("http://127.0.0.1/")  # type: ignore[arg-type]


def test_client_verify_ssl_context_accepted() -> None:
    context = ssl.create_default_context()
    with fastnet.Client(verify=context) as c:
        assert c.verify is context


def test_client_local_address(server: MockServer) -> None:
    """Sockets bind to local_address before connecting: the server sees it as the client's address;
    siblings with another local address never share a pooled connection."""
    server.enqueue(*[MockResponse(200, body=b"ok")] * 4)
    with make_client(local_address="127.0.0.2") as client:
        assert client.get(server.url("/")).content == b"ok"
        assert client.get(server.url("/")).content == b"ok"
        other = client.with_options(local_address="127.0.0.3")
        assert other.get(server.url("/")).content == b"ok"
        assert client.with_options(local_address=None).get(server.url("/")).content == b"ok"
    seen = [server.take_request() for _ in range(4)]
    assert [r.client_address[0] for r in seen if r.client_address] == [
        "127.0.0.2",
        "127.0.0.2",
        "127.0.0.3",
        "127.0.0.1",
    ]
    assert seen[0].connection_index == seen[1].connection_index  # pooled for the same local address
    assert len({r.connection_index for r in seen}) == 3


def test_client_local_address_errors(server: MockServer) -> None:
    with pytest.raises(ValueError, match="local_address must be an IP address"):
        make_client(local_address="localhost")
    with pytest.raises(TypeError, match="local_address"):
        make_client(local_address=("127.0.0.2", 0))
    with make_client(local_address="::1") as client:  # an IPv6 source cannot reach an IPv4 server
        with pytest.raises(fastnet.ConnectError, match="cannot connect to an IPv4 address"):
            client.get(server.url("/"))
