"""Authenticators and credentials: 401 and 407 follow-ups over real loopback sockets (the challenges they
read: test_challenge.py)."""

from __future__ import annotations

import base64
import pickle

import pytest

import fastnet
from fastnet.authenticator import NONE, PREEMPTIVE_SCHEME
from fastnet.testing import MockResponse, MockServer
from tests.support.clients import assert_pool_clean, make_client

pytestmark = pytest.mark.both_clients

GOOD = fastnet.Credentials.basic("alice", "s3cret")


def challenge_401(value: str | None = 'Basic realm="api"') -> MockResponse:
    headers = {"WWW-Authenticate": value} if value is not None else {}
    return MockResponse(401, headers=headers, body=b"who are you")


# ------------------------------------------------------------------------------------------------ credentials


def test_authenticator_credentials_basic():
    assert fastnet.Credentials.basic("aladdin", "opensesame") == "Basic YWxhZGRpbjpvcGVuc2VzYW1l"
    utf8 = fastnet.Credentials.basic("jürgen", "pässword")
    latin1 = fastnet.Credentials.basic("jürgen", "pässword", charset="ISO-8859-1")
    assert base64.b64decode(utf8[6:]) == "jürgen:pässword".encode()
    assert base64.b64decode(latin1[6:]) == "jürgen:pässword".encode("latin-1")


def test_authenticator_credentials_bad_input():
    with pytest.raises(ValueError):
        fastnet.Credentials.basic("a:b", "pw")
    with pytest.raises(TypeError):
        fastnet.Credentials.basic(None, "pw")  # type: ignore[arg-type]
    with pytest.raises(UnicodeEncodeError):
        fastnet.Credentials.basic("名前", "pw", charset="ascii")
    assert fastnet.Credentials.bearer("abc.DEF-123==") == "Bearer abc.DEF-123=="
    for bad in ("", "a b", "tok\r\nX-Injected: 1", "==="):
        with pytest.raises(ValueError):
            fastnet.Credentials.bearer(bad)


def test_authenticator_basic_repr_hides_password():
    assert "s3cret" not in repr(fastnet.BasicAuthenticator("alice", "s3cret"))


# ------------------------------------------------------------------------------------------------ NONE


def test_authenticator_none():
    assert fastnet.Authenticator.NONE is NONE
    assert NONE.authenticate(None, fastnet.Response(401)) is None
    assert isinstance(NONE, fastnet.Authenticator) and isinstance(
        fastnet.BasicAuthenticator("a", "b"), fastnet.Authenticator
    )
    assert not isinstance(object(), fastnet.Authenticator)
    assert pickle.loads(pickle.dumps(NONE)) is NONE


def test_authenticator_none_returns_the_401(server):
    with make_client(authenticator=fastnet.Authenticator.NONE) as client:
        server.enqueue(challenge_401())
        r = client.get(server.url("/"))
        assert r.status_code == 401 and r.text == "who are you"
        assert_pool_clean(client)


# ------------------------------------------------------------------------------------------------ 401


def test_authenticator_401_then_200(server):
    with make_client(authenticator=fastnet.BasicAuthenticator("alice", "s3cret")) as client:
        server.enqueue(challenge_401(), MockResponse(200, body=b"welcome"))
        r = client.get(server.url("/private"))
        assert r.text == "welcome"
        assert [p.status_code for p in r.history] == [401]
        first, second = server.take_request(), server.take_request()
        assert first.header("Authorization") is None
        assert second.header("Authorization") == GOOD
        assert second.connection_index == first.connection_index
        assert_pool_clean(client)


def test_authenticator_plain_function(server):
    seen = []

    def auth(route, response):
        seen.append((route, response.status_code, response.challenges()))
        return response.request.replace(headers=response.request.headers.set("Authorization", "Bearer t"))

    with make_client(authenticator=auth) as client:
        server.enqueue(challenge_401("Bearer"), MockResponse(200))
        assert client.get(server.url("/")).status_code == 200
        route, status, challenges = seen[0]
        assert route is not None and status == 401 and challenges == [fastnet.Challenge("Bearer")]
        server.take_request()
        assert server.take_request().header("Authorization") == "Bearer t"


def test_authenticator_basic_gives_up_when_refused(server):
    with make_client(authenticator=fastnet.BasicAuthenticator("alice", "wrong")) as client:
        server.dispatcher = lambda rec: challenge_401()
        r = client.get(server.url("/"))
        assert r.status_code == 401 and len(r.history) == 1
        assert server.request_count == 2
        assert_pool_clean(client)


