"""requests'/httpx's request options on fastnet: ``params``, ``data``, ``files``, ``auth``, ``cookies``,
``timeout``, ``follow_redirects``, ``proxy=`` as a URL, credentials in the URL, and ``Request(...)`` with the
same options. Each against MockServer on real sockets; what goes on the wire is held against what requests
and httpx send for the same call (multipart boundaries aside)."""

from __future__ import annotations

import base64
import io
import os
import time
from pathlib import Path
from typing import Any

import pytest

import fastnet
from fastnet.testing import MockResponse, MockServer
from tests.support.clients import assert_pool_clean, make_fast_client
from tests.support.wire import comparable, sent_by

pytestmark = pytest.mark.both_clients


def sent_by_fastnet(server: MockServer, method: str, path: str, **options: Any) -> Any:
    server.enqueue(MockResponse(200, body=b"ok"))
    with make_fast_client() as client:
        r = client.request(method, server.url(path), **options)
        assert r.status_code == 200 and r.content == b"ok"
    return server.take_request()


def same_as(libraries: tuple[str, ...], server: MockServer, method: str, path: str, **options: Any) -> dict:
    """fastnet's request for the call, asserted equal to each library's; returns it (comparable)."""
    ours = comparable(sent_by_fastnet(server, method, path, **options))
    for library in libraries:
        theirs = comparable(sent_by(library, server, method, path, **options))
        assert ours == theirs, library
    return ours


# -- params -------------------------------------------------------------------------------------------


BOTH = ("requests", "httpx")


@pytest.mark.parametrize(
    "params, libraries",
    [
        ({"q": "fast net", "page": 2}, BOTH),
        ({"tag": ["a", "b"], "é": "ü/?&="}, BOTH),
        ([("k", "1"), ("k", "2"), ("j", "x")], BOTH),
        ({"skipped": None, "kept": ""}, ("requests",)),  # httpx sends "skipped=" for None
        ({"raw": b"by tes", "n": 1.5}, ("requests",)),  # httpx sends bytes as "b'by tes'"
    ],
)
def test_params_encoded_as_requests_and_httpx_do(server: MockServer, params: Any, libraries: tuple) -> None:
    same_as(libraries, server, "GET", "/search", params=params)


@pytest.mark.parametrize(
    "path, params",
    [
        ("/s?a=1&b=2", {"a": "3"}),  # repeated keys kept, after the URL's own query (requests' rule)
        ("/s?a=1", [("a", "2"), ("a", "3")]),
        ("/s?x=%20y", "z=1&flag"),  # an encoded string is appended as it is
        ("/s?", {"a": "1"}),
    ],
)
def test_params_merged_with_the_urls_query(server: MockServer, path: str, params: Any) -> None:
    ours = same_as(("requests",), server, "GET", path, params=params)
    assert ours["request_line"].startswith("GET " + path.rstrip("?"))


def test_params_on_get_head_and_stream(server: MockServer) -> None:
    with make_fast_client() as client:
        for call in (client.get, client.head, client.options, client.delete):
            server.enqueue(MockResponse(200))
            call(server.url("/p"), params={"x": "1"}).close()
            assert server.take_request().target == "/p?x=1"
        server.enqueue(MockResponse(200, body=b"streamed"))
        with client.stream("GET", server.url("/p"), params={"y": "2"}) as r:
            assert r.read() == b"streamed"
        assert server.take_request().target == "/p?y=2"


def test_bad_params_are_refused_before_anything_is_sent(server: MockServer) -> None:
    with make_fast_client() as client:
        with pytest.raises(TypeError, match="params"):
            client.get(server.url("/"), params=42)
        with pytest.raises(TypeError, match="pair"):
            client.get(server.url("/"), params=["not a pair"])
        with pytest.raises(TypeError, match="value"):
            client.get(server.url("/"), params={"a": object()})
    assert server.request_count == 0


# -- data: forms and bodies ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "data, libraries",
    [
        ({"name": "fast net", "lang": "python"}, BOTH),
        ({"multi": ["1", "2"], "esc": "a&b=c é"}, BOTH),
        ([("k", "v1"), ("k", "v2")], ("requests",)),  # httpx takes a list as raw content
    ],
)
def test_data_mapping_is_a_form(server: MockServer, data: Any, libraries: tuple) -> None:
    ours = same_as(libraries, server, "POST", "/form", data=data)
    assert ours["headers"]["content-type"] == "application/x-www-form-urlencoded"


