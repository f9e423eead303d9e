"""requests'/httpx's client defaults, response conveniences, TLS options and compression on fastnet:
``Client(headers=, base_url=, params=, auth=, timeout=)``, the module-level ``fastnet.get``, ``ok``,
``elapsed``, ``encoding``, ``links``, ``cookies``, ``is_redirect``, ``cert=``, ``SSL_CERT_FILE``,
``min_tls_version=``, the verification error's hint, and ``br``/``zstd``. Each against MockServer on
real sockets, with the blocking and the asyncio clients."""

from __future__ import annotations

import base64
import codecs
import datetime
import gzip
import os
import shutil
import ssl
import subprocess
import sys
import time
from typing import Any

import brotli
import pytest
import zstandard

import fastnet
from fastnet.testing import MockResponse, MockServer
from tests.support.clients import ca_path, make_client, make_fast_client

pytestmark = pytest.mark.both_clients

SECRET = "s3cr3t-pw"
PROXY_VARIABLES = ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY")


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


# -- client defaults ------------------------------------------------------------------------------------


def test_default_headers_under_the_requests_own(server: MockServer) -> None:
    server.enqueue(MockResponse(200), MockResponse(200))
    with make_fast_client(headers={"X-App": "1", "Accept": "text/plain"}) as client:
        client.get(server.url("/a")).close()
        client.get(server.url("/b"), headers={"Accept": "application/json", "X-Own": "2"}).close()
    first, second = server.take_request(), server.take_request()
    assert (first.header("x-app"), first.header("accept")) == ("1", "text/plain")
    assert (second.header("x-app"), second.header("accept"), second.header("x-own")) == (
        "1",
        "application/json",
        "2",
    )
    assert len(second.header_values("accept")) == 1


def test_base_url_absolute_url_elsewhere_gets_no_credentials(server: MockServer) -> None:
    with MockServer() as other:
        for _ in range(4):
            other.enqueue(MockResponse(200))
        for _ in range(2):
            server.enqueue(MockResponse(200))
        defaults = {"X-Api-Key": "k", "X-App": "1", "Cookie": "c=1", "Host": "api.example"}
        with make_fast_client(
            base_url=server.url("/api/"),
            auth=("alice", SECRET),
            headers=defaults,
            sensitive_headers={"x-api-key"},
        ) as client:
            client.get(other.url("/x"))
            client.stream("GET", other.url("/x")).close()
            client.get(other.url("/own"), auth=("bob", "pw2"), headers={"X-Api-Key": "mine"})
            client.new_call(fastnet.Request("GET", other.url("/call"))).execute()
            # the same origin spelt differently keeps them
            client.get(server.url("/api/x").replace("http://", "HTTP://"))
            client.get(server.url("/api/x").replace("127.0.0.1", "127.0.0.1."))
        for _ in range(2):
            seen = other.take_request()
            assert seen.header("x-app") == "1" and seen.header("host") == f"127.0.0.1:{other.port}"
            assert (seen.header("authorization"), seen.header("x-api-key"), seen.header("cookie")) == (
                None,
            ) * 3
        own = other.take_request()
        assert own.header("authorization") == basic("bob", "pw2") and own.header("x-api-key") == "mine"
        assert other.take_request().header("authorization") is None
        for _ in range(2):
            same = server.take_request()
            assert same.header("authorization") == basic("alice", SECRET) and same.header("x-api-key") == "k"
            assert same.header("cookie") == "c=1" and same.header("host") == "api.example"


def test_default_auth_and_timeout(server: MockServer) -> None:
    server.enqueue(MockResponse(200), MockResponse(200, head_delay=1.0))
    with make_client(auth=("alice", SECRET), timeout=0.3) as client:
        assert client.read_timeout == 0.3 and client.connect_timeout == 0.3
        client.get(server.url("/")).close()
        assert server.take_request().header("authorization") == basic("alice", SECRET)
        start = time.monotonic()
        with pytest.raises(fastnet.TimeoutError):
            client.get(server.url("/slow"))
        assert time.monotonic() - start < 0.9
        assert SECRET not in repr(client) and SECRET not in repr(client.config)


def test_timeout_object_and_named_timeouts_together() -> None:
    with make_client(timeout=fastnet.Timeout(connect=2, read=7), write_timeout=1) as client:
        assert (client.connect_timeout, client.read_timeout, client.write_timeout) == (2, 7, 1)
        sibling = client.with_options(timeout=4)
        assert (sibling.connect_timeout, sibling.read_timeout, sibling.write_timeout) == (4, 4, 4)