def test_authenticator_basic_gives_up_when_request_already_carries_credentials(server):
    with make_client(authenticator=fastnet.BasicAuthenticator("alice", "s3cret")) as client:
        server.enqueue(challenge_401())
        r = client.get(server.url("/"), headers={"Authorization": GOOD})
        assert r.status_code == 401 and server.request_count == 1


def test_authenticator_basic_ignores_non_basic_challenges(server):
    with make_client(authenticator=fastnet.BasicAuthenticator("alice", "s3cret")) as client:
        server.enqueue(challenge_401('Bearer realm="api", Digest realm="x", nonce="1"'))
        r = client.get(server.url("/"))
        assert r.status_code == 401 and server.request_count == 1


def test_authenticator_401_without_www_authenticate(server):
    with make_client() as client:
        server.enqueue(challenge_401(None))
        assert client.get(server.url("/")).status_code == 401
    with make_client(authenticator=fastnet.BasicAuthenticator("alice", "s3cret")) as client:
        server.dispatcher = lambda rec: challenge_401(None)
        r = client.get(server.url("/"))
        assert r.status_code == 401 and r.challenges() == []
        assert len(r.history) == 1  # answered once, then gave up
        assert_pool_clean(client)


@pytest.mark.parametrize("how", ["set", "add"])
def test_authenticator_same_credentials_forever_stops_at_21(server, how):
    """OkHttp's scenario (its test authenticator adds the same credential to every retry): whatever the
    authenticator answers is sent, 20 times, and the 21st answer is the "too many follow-up requests"
    error. Giving up on refused credentials is the authenticator's job (``BasicAuthenticator`` does)."""
    calls = []

    def stubborn(route, response):
        calls.append(response.status_code)
        headers = response.request.headers
        if how == "add":
            return response.request.replace(headers=headers.add("Authorization", "Bearer same"))
        return response.request.replace(headers=headers.set("Authorization", "Bearer same"))

    with make_client(authenticator=stubborn) as client:
        server.dispatcher = lambda rec: challenge_401("Bearer")
        with pytest.raises(fastnet.ProtocolError, match="Too many follow-up requests: 21"):
            client.get(server.url("/"))
        assert server.request_count == 21 and len(calls) == 21
        assert server.take_request(timeout=1).header("Authorization") is None
        for _ in range(20):
            assert "Bearer same" in server.take_request(timeout=1).header_values("Authorization")
        assert_pool_clean(client)


def test_authenticator_same_credentials_accepted_on_the_fourth_try(server):
    """OkHttp's ``authenticateWithGet``: three 401s, then the server accepts the same credentials."""

    def same(route, response):
        return response.request.replace(headers=response.request.headers.set("Authorization", GOOD))

    with make_client(authenticator=same) as client:
        for _ in range(3):
            server.enqueue(challenge_401("Basic"))
        server.enqueue(MockResponse(200, body=b"Successful auth!"))
        r = client.get(server.url("/"))
        assert r.text == "Successful auth!" and [h.status_code for h in r.history] == [401, 401, 401]
        assert server.take_request().header("Authorization") is None
        for _ in range(3):
            assert server.take_request().header("Authorization") == GOOD
        assert_pool_clean(client)


def test_authenticator_new_credentials_forever_stops_at_21(server):
    """Fresh credentials on every 401 (OkHttp's scenario): the authenticator gets its 20 tries, each sent,
    and the 21st answer is the "too many follow-up requests" error."""
    counter = iter(range(1000))
    answered = []

    def refreshing(route, response):
        token = f"Bearer t{next(counter)}"
        answered.append(token)
        return response.request.replace(headers=response.request.headers.set("Authorization", token))

    with make_client(authenticator=refreshing) as client:
        server.dispatcher = lambda rec: challenge_401("Bearer")
        with pytest.raises(fastnet.ProtocolError, match="Too many follow-up requests: 21"):
            client.get(server.url("/"))
        assert server.request_count == 21 and len(answered) == 21
        sent = [server.take_request(timeout=1).header("Authorization") for _ in range(21)]
        assert sent == [None, *answered[:20]]
        assert_pool_clean(client)


