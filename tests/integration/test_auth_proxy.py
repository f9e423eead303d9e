"""407 from a real squid (Basic auth), and a redirect that moves from an HTTP-proxy route to a SOCKS route."""

from __future__ import annotations

from typing import Any

import pytest

import fastnet
from fastnet.testing import MockResponse, MockServer
from tests.support.clients import assert_pool_clean, route_of
from tests.support.testbed import Testbed

pytestmark = pytest.mark.testbed


def squid(testbed: Testbed) -> fastnet.Proxy:
    return fastnet.Proxy.http(*testbed.squid)


def test_auth_proxy_plain_http_407_then_200(testbed: Testbed):
    auth = fastnet.BasicAuthenticator(testbed.squid_user, testbed.squid_password)
    with fastnet.Client(trust_env=False, proxy=squid(testbed), proxy_authenticator=auth) as client:
        r = client.get(testbed.url("/whoami"))
        assert r.status_code == 200 and "addr=127.0.0.1" in r.text
        assert [p.status_code for p in r.history] == [407]
        assert r.history[0].challenges()[0].scheme == "Basic"
        assert r.history[0].challenges()[0].realm == "fastnet-squid"
        assert r.request is not None
        assert r.request.header("Proxy-Authorization") == auth.credentials
        assert_pool_clean(client)


def test_auth_proxy_https_tunnel_preemptive(testbed: Testbed):
    auth = fastnet.BasicAuthenticator(testbed.squid_user, testbed.squid_password)
    with fastnet.Client(
        trust_env=False, proxy=squid(testbed), proxy_authenticator=auth, verify=testbed.ca_path
    ) as client:
        r = client.get(testbed.url("/whoami", tls=True))
        assert r.status_code == 200 and "scheme=https" in r.text
        assert r.history == []  # credentials went with the first CONNECT
        assert_pool_clean(client)


def test_auth_proxy_credentials_on_the_proxy_itself(testbed: Testbed):
    proxy = fastnet.Proxy.http(*testbed.squid, testbed.squid_user, testbed.squid_password)
    with fastnet.Client(trust_env=False, proxy=proxy, verify=testbed.ca_path) as client:
        assert client.get(testbed.url("/whoami")).status_code == 200
        assert client.get(testbed.url("/whoami", tls=True)).status_code == 200
        assert_pool_clean(client)


def test_auth_proxy_wrong_password(testbed: Testbed):
    auth = fastnet.BasicAuthenticator(testbed.squid_user, "wrong-password")
    with fastnet.Client(
        trust_env=False, proxy=squid(testbed), proxy_authenticator=auth, verify=testbed.ca_path
    ) as client:
        r = client.get(testbed.url("/whoami"))
        assert r.status_code == 407 and len(r.history) == 1  # tried once, then gave up
        with pytest.raises(fastnet.ProxyError) as info:
            client.get(testbed.url("/whoami", tls=True))
        assert info.value.status_code == 407
        assert "rejected" in str(info.value)
        assert_pool_clean(client)


def test_auth_proxy_no_authenticator(testbed: Testbed):
    with fastnet.Client(trust_env=False, proxy=squid(testbed), verify=testbed.ca_path) as client:
        r = client.get(testbed.url("/whoami"))
        assert r.status_code == 407 and r.history == []
        with pytest.raises(fastnet.ProxyError) as info:
            client.get(testbed.url("/whoami", tls=True))
        assert info.value.status_code == 407
        assert_pool_clean(client)


class SplitSelector:
    """127.0.0.1 through squid's open port (HTTP proxy), everything else through dante (SOCKS5)."""

    def __init__(self, testbed: Testbed) -> None:
        self.http = fastnet.Proxy.http(*testbed.squid_open)
        self.socks = fastnet.Proxy.socks(*testbed.socks5)

    def select(self, url: Any) -> list[fastnet.Proxy]:
        return [self.http] if url.host == "127.0.0.1" else [self.socks]

    def connect_failed(self, url: Any, address: Any, error: BaseException) -> None:
        pass


def test_auth_proxy_redirect_from_http_proxy_route_to_socks_route(testbed: Testbed):
    with MockServer(host="127.0.0.1") as one, MockServer(host="127.0.0.2") as two:
        one.enqueue(MockResponse(302, headers={"Location": two.url("/landed")}))
        two.enqueue(MockResponse(200, body=b"via socks"))
        with fastnet.Client(
            proxy_selector=SplitSelector(testbed), sensitive_headers=["X-Auth-Token"]
        ) as client:
            r = client.get(
                one.url("/start"),
                headers={
                    "Authorization": "Bearer secret",
                    "Proxy-Authorization": "Basic c3F1aWQ6cHc=",
                    "X-Auth-Token": "tok",
                    "X-Trace": "1",
                },
            )
            assert r.text == "via socks"
            assert route_of(r.history[0]).proxy.type is fastnet.ProxyType.HTTP
            assert route_of(r).proxy.type is fastnet.ProxyType.SOCKS
            first, second = one.take_request(), two.take_request()
            assert first.header("Authorization") == "Bearer secret"
            assert first.header("X-Trace") == second.header("X-Trace") == "1"
            for name in ("Authorization", "Proxy-Authorization", "X-Auth-Token", "Cookie"):
                assert second.header(name) is None, name
            assert_pool_clean(client)