@pytest.mark.parametrize(
    "options, error",
    [
        ({"auth": ("only-user",)}, ValueError),
        ({"auth": 42}, TypeError),
        ({"base_url": 3}, TypeError),
        ({"base_url": "not a url"}, ValueError),
        ({"headers": {"Bad\nName": "x"}}, ValueError),
        ({"params": 7}, TypeError),
        ({"timeout": "soon"}, TypeError),
        ({"timeout": -1}, ValueError),
    ],
)
def test_bad_client_defaults_are_refused(options: dict[str, Any], error: type[Exception]) -> None:
    with pytest.raises(error):
        make_fast_client(**options)


# -- response conveniences ------------------------------------------------------------------------------


def test_ok_elapsed_is_redirect(server: MockServer) -> None:
    server.enqueue(
        MockResponse(302, headers={"Location": "/next"}),
        MockResponse(404, body=b"missing", body_delay=0.05),
    )
    with make_fast_client(follow_redirects=False) as client:
        moved = client.get(server.url("/"))
        assert moved.is_redirect and moved.ok and not moved.is_error
        missing = client.get(server.url("/next"))
        assert not missing.ok and missing.is_error and not missing.is_redirect
        assert isinstance(missing.elapsed, datetime.timedelta)
        assert missing.elapsed.total_seconds() >= 0.05
    assert fastnet.Response(200).elapsed == datetime.timedelta(0)


@pytest.mark.parametrize(
    "content_type, body, encoding, text",
    [
        ("text/plain; charset=iso-8859-1", "café".encode("latin-1"), "iso-8859-1", "café"),
        ("application/json", '{"a": "é"}'.encode(), "utf-8", '{"a": "é"}'),
        ("text/html", b'<meta charset="windows-1251">' + "мир".encode("cp1251"), "windows-1251", None),
        ("text/plain", "naïve".encode(), "utf-8", "naïve"),
    ],
)
def test_encoding_from_the_content_type_or_guessed(
    server: MockServer, content_type: str, body: bytes, encoding: str, text: str | None
) -> None:
    server.enqueue(MockResponse(200, headers={"Content-Type": content_type}, body=body))
    with make_fast_client() as client:
        r = client.get(server.url("/"))
        assert codecs.lookup(r.encoding).name == codecs.lookup(encoding).name
        if text is not None:
            assert r.text == text
        else:
            assert "мир" in r.text


def test_encoding_is_settable(server: MockServer) -> None:
    server.enqueue(MockResponse(200, headers={"Content-Type": "text/plain"}, body="привет".encode("cp1251")))
    with make_fast_client() as client:
        r = client.get(server.url("/"))
        r.encoding = "cp1251"
        assert r.text == "привет" and r.encoding == "cp1251"
        with pytest.raises(LookupError):
            r.encoding = "no-such-codec"
        with pytest.raises(TypeError):
            r.encoding = 5  # type: ignore[assignment]


def test_links_and_cookies(server: MockServer) -> None:
    server.enqueue(
        MockResponse(
            200,
            headers=[
                ("Link", '<https://api.test/items?page=2>; rel="next", </items?page=9>; rel=last'),
                ("Set-Cookie", "session=abc; Path=/; HttpOnly"),
                ("Set-Cookie", "theme=dark"),
                ("Set-Cookie", "gone=x; Max-Age=0"),
            ],
        )
    )
    with make_fast_client() as client:
        r = client.get(server.url("/items"))
        assert r.links["next"]["url"] == "https://api.test/items?page=2"
        assert r.links["last"]["url"] == "/items?page=9" and r.links["last"]["rel"] == "last"
        assert r.cookies == {"session": "abc", "theme": "dark"}
    assert fastnet.Response(200).links == {} and fastnet.Response(200).cookies == {}


# -- TLS options ----------------------------------------------------------------------------------------


def test_verification_error_says_how_to_fix_it(tls_server: MockServer) -> None:
    tls_server.enqueue(MockResponse(200))
    with make_fast_client() as client, pytest.raises(fastnet.TlsVerificationError) as caught:
        client.get(tls_server.url("/"))
    assert "verify=" in str(caught.value) and "SSL_CERT_FILE" in str(caught.value)