def test_authenticator_a_new_credential_beside_the_refused_one_is_sent(server):
    """Only the very credentials just refused stop the follow-ups: an answer that adds a new one beside
    them is sent."""

    def add_fresh(route, response):
        return response.request.replace(headers=response.request.headers.add("Authorization", "Bearer new"))

    with make_client(authenticator=add_fresh) as client:
        server.enqueue(challenge_401("Bearer"), MockResponse(200, body=b"in"))
        r = client.get(server.url("/"), headers={"Authorization": "Bearer old"})
        assert r.text == "in" and len(r.history) == 1
        server.take_request()
        assert server.take_request().header_values("Authorization") == ["Bearer old", "Bearer new"]
        assert_pool_clean(client)


def test_authenticator_redirects_and_auth_answers_count_together(server):
    """10 redirects, then 401s answered with fresh credentials: the 21st follow-up of either kind is the
    error."""
    counter = iter(range(1000))

    def refreshing(route, response):
        token = f"Bearer t{next(counter)}"
        return response.request.replace(headers=response.request.headers.set("Authorization", token))

    def dispatch(rec):
        hop = int(rec.path.strip("/") or 0)
        if hop < 10:
            return MockResponse(302, headers={"Location": f"/{hop + 1}"})
        return challenge_401("Bearer")

    with make_client(authenticator=refreshing) as client:
        server.dispatcher = dispatch
        with pytest.raises(fastnet.ProtocolError, match="Too many follow-up requests: 21"):
            client.get(server.url("/0"))
        assert server.request_count == 21
        assert_pool_clean(client)


def test_authenticator_that_raises_reaches_caller_unchanged(server):
    boom = KeyError("token store unavailable")

    def broken(route, response):
        raise boom

    with make_client(authenticator=broken) as client:
        server.enqueue(challenge_401(), MockResponse(200))
        with pytest.raises(KeyError) as info:
            client.get(server.url("/"))
        assert info.value is boom
        pool = client.connection_pool
        assert pool.connection_count() == 1 and pool.idle_connection_count() == 1  # released, reusable
        assert client.get(server.url("/")).status_code == 200


def test_authenticator_network_error_from_authenticator(server):
    def broken(route, response):
        raise fastnet.ConnectError("token endpoint down")

    with make_client(authenticator=broken) as client:
        server.enqueue(challenge_401())
        with pytest.raises(fastnet.ConnectError, match="token endpoint down"):
            client.get(server.url("/"))
        assert server.request_count == 1
        assert_pool_clean(client)


def test_authenticator_wrong_return_type(server):
    with make_client(authenticator=lambda route, response: "Basic abc") as client:
        server.enqueue(challenge_401())
        with pytest.raises(TypeError, match="expected a fastnet.Request"):
            client.get(server.url("/"))
        assert_pool_clean(client)


def test_authenticator_one_shot_body_returns_401(server):
    with make_client(authenticator=fastnet.BasicAuthenticator("alice", "s3cret")) as client:
        server.enqueue(challenge_401(), MockResponse(200))
        r = client.post(server.url("/"), body=iter([b"once"]))
        assert r.status_code == 401 and server.request_count == 1
        assert_pool_clean(client)


def test_authenticator_replays_replayable_body(server):
    with make_client(authenticator=fastnet.BasicAuthenticator("alice", "s3cret")) as client:
        server.enqueue(challenge_401(), MockResponse(201))
        assert client.post(server.url("/"), body=b"data").status_code == 201
        assert server.take_request().body == b"data"
        again = server.take_request()
        assert again.body == b"data" and again.header("Authorization") == GOOD


def test_authenticator_basic_never_answers_another_origin():
    with MockServer(host="127.0.0.1") as one, MockServer(host="127.0.0.2") as two:
        with make_client(authenticator=fastnet.BasicAuthenticator("alice", "s3cret")) as client:
            one.enqueue(MockResponse(302, headers={"Location": two.url("/")}))
            two.enqueue(challenge_401())
            r = client.get(one.url("/"))
            assert r.status_code == 401
            assert two.request_count == 1 and two.take_request().header("Authorization") is None
        # an explicit origin lets it answer there (and only there)
        with make_client(
            authenticator=fastnet.BasicAuthenticator("alice", "s3cret", origin=two.url("/"))
        ) as client:
            one.enqueue(MockResponse(302, headers={"Location": two.url("/")}))
            two.enqueue(challenge_401(), MockResponse(200))
            assert client.get(one.url("/")).status_code == 200
            two.take_request()
            assert two.take_request().header("Authorization") == GOOD


# ------------------------------------------------------------------------------------------------ 407