def test_data_bytes_and_files_are_bodies(server: MockServer) -> None:
    ours = same_as(("requests",), server, "POST", "/raw", data=b"\x00raw bytes")
    assert ours["body"] == b"\x00raw bytes" and ours["headers"]["content-type"] is None
    ours = comparable(sent_by_fastnet(server, "PUT", "/file", data=io.BytesIO(b"file body")))
    assert ours == comparable(sent_by("requests", server, "PUT", "/file", data=io.BytesIO(b"file body")))
    assert ours["body"] == b"file body" and ours["headers"]["content-length"] == "9"


def test_data_with_put_and_patch(server: MockServer) -> None:
    with make_fast_client() as client:
        for method in ("put", "patch"):
            server.enqueue(MockResponse(200))
            getattr(client, method)(server.url("/f"), data={"a": "1"})
            rec = server.take_request()
            assert rec.method == method.upper() and rec.body == b"a=1"


def test_conflicting_bodies_are_refused() -> None:
    with pytest.raises(ValueError, match="body= or data="):
        fastnet.Request("POST", "http://h/", body=b"x", data={"a": "1"})
    with pytest.raises(ValueError, match="json= or data="):
        fastnet.Request("POST", "http://h/", json={"a": 1}, data={"a": "1"})
    with pytest.raises(ValueError, match="body= or files="):
        fastnet.Request("POST", "http://h/", body=b"x", files={"f": b"1"})


# -- files: multipart ---------------------------------------------------------------------------------


def test_files_framed_as_requests_and_httpx_do(server: MockServer) -> None:
    def files() -> dict[str, Any]:  # each client reads its own file objects
        return {
            "report": ("report.csv", io.BytesIO(b"a,b\n1,2\n"), "text/csv"),
            "blob": ('we"ird\nname.bin', b"\x00\x01\x02", "application/octet-stream"),
            "note": ("note.txt", "text é", "text/plain"),
        }

    ours = comparable(
        sent_by_fastnet(server, "POST", "/up", data={"title": "T", "tags": ["x", "y"]}, files=files())
    )
    for library in ("requests", "httpx"):
        theirs = comparable(
            sent_by(library, server, "POST", "/up", data={"title": "T", "tags": ["x", "y"]}, files=files())
        )
        assert ours == theirs, library
    assert ours["headers"]["content-type"] == "multipart/form-data; boundary=BOUNDARY"
    assert b'name="blob"; filename="we%22ird%0Aname.bin"' in ours["body"]


def test_files_defaults_as_httpx(server: MockServer, tmp_path: Any) -> None:
    path = tmp_path / "photo.png"
    path.write_bytes(b"\x89PNG...")
    with path.open("rb") as f:
        ours = comparable(
            sent_by_fastnet(server, "POST", "/up", files={"img": f, "plain": (None, "just a field")})
        )
    with path.open("rb") as f:
        theirs = comparable(
            sent_by("httpx", server, "POST", "/up", files={"img": f, "plain": (None, "just a field")})
        )
    assert ours == theirs
    assert b'filename="photo.png"\r\nContent-Type: image/png\r\n' in ours["body"]
    assert b'Content-Disposition: form-data; name="plain"\r\n\r\njust a field\r\n' in ours["body"]


def test_files_stream_with_a_content_length_and_are_replayed(server: MockServer, tmp_path: Any) -> None:
    path = tmp_path / "big.bin"
    payload = os.urandom(3 * 65536 + 17)
    path.write_bytes(payload)
    server.enqueue(MockResponse(307, headers={"Location": "/again"}))
    server.enqueue(MockResponse(200, body=b"stored"))
    with make_fast_client() as client, path.open("rb") as f:
        r = client.post(server.url("/up"), files={"f": ("big.bin", f, "application/octet-stream")})
        assert r.status_code == 200 and [p.status_code for p in r.history] == [307]
    first, second = server.take_request(), server.take_request()
    assert second.target == "/again"
    for rec in (first, second):
        assert not rec.chunked and int(rec.header("content-length")) == len(rec.body)
        assert payload in rec.body
    assert first.body == second.body


def test_files_from_a_pipe_are_chunked_and_one_shot(server: MockServer) -> None:
    read_end, write_end = os.pipe()
    os.write(write_end, b"piped data")
    os.close(write_end)
    server.enqueue(MockResponse(307, headers={"Location": "/again"}))
    with make_fast_client() as client, os.fdopen(read_end, "rb") as pipe:
        r = client.post(server.url("/up"), files={"f": ("p.txt", pipe, "text/plain")})
    assert r.status_code == 307  # a one-shot body is never replayed: the 3xx is the answer
    rec = server.take_request()
    assert rec.chunked and rec.header("content-length") is None
    assert b"\r\n\r\npiped data\r\n" in rec.body