def test_ssl_cert_file_is_honoured_with_trust_env(tls_server: MockServer, monkeypatch: Any) -> None:
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SSL_CERT_FILE", tls_server.ca_path)
    tls_server.enqueue(MockResponse(200, body=b"trusted"))
    with make_fast_client(trust_env=True) as client:
        assert client.get(tls_server.url("/")).content == b"trusted"
    with make_fast_client(trust_env=False) as client, pytest.raises(fastnet.TlsVerificationError):
        client.get(tls_server.url("/"))


class _BlacklistDns:
    """Resolves ``app.test`` to 127.0.0.1 and records what ``connect_failed`` (the IP blacklist) hears."""

    def __init__(self) -> None:
        self.failed: list[Any] = []

    def lookup(self, host: str) -> list[str]:
        return ["127.0.0.1"]

    def connect_failed(self, *args: Any) -> None:
        self.failed.append(args)


def _ca_environment(monkeypatch: Any, name: str, value: str) -> None:
    """Only ``name`` of ``SSL_CERT_FILE``/``SSL_CERT_DIR`` set (to ``value``), no proxy variables; restored
    after the test (monkeypatch). A failed context is not kept, so no other test sees it."""
    for variable in (*PROXY_VARIABLES, "SSL_CERT_FILE", "SSL_CERT_DIR"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv(name, value)


@pytest.mark.parametrize("content", [b"garbage\n", b""], ids=["garbage", "empty"])
def test_ssl_cert_file_that_cannot_be_loaded_is_a_verification_error(
    tls_server: MockServer, monkeypatch: Any, tmp_path: Any, content: bytes
) -> None:
    """The environment's CA file is loaded on the first HTTPS connection: one that holds no certificate
    is a ``TlsVerificationError`` naming the variable and the file (not ``ssl.SSLError``), raised before
    any connection is made: not a failed route, not retried, nothing for the DNS blacklist."""
    bad = tmp_path / "bad.pem"
    bad.write_bytes(content)
    _ca_environment(monkeypatch, "SSL_CERT_FILE", str(bad))
    dns = _BlacklistDns()
    with make_fast_client(trust_env=True, dns=dns) as client:
        for _ in range(2):  # the same answer each time: a failed context is not kept
            with pytest.raises(fastnet.TlsVerificationError) as caught:
                client.get(tls_server.url("/", host="app.test"))
            text = str(caught.value)
            assert f"SSL_CERT_FILE={str(bad)!r}" in text and "cannot be loaded" in text
            assert caught.value.phase == "tls" and caught.value.recovered == []
        assert client.route_database.failed_routes() == [] and dns.failed == []
    assert tls_server.connection_count == 0


def test_ssl_cert_file_that_cannot_be_loaded_fails_an_https_proxy_before_connecting(
    server: MockServer, monkeypatch: Any, tmp_path: Any
) -> None:
    """The TLS to an HTTPS proxy needs the same context: it is built before the proxy is dialled, so the
    error is not taken for a connect failure of the proxy's route (recorded, then the next route tried)."""
    bad = tmp_path / "bad.pem"
    bad.write_bytes(b"garbage\n")
    _ca_environment(monkeypatch, "SSL_CERT_FILE", str(bad))
    dns = _BlacklistDns()
    proxy = fastnet.Proxy.https(server.host, server.port)
    with make_fast_client(trust_env=True, dns=dns, proxy=proxy) as client:
        with pytest.raises(fastnet.TlsVerificationError, match="SSL_CERT_FILE"):
            client.get("http://app.test:9/")
        assert client.route_database.failed_routes() == [] and dns.failed == []
    assert server.connection_count == 0


def test_ssl_cert_dir_of_garbage_is_named_by_the_verification_error(
    tls_server: MockServer, monkeypatch: Any, tmp_path: Any
) -> None:
    """A directory is read certificate by certificate during handshakes: one that holds none the server's
    chain needs fails verification, and the error says the CAs came from ``SSL_CERT_DIR``."""
    (tmp_path / "0a1b2c3d.0").write_bytes(b"garbage\n")
    _ca_environment(monkeypatch, "SSL_CERT_DIR", str(tmp_path))
    with make_fast_client(trust_env=True) as client, pytest.raises(fastnet.TlsVerificationError) as caught:
        client.get(tls_server.url("/"))
    assert f"SSL_CERT_DIR={str(tmp_path)!r}" in str(caught.value)


@pytest.mark.parametrize("content", [b"garbage\n", b""], ids=["garbage", "empty"])
def test_verify_file_that_cannot_be_loaded_is_refused_when_the_client_is_made(
    tmp_path: Any, content: bytes
) -> None:
    """``verify=`` is an argument: read when the client is made, a file without a certificate is a
    ``ValueError`` there that names it (the environment's CAs are read on first use, above)."""
    bad = tmp_path / "bad.pem"
    bad.write_bytes(content)
    with pytest.raises(ValueError, match="holds no PEM certificate") as caught:
        make_fast_client(verify=str(bad))
    assert str(bad) in str(caught.value)


_LAZY_TLS_CHILD = """
import sys
import fastnet
from fastnet._internal.connection import tls
from fastnet.testing import MockResponse, MockServer

def built():
    return tls._DEFAULT_CONTEXT is not None or bool(tls._ENV_CONTEXTS)

with MockServer() as server:
    server.enqueue(MockResponse(200, body=b"plain"))
    with fastnet.Client(trust_env=sys.argv[1] == "env") as client:
        assert client.get(server.url("/")).content == b"plain"
        assert not built(), "a plain-HTTP client built a TLS context"
        sibling = fastnet.Client(trust_env=sys.argv[1] == "env")
        first = client._core.connector.tls_context()
        assert built() and sibling._core.connector.tls_context() is first  # one shared context
        sibling.close()
print("ok")
"""


@pytest.mark.parametrize("trust_env", ["env", "no-env"])
def test_default_tls_context_is_built_on_first_https_use(
    trust_env: str, tls_server: MockServer, monkeypatch: Any
) -> None:
    # a fresh process: this one has long since built the shared contexts
    env = dict(os.environ)
    for name in PROXY_VARIABLES:
        env.pop(name, None)
    if trust_env == "env":
        env["SSL_CERT_FILE"] = str(tls_server.ca_path)  # the environment's CAs: a shared context too
    else:
        env.pop("SSL_CERT_FILE", None)
        env.pop("SSL_CERT_DIR", None)
    done = subprocess.run(
        [sys.executable, "-c", _LAZY_TLS_CHILD, trust_env],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def test_ssl_cert_dir_is_honoured_with_trust_env(
    tls_server: MockServer, monkeypatch: Any, tmp_path: Any
) -> None:
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("needs the openssl command for the CA's subject hash")
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    subject_hash = subprocess.run(
        [openssl, "x509", "-hash", "-noout", "-in", ca_path(tls_server)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    shutil.copy(ca_path(tls_server), tmp_path / f"{subject_hash}.0")  # a c_rehash-style directory
    monkeypatch.setenv("SSL_CERT_DIR", str(tmp_path))
    tls_server.enqueue(MockResponse(200, body=b"from the directory"))
    with make_fast_client(trust_env=True) as client:
        assert client.get(tls_server.url("/")).content == b"from the directory"


def _require_client_certs(server: MockServer) -> None:
    context = server._ssl_context
    assert context is not None
    context.verify_mode = ssl.CERT_REQUIRED
    context.load_verify_locations(server.ca_path)


def _client_cert(server: MockServer, tmp_path: Any, password: bytes | None = None) -> tuple[str, str]:
    assert server.ca is not None
    leaf = server.ca.issue_cert("client@example.test")
    certfile, keyfile = str(tmp_path / "client.pem"), str(tmp_path / "client.key")
    with open(certfile, "wb") as f:
        for blob in leaf.cert_chain_pems:
            f.write(blob.bytes())
    key = leaf.private_key_pem.bytes()
    if password is not None:
        from cryptography.hazmat.primitives import serialization

        loaded = serialization.load_pem_private_key(key, password=None)
        key = loaded.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(password),
        )
    with open(keyfile, "wb") as f:
        f.write(key)
    return certfile, keyfile


def test_client_certificate(tls_server: MockServer, tmp_path: Any) -> None:
    _require_client_certs(tls_server)
    certfile, keyfile = _client_cert(tls_server, tmp_path)
    tls_server.enqueue(MockResponse(200, body=b"hello, client"))
    with make_fast_client(verify=tls_server.ca_path, cert=(certfile, keyfile)) as client:
        assert client.get(tls_server.url("/")).content == b"hello, client"
    with make_fast_client(verify=tls_server.ca_path) as client, pytest.raises(fastnet.NetworkError):
        client.get(tls_server.url("/")).content  # noqa: B018 - the server refuses the handshake


def test_client_certificate_in_one_file_and_with_a_password(tls_server: MockServer, tmp_path: Any) -> None:
    _require_client_certs(tls_server)
    certfile, keyfile = _client_cert(tls_server, tmp_path, password=SECRET.encode())
    tls_server.enqueue(MockResponse(200, body=b"locked"))
    with make_fast_client(verify=tls_server.ca_path, cert=(certfile, keyfile, SECRET)) as client:
        assert client.get(tls_server.url("/")).content == b"locked"
        assert SECRET not in repr(client) and SECRET not in repr(client.config)
    with pytest.raises(ValueError) as caught:
        make_fast_client(verify=tls_server.ca_path, cert=(certfile, keyfile, "wrong-" + SECRET))
    assert SECRET not in str(caught.value)
    combined = tmp_path / "both.pem"
    plain_cert, plain_key = _client_cert(tls_server, tmp_path / "..")
    with open(plain_cert, "rb") as c, open(plain_key, "rb") as k:
        combined.write_bytes(c.read() + k.read())
    tls_server.enqueue(MockResponse(200, body=b"one file"))
    with make_fast_client(verify=tls_server.ca_path, cert=str(combined)) as client:
        assert client.get(tls_server.url("/")).content == b"one file"


@pytest.mark.parametrize(
    "cert, error",
    [
        ("/no/such/cert.pem", ValueError),
        (("a", "b", "c", "d"), TypeError),
        (42, TypeError),
    ],
)
def test_bad_client_certificates_are_refused(cert: Any, error: type[Exception]) -> None:
    with pytest.raises(error):
        make_fast_client(cert=cert)


def test_min_tls_version(tls_server: MockServer) -> None:
    context = tls_server._ssl_context
    assert context is not None
    context.maximum_version = ssl.TLSVersion.TLSv1_2
    tls_server.enqueue(MockResponse(200, body=b"tls 1.2"))
    with make_fast_client(verify=tls_server.ca_path, min_tls_version="1.2") as client:
        assert client.get(tls_server.url("/")).content == b"tls 1.2"
    with make_fast_client(verify=tls_server.ca_path, min_tls_version=ssl.TLSVersion.TLSv1_3) as client:
        with pytest.raises(fastnet.TlsError):
            client.get(tls_server.url("/"))
    for bad, error in (("1.4", ValueError), ("1.0", ValueError), (1.3, TypeError)):
        with pytest.raises(error):
            make_fast_client(min_tls_version=bad)
    with pytest.raises(ValueError):
        make_fast_client(verify=ssl.create_default_context(), min_tls_version="1.3")


# -- compression ----------------------------------------------------------------------------------------


def test_br_and_zstd_are_offered_and_decoded(server: MockServer) -> None:
    text = b"fastnet " * 5000
    encoded = {"br": brotli.compress(text), "zstd": zstandard.ZstdCompressor().compress(text)}
    for coding, body in encoded.items():
        server.enqueue(MockResponse(200, headers={"Content-Encoding": coding}, body=body))
    with make_fast_client() as client:
        for coding in encoded:
            r = client.get(server.url("/" + coding))
            assert r.content == text, coding
            assert "content-encoding" not in r.headers and r.network_response is not None
    offered = server.take_request().header("accept-encoding")
    assert offered == "gzip, deflate, br, zstd"


@pytest.mark.parametrize("coding", ["gzip", "br", "zstd"])
def test_compressed_bodies_keep_the_size_limit(server: MockServer, coding: str) -> None:
    bomb = b"\0" * (4 << 20)
    body = {
        "gzip": gzip.compress(bomb),
        "br": brotli.compress(bomb),
        "zstd": zstandard.ZstdCompressor().compress(bomb),
    }[coding]
    assert len(body) < 64 << 10
    server.enqueue(MockResponse(200, headers={"Content-Encoding": coding}, body=body))
    with make_fast_client(max_body_size=1 << 20) as client, pytest.raises(fastnet.BodyTooLargeError):
        client.get(server.url("/")).content  # noqa: B018


def test_a_corrupt_br_body_is_a_decode_error(server: MockServer) -> None:
    server.enqueue(MockResponse(200, headers={"Content-Encoding": "br"}, body=os.urandom(64)))
    with make_fast_client() as client, pytest.raises(fastnet.NetworkError):
        client.get(server.url("/")).content  # noqa: B018