def test_authenticator_407_without_proxy_is_a_protocol_error(server):
    with make_client(proxy_authenticator=fastnet.BasicAuthenticator("p", "pw")) as client:
        server.enqueue(MockResponse(407, headers={"Proxy-Authenticate": "Basic"}, body=b"x"))
        with pytest.raises(fastnet.ProtocolError, match="407"):
            client.get(server.url("/"))
        assert_pool_clean(client)


def test_407_without_proxy_or_proxy_authenticator_is_returned(server):
    with make_client() as client:
        server.enqueue(MockResponse(407, headers={"Proxy-Authenticate": "Basic"}, body=b"x"))
        r = client.get(server.url("/"))
        assert r.status_code == 407 and r.text == "x" and r.history == []
        assert_pool_clean(client)


def test_authenticator_407_plain_http_through_http_proxy(server):
    proxy = fastnet.Proxy.http("127.0.0.1", server.port)
    auth = fastnet.BasicAuthenticator("proxyuser", "proxypw")
    with make_client(proxy=proxy, proxy_authenticator=auth) as client:
        server.enqueue(
            MockResponse(407, headers={"Proxy-Authenticate": 'Basic realm="proxy"'}),
            MockResponse(200, body=b"via proxy"),
        )
        r = client.get("http://origin.test/page")
        assert r.text == "via proxy" and [p.status_code for p in r.history] == [407]
        first, second = server.take_request(), server.take_request()
        assert first.target == "http://origin.test/page" and first.header("Proxy-Authorization") is None
        assert second.header("Proxy-Authorization") == auth.credentials
        assert second.header("Authorization") is None
        assert_pool_clean(client)


def test_authenticator_407_plain_http_wrong_credentials_returns_407(server):
    proxy = fastnet.Proxy.http("127.0.0.1", server.port)
    with make_client(proxy=proxy, proxy_authenticator=fastnet.BasicAuthenticator("u", "bad")) as client:
        server.dispatcher = lambda rec: MockResponse(407, headers={"Proxy-Authenticate": "Basic"})
        r = client.get("http://origin.test/")
        assert r.status_code == 407 and server.request_count == 2
        assert_pool_clean(client)


def test_authenticator_407_from_origin_inside_tunnel_is_returned():
    calls = []

    def recording(route, response):
        calls.append((response.status_code, [c.scheme for c in response.challenges()]))
        return None

    with MockServer(tls=True) as server:
        proxy = fastnet.Proxy.http("127.0.0.1", server.port)
        with make_client(proxy=proxy, proxy_authenticator=recording, verify=server.ca_path) as client:
            server.enqueue(
                MockResponse(200, tunnel=True),
                MockResponse(407, headers={"Proxy-Authenticate": 'Basic realm="origin"'}, body=b"origin 407"),
            )
            r = client.get(f"https://127.0.0.1:{server.port}/")
            assert r.status_code == 407 and r.text == "origin 407"
            # only the pre-emptive question before CONNECT, never the origin's 407
            assert calls == [(407, [PREEMPTIVE_SCHEME])]
            connect, inner = server.take_request(), server.take_request()
            assert connect.method == "CONNECT" and inner.tls
            assert_pool_clean(client)


def test_authenticator_connect_preemptive_basic_credentials():
    with MockServer(tls=True) as server:
        proxy = fastnet.Proxy.http("127.0.0.1", server.port)
        auth = fastnet.BasicAuthenticator("proxyuser", "proxypw")
        with make_client(proxy=proxy, proxy_authenticator=auth, verify=server.ca_path) as client:
            server.enqueue(MockResponse(200, tunnel=True), MockResponse(200, body=b"secure"))
            assert client.get(f"https://127.0.0.1:{server.port}/").text == "secure"
            connect, inner = server.take_request(), server.take_request()
            assert connect.header("Proxy-Authorization") == auth.credentials
            assert inner.header("Proxy-Authorization") is None  # never handed to the origin


def test_authenticator_connect_refused_credentials_raise_proxy_error():
    with MockServer(tls=True) as server:
        proxy = fastnet.Proxy.http("127.0.0.1", server.port)
        with make_client(
            proxy=proxy, proxy_authenticator=fastnet.BasicAuthenticator("u", "bad"), verify=server.ca_path
        ) as client:
            server.dispatcher = lambda rec: MockResponse(407, headers={"Proxy-Authenticate": "Basic"})
            with pytest.raises(fastnet.ProxyError) as info:
                client.get(f"https://127.0.0.1:{server.port}/")
            assert info.value.status_code == 407
            assert server.request_count == 1  # the pre-emptive credentials were refused: no second try
            assert_pool_clean(client)