def test_files_in_text_mode_are_refused(tmp_path: Any) -> None:
    path = tmp_path / "t.txt"
    path.write_text("text")
    with path.open("r") as f, pytest.raises(TypeError, match="binary mode"):
        fastnet.Request("POST", "http://h/", files={"f": f})


def test_a_multipart_boundary_of_your_own(server: MockServer) -> None:
    with make_fast_client() as client:
        server.enqueue(MockResponse(200))
        client.post(
            server.url("/"),
            files={"f": ("a", b"1")},
            headers={"Content-Type": "multipart/form-data; boundary=my-own-boundary"},
        )
    rec = server.take_request()
    assert rec.header("content-type") == "multipart/form-data; boundary=my-own-boundary"
    assert rec.body.startswith(b"--my-own-boundary\r\n") and rec.body.endswith(b"--my-own-boundary--\r\n")


# -- auth and credentials in the URL -------------------------------------------------------------------


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def test_auth_tuple_is_a_preemptive_basic_header(server: MockServer) -> None:
    ours = same_as(("requests", "httpx"), server, "GET", "/private", auth=("alice", "s3cret"))
    assert ours["headers"]["authorization"] == basic("alice", "s3cret")


def test_auth_tuple_wins_over_an_authorization_header(server: MockServer) -> None:
    ours = comparable(
        sent_by_fastnet(server, "GET", "/", auth=("a", "b"), headers={"Authorization": "Bearer old"})
    )
    assert ours["headers"]["authorization"] == basic("a", "b")


def test_credentials_in_the_url_become_basic_auth(server: MockServer) -> None:
    url = server.url("/private").replace("http://", "http://alice:s%40cret@")
    server.enqueue(MockResponse(200, body=b"in"))
    with make_fast_client() as client:
        r = client.get(url)
        assert r.content == b"in" and r.url.username == "" and r.url.password == ""
    rec = server.take_request()
    assert rec.target == "/private" and rec.header("authorization") == basic("alice", "s@cret")
    for library in ("requests", "httpx"):
        assert sent_by(library, server, "GET", url).header("authorization") == rec.header("authorization")


@pytest.mark.parametrize("given", ["auth", "url"])
def test_credentials_never_follow_a_redirect_to_another_origin(server: MockServer, given: str) -> None:
    with MockServer() as other:
        server.enqueue(MockResponse(302, headers={"Location": "/same"}))
        server.enqueue(MockResponse(302, headers={"Location": other.url("/other")}))
        other.enqueue(MockResponse(200, body=b"elsewhere"))
        url, options = server.url("/start"), {}
        if given == "auth":
            options = {"auth": ("alice", "pw")}
        else:
            url = url.replace("http://", "http://alice:pw@")
        with make_fast_client() as client:
            assert client.get(url, **options).content == b"elsewhere"
        start, same = server.take_request(), server.take_request()
        assert start.header("authorization") == same.header("authorization") == basic("alice", "pw")
        assert other.take_request().header("authorization") is None


def test_an_authenticator_for_one_request(server: MockServer) -> None:
    server.enqueue(MockResponse(401, headers={"WWW-Authenticate": 'Basic realm="x"'}))
    server.enqueue(MockResponse(200, body=b"welcome"))
    server.enqueue(MockResponse(401, headers={"WWW-Authenticate": 'Basic realm="x"'}))
    with make_fast_client() as client:
        r = client.get(server.url("/"), auth=fastnet.BasicAuthenticator("bob", "pw"))
        assert r.content == b"welcome" and [p.status_code for p in r.history] == [401]
        assert client.get(server.url("/")).status_code == 401  # the next call: the client's (none)
    assert [server.take_request().header("authorization") for _ in range(3)] == [
        None,
        basic("bob", "pw"),
        None,
    ]


def test_bad_auth_is_refused() -> None:
    with pytest.raises(TypeError, match="auth"):
        fastnet.Request("GET", "http://h/", auth=42)
    with pytest.raises(ValueError, match="pair"):
        fastnet.Request("GET", "http://h/", auth=("only-user",))
    with pytest.raises(ValueError, match="':'"):
        fastnet.Request("GET", "http://h/", auth=("us:er", "pw"))


# -- cookies --------------------------------------------------------------------------------------------


def test_cookies_for_one_request(server: MockServer) -> None:
    ours = same_as(("requests", "httpx"), server, "GET", "/", cookies={"sid": "abc", "theme": "dark"})
    assert ours["headers"]["cookie"] == "sid=abc; theme=dark"


def test_cookies_merged_with_the_jar_the_requests_win(server: MockServer) -> None:
    jar = fastnet.MemoryCookieJar()
    server.enqueue(MockResponse(200, headers=[("Set-Cookie", "sid=from-jar"), ("Set-Cookie", "lang=en")]))
    server.enqueue(MockResponse(200))
    server.enqueue(MockResponse(200))
    with make_fast_client(cookie_jar=jar) as client:
        client.get(server.url("/login"))
        client.get(server.url("/"), cookies={"sid": "mine", "extra": "1"})
        client.get(server.url("/"))
    server.take_request()
    assert server.take_request().header("cookie") == "sid=mine; extra=1; lang=en"
    assert server.take_request().header("cookie") == "sid=from-jar; lang=en"  # nothing of it was kept


def test_cookies_stay_with_their_origin(server: MockServer) -> None:
    with MockServer() as other:
        other.enqueue(MockResponse(200))
        server.enqueue(MockResponse(302, headers={"Location": other.url("/")}))
        with make_fast_client() as client:
            client.get(server.url("/"), cookies={"sid": "abc"})
        assert server.take_request().header("cookie") == "sid=abc"
        assert other.take_request().header("cookie") is None


def test_bad_cookies_are_refused() -> None:
    with pytest.raises(ValueError, match="cookie"):
        fastnet.Request("GET", "http://h/", cookies={"a": "x;y"})
    with pytest.raises(TypeError, match="cookies"):
        fastnet.Request("GET", "http://h/", cookies="a=1")


# -- timeout and follow_redirects for one request --------------------------------------------------------


def test_timeout_for_one_request(server: MockServer) -> None:
    with make_fast_client(read_timeout=10) as client:
        server.enqueue(MockResponse(200, body=b"slow", head_delay=3))
        started = time.monotonic()
        with pytest.raises(fastnet.ReadTimeout):
            client.get(server.url("/slow"), timeout=0.3)
        assert time.monotonic() - started < 2.5
        server.enqueue(MockResponse(200, body=b"late", head_delay=0.6))
        assert client.get(server.url("/late")).content == b"late"  # the client's 10 s again
        assert_pool_clean(client)


def test_timeout_none_and_a_pair_for_one_request(server: MockServer) -> None:
    with make_fast_client(read_timeout=0.3) as client:
        server.enqueue(MockResponse(200, body=b"waited", head_delay=1.2))
        assert client.get(server.url("/"), timeout=None).content == b"waited"
        server.enqueue(MockResponse(200, body=b"waited", head_delay=1.2))
        assert client.get(server.url("/"), timeout=(5, 5)).content == b"waited"
        server.enqueue(MockResponse(200, body=b"x", head_delay=3))
        with pytest.raises(fastnet.ReadTimeout):
            client.get(server.url("/"))


def test_call_timeout_for_one_request(server: MockServer) -> None:
    server.enqueue(MockResponse(200, body=b"x" * 10, throttle=(1, 0.5)))
    with make_fast_client() as client:
        started = time.monotonic()
        with pytest.raises(fastnet.CallTimeout):
            client.get(server.url("/"), timeout=fastnet.Timeout(call=0.4))
        assert time.monotonic() - started < 3


def test_bad_timeouts_are_refused() -> None:
    for bad, error in (("5", TypeError), (-1, ValueError), ((1, 2, 3), ValueError), (True, TypeError)):
        with pytest.raises(error, match="timeout"):
            fastnet.Request("GET", "http://h/", timeout=bad)


def test_follow_redirects_for_one_request(server: MockServer) -> None:
    with make_fast_client(follow_redirects=False) as client:
        server.enqueue(MockResponse(302, headers={"Location": "/next"}))
        assert client.get(server.url("/")).status_code == 302
        server.enqueue(MockResponse(302, headers={"Location": "/next"}), MockResponse(200, body=b"here"))
        assert client.get(server.url("/"), follow_redirects=True).content == b"here"
        server.enqueue(MockResponse(302, headers={"Location": "/next"}))
        assert client.get(server.url("/")).status_code == 302  # the client's setting again
    with make_fast_client() as client:
        server.enqueue(MockResponse(301, headers={"Location": "/next"}))
        r = client.post(server.url("/"), json={"a": 1}, follow_redirects=False)
        assert r.status_code == 301 and r.is_redirect


def test_proxy_as_a_url_for_one_request(server: MockServer) -> None:
    server.enqueue(MockResponse(200, body=b"via proxy"))
    with make_fast_client() as client:
        r = client.get("http://origin.example/path?q=1", proxy=server.url("").rstrip("/"))
        assert r.content == b"via proxy"
    assert server.take_request().request_line == "GET http://origin.example/path?q=1 HTTP/1.1"


# -- Request(...) with the options, through new_call ------------------------------------------------------


def test_request_with_options_through_new_call(server: MockServer) -> None:
    request = fastnet.Request(
        "POST",
        server.url("/items?x=1"),
        params={"y": "2"},
        data={"name": "n"},
        auth=("u", "p"),
        cookies={"c": "1"},
        timeout=fastnet.Timeout(5),
        follow_redirects=False,
    )
    assert request.timeout == fastnet.Timeout(5) and request.follow_redirects is False
    assert str(request.url).endswith("/items?x=1&y=2") and request.header("cookie") == "c=1"
    assert request.replace(method="PUT").follow_redirects is False
    server.enqueue(MockResponse(302, headers={"Location": "/elsewhere"}))
    with make_fast_client() as client:
        r = client.new_call(request).execute()
        assert r.status_code == 302
    rec = server.take_request()
    assert rec.target == "/items?x=1&y=2" and rec.body == b"name=n"
    assert rec.header("authorization") == basic("u", "p") and rec.header("cookie") == "c=1"


def test_request_defaults_have_no_call_settings() -> None:
    request = fastnet.Request("GET", "http://h/")
    assert request.timeout is fastnet.USE_CLIENT_DEFAULT and request.follow_redirects is None
    assert request.authenticator is None


_UPLOAD_CHILD = r"""
import asyncio, os, resource, sys
import fastnet

url, path, kind = sys.argv[1:4]


def peak_kib() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


async def upload_async() -> int:
    async with fastnet.AsyncClient(trust_env=False) as client:
        with open(path, "rb") as f:
            return (await client.post(url, files={"f": ("big.bin", f)}, data={"k": "v"})).status_code


def upload() -> int:
    with fastnet.Client(trust_env=False) as client, open(path, "rb") as f:
        return client.post(url, files={"f": ("big.bin", f)}, data={"k": "v"}).status_code


if kind != "blocking":
    if kind == "asyncio+uvloop":
        import uvloop
        uvloop.install()
    asyncio.run(asyncio.sleep(0))  # the loop's own memory is in the baseline
before = peak_kib()
status = asyncio.run(upload_async()) if kind != "blocking" else upload()
print(status, peak_kib() - before)
"""


def test_a_100_mb_upload_streams_in_little_memory(
    server: MockServer, tmp_path: Any, client_kind: str
) -> None:
    """``files=`` reads the file in pieces as it sends: the uploading process grows by under 20 MB."""
    import subprocess
    import sys

    size = 100 << 20
    path = tmp_path / "big.bin"
    with path.open("wb") as f:
        f.truncate(size)  # 100 MB of zeros (sparse on disk; read like any file)
    server.enqueue(MockResponse(200, body=b"stored"))
    child = subprocess.run(
        [sys.executable, "-c", _UPLOAD_CHILD, server.url("/up"), str(path), client_kind],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(
            {k: v for k, v in os.environ.items() if "proxy" not in k.lower()},
            PYTHONPATH=str(Path(__file__).resolve().parents[3]),  # the checkout
        ),
    )
    assert child.returncode == 0, child.stderr
    status, grew_kib = (int(v) for v in child.stdout.split())
    assert status == 200
    assert grew_kib < 20 * 1024, f"the upload grew the process by {grew_kib} KiB"
    rec = server.take_request()
    assert int(rec.header("content-length")) == len(rec.body) > size
    assert rec.header("content-type").startswith("multipart/form-data; boundary=")


def test_no_password_in_reprs_or_errors(server: MockServer) -> None:
    secret = "pw-" + os.urandom(4).hex()
    request = fastnet.Request("GET", f"http://alice:{secret}@h.test/p", auth=("bob", secret), params={"a": 1})
    assert secret not in repr(request) and secret not in repr(request.headers)
    assert secret not in str(request.url)
    with make_fast_client(auth=("carol", secret), proxy=f"http://dave:{secret}@127.0.0.1:1") as client:
        assert secret not in repr(client) and secret not in repr(client.config)
        built = client.build_request("POST", server.url("/"), auth=("erin", secret), data={"k": "v"})
        assert secret not in repr(built)
        with pytest.raises(fastnet.NetworkError) as caught:
            client.get(f"http://frank:{secret}@127.0.0.1:1/", auth=("gina", secret))
        error = caught.value
        assert secret not in str(error) and secret not in repr(error) and secret not in str(error.url)
