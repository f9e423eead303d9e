"""requests'/httpx's request options on fastnet: ``params``, ``data``, ``files``, ``auth``, ``cookies``,
``timeout``, ``follow_redirects``, ``proxy=`` as a URL, credentials in the URL, and ``Request(...)`` with the
same options. Each against MockServer on real sockets; what goes on the wire is held against what requests
and httpx send for the same call (multipart boundaries aside). Then ``base_url`` and the client's default
``params`` (``build``, ``join_base_url``: a relative reference never leaves the base's origin), and the
per-call copies of the client's core that ``core_for`` makes and caches
(``fastnet/_internal/call/factory.py``)."""

from __future__ import annotations

import base64
import io
import os
import time
from pathlib import Path
from typing import Any

import pytest

import fastnet
from fastnet._internal._sync.retry_follow_up import RetryAndFollowUpInterceptor
from fastnet._internal.call.factory import RequestFactory, join_base_url
from fastnet.testing import MockResponse, MockServer
from tests.support.clients import assert_pool_clean, blocking_only, make_fast_client
from tests.support.wire import comparable, sent_by

SECRET = "s3cr3t-pw"


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


@pytest.mark.both_clients
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


@pytest.mark.both_clients
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


@pytest.mark.both_clients
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


@pytest.mark.both_clients
def test_bad_params_are_refused_before_anything_is_sent(server: MockServer) -> None:
    with make_fast_client() as client:
        with pytest.raises(TypeError, match="params"):
            client.get(server.url("/"), params=42)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="pair"):
            client.get(server.url("/"), params=["not a pair"])  # type: ignore[list-item]
        with pytest.raises(TypeError, match="value"):
            client.get(server.url("/"), params={"a": object()})
    assert server.request_count == 0


# -- data: forms and bodies ---------------------------------------------------------------------------


@pytest.mark.both_clients
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


@pytest.mark.both_clients
def test_data_bytes_and_files_are_bodies(server: MockServer) -> None:
    ours = same_as(("requests",), server, "POST", "/raw", data=b"\x00raw bytes")
    assert ours["body"] == b"\x00raw bytes" and ours["headers"]["content-type"] is None
    ours = comparable(sent_by_fastnet(server, "PUT", "/file", data=io.BytesIO(b"file body")))
    assert ours == comparable(sent_by("requests", server, "PUT", "/file", data=io.BytesIO(b"file body")))
    assert ours["body"] == b"file body" and ours["headers"]["content-length"] == "9"


@pytest.mark.both_clients
def test_data_with_put_and_patch(server: MockServer) -> None:
    with make_fast_client() as client:
        for method in ("put", "patch"):
            server.enqueue(MockResponse(200))
            getattr(client, method)(server.url("/f"), data={"a": "1"})
            rec = server.take_request()
            assert rec.method == method.upper() and rec.body == b"a=1"


@pytest.mark.both_clients
def test_conflicting_bodies_are_refused() -> None:
    with pytest.raises(ValueError, match="body= or data="):
        fastnet.Request("POST", "http://h/", body=b"x", data={"a": "1"})
    with pytest.raises(ValueError, match="json= or data="):
        fastnet.Request("POST", "http://h/", json={"a": 1}, data={"a": "1"})
    with pytest.raises(ValueError, match="body= or files="):
        fastnet.Request("POST", "http://h/", body=b"x", files={"f": b"1"})


# -- files: multipart ---------------------------------------------------------------------------------


@pytest.mark.both_clients
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


@pytest.mark.both_clients
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


@pytest.mark.both_clients
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
        assert not rec.chunked and int(rec.header("content-length") or "-1") == len(rec.body)
        assert payload in rec.body
    assert first.body == second.body


@pytest.mark.both_clients
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


@pytest.mark.both_clients
def test_files_in_text_mode_are_refused(tmp_path: Any) -> None:
    path = tmp_path / "t.txt"
    path.write_text("text")
    with path.open("r") as f, pytest.raises(TypeError, match="binary mode"):
        fastnet.Request("POST", "http://h/", files={"f": f})


@pytest.mark.both_clients
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


@pytest.mark.both_clients
def test_auth_tuple_is_a_preemptive_basic_header(server: MockServer) -> None:
    ours = same_as(("requests", "httpx"), server, "GET", "/private", auth=("alice", "s3cret"))
    assert ours["headers"]["authorization"] == basic("alice", "s3cret")


@pytest.mark.both_clients
def test_auth_tuple_wins_over_an_authorization_header(server: MockServer) -> None:
    ours = comparable(
        sent_by_fastnet(server, "GET", "/", auth=("a", "b"), headers={"Authorization": "Bearer old"})
    )
    assert ours["headers"]["authorization"] == basic("a", "b")


@pytest.mark.both_clients
def test_credentials_in_the_url_become_basic_auth(server: MockServer) -> None:
    url = server.url("/private").replace("http://", "http://alice:s%40cret@")
    server.enqueue(MockResponse(200, body=b"in"))
    with make_fast_client() as client:
        r = client.get(url)
        assert r.url is not None
        assert r.content == b"in" and r.url.username == "" and r.url.password == ""
    rec = server.take_request()
    assert rec.target == "/private" and rec.header("authorization") == basic("alice", "s@cret")
    for library in ("requests", "httpx"):
        assert sent_by(library, server, "GET", url).header("authorization") == rec.header("authorization")


@pytest.mark.both_clients
@pytest.mark.parametrize("given", ["auth", "url"])
def test_credentials_never_follow_a_redirect_to_another_origin(server: MockServer, given: str) -> None:
    with MockServer() as other:
        server.enqueue(MockResponse(302, headers={"Location": "/same"}))
        server.enqueue(MockResponse(302, headers={"Location": other.url("/other")}))
        other.enqueue(MockResponse(200, body=b"elsewhere"))
        url, options = server.url("/start"), dict[str, Any]()
        if given == "auth":
            options = {"auth": ("alice", "pw")}
        else:
            url = url.replace("http://", "http://alice:pw@")
        with make_fast_client() as client:
            assert client.get(url, **options).content == b"elsewhere"
        start, same = server.take_request(), server.take_request()
        assert start.header("authorization") == same.header("authorization") == basic("alice", "pw")
        assert other.take_request().header("authorization") is None


@pytest.mark.both_clients
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


@pytest.mark.both_clients
def test_bad_auth_is_refused() -> None:
    with pytest.raises(TypeError, match="auth"):
        fastnet.Request("GET", "http://h/", auth=42)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="pair"):
        fastnet.Request("GET", "http://h/", auth=("only-user",))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="':'"):
        fastnet.Request("GET", "http://h/", auth=("us:er", "pw"))


# -- cookies --------------------------------------------------------------------------------------------


@pytest.mark.both_clients
def test_cookies_for_one_request(server: MockServer) -> None:
    ours = same_as(("requests", "httpx"), server, "GET", "/", cookies={"sid": "abc", "theme": "dark"})
    assert ours["headers"]["cookie"] == "sid=abc; theme=dark"


@pytest.mark.both_clients
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


@pytest.mark.both_clients
def test_cookies_stay_with_their_origin(server: MockServer) -> None:
    with MockServer() as other:
        other.enqueue(MockResponse(200))
        server.enqueue(MockResponse(302, headers={"Location": other.url("/")}))
        with make_fast_client() as client:
            client.get(server.url("/"), cookies={"sid": "abc"})
        assert server.take_request().header("cookie") == "sid=abc"
        assert other.take_request().header("cookie") is None


@pytest.mark.both_clients
def test_bad_cookies_are_refused() -> None:
    with pytest.raises(ValueError, match="cookie"):
        fastnet.Request("GET", "http://h/", cookies={"a": "x;y"})
    with pytest.raises(TypeError, match="cookies"):
        fastnet.Request("GET", "http://h/", cookies="a=1")  # type: ignore[arg-type]


# -- timeout and follow_redirects for one request --------------------------------------------------------


@pytest.mark.both_clients
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


@pytest.mark.both_clients
def test_timeout_none_and_a_pair_for_one_request(server: MockServer) -> None:
    with make_fast_client(read_timeout=0.3) as client:
        server.enqueue(MockResponse(200, body=b"waited", head_delay=1.2))
        assert client.get(server.url("/"), timeout=None).content == b"waited"
        server.enqueue(MockResponse(200, body=b"waited", head_delay=1.2))
        assert client.get(server.url("/"), timeout=(5, 5)).content == b"waited"
        server.enqueue(MockResponse(200, body=b"x", head_delay=3))
        with pytest.raises(fastnet.ReadTimeout):
            client.get(server.url("/"))


@pytest.mark.both_clients
def test_call_timeout_for_one_request(server: MockServer) -> None:
    server.enqueue(MockResponse(200, body=b"x" * 10, throttle=(1, 0.5)))
    with make_fast_client() as client:
        started = time.monotonic()
        with pytest.raises(fastnet.CallTimeout):
            client.get(server.url("/"), timeout=fastnet.Timeout(call=0.4))
        assert time.monotonic() - started < 3


@pytest.mark.both_clients
def test_bad_timeouts_are_refused() -> None:
    for bad, error in (("5", TypeError), (-1, ValueError), ((1, 2, 3), ValueError), (True, TypeError)):
        with pytest.raises(error, match="timeout"):
            fastnet.Request("GET", "http://h/", timeout=bad)  # type: ignore[arg-type]


@pytest.mark.both_clients
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


@pytest.mark.both_clients
def test_proxy_as_a_url_for_one_request(server: MockServer) -> None:
    server.enqueue(MockResponse(200, body=b"via proxy"))
    with make_fast_client() as client:
        r = client.get("http://origin.example/path?q=1", proxy=server.url("").rstrip("/"))
        assert r.content == b"via proxy"
    assert server.take_request().request_line == "GET http://origin.example/path?q=1 HTTP/1.1"


# -- Request(...) with the options, through new_call ------------------------------------------------------


@pytest.mark.both_clients
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


@pytest.mark.both_clients
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


@pytest.mark.both_clients
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
    assert int(rec.header("content-length") or "-1") == len(rec.body) > size
    assert (rec.header("content-type") or "").startswith("multipart/form-data; boundary=")


@pytest.mark.both_clients
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


@pytest.mark.both_clients
def test_base_url_and_default_params(server: MockServer) -> None:
    for _ in range(3):
        server.enqueue(MockResponse(200))
    with make_fast_client(base_url=server.url("/api/v1/"), params={"key": "k"}) as client:
        client.get("users", params={"page": "2", "key": "mine"}).close()  # the request's key wins
        client.get("/more?x=1").close()  # appended to the base's path, as httpx does
        client.get(server.url("/elsewhere")).close()  # an absolute URL is used as it is
    assert server.take_request().target == "/api/v1/users?page=2&key=mine"
    assert server.take_request().target == "/api/v1/more?x=1&key=k"
    assert server.take_request().target == "/elsewhere?key=k"


#: A relative reference against base_url http://host:port/api/ (``{other}``: another server's host:port)
#: and the request target it gets on the base's server: it never leaves the base URL.
RELATIVE_UNDER_BASE = [
    ("", "/api/"),
    ("x", "/api/x"),
    ("/x", "/api/x"),
    ("//{other}/x", "/api/{other}/x"),
    (" //{other}/x ", "/api/{other}/x"),
    ("\\\\{other}/x", "/api/{other}/x"),
    ("/\\{other}/x", "/api/{other}/x"),
    ("///{other}", "/api/{other}"),
    ("?q=1", "/api/?q=1"),
    ("#f", "/api/"),
    ("/" + "/{other}/x?y=1#f", "/api/{other}/x?y=1"),  # api.get("/" + user_supplied_path)
    ("@{other}/x", "/api/@{other}/x"),
    ("../../x", "/x"),  # dot segments stay on the base's origin
]


@pytest.mark.both_clients
def test_base_url_relative_reference_never_leaves_the_base_origin(server: MockServer) -> None:
    with MockServer() as other:
        hostport = f"127.0.0.1:{other.port}"
        with make_fast_client(
            base_url=server.url("/api/"), auth=("alice", SECRET), headers={"X-Api-Key": "k"}
        ) as client:
            sibling = client.with_options(read_timeout=4)
            for reference, target in RELATIVE_UNDER_BASE:
                reference = reference.format(other=hostport)
                for _ in range(5):
                    server.enqueue(MockResponse(200))
                client.get(reference)
                client.request("GET", reference)
                client.stream("GET", reference).close()
                client.new_call(client.build_request("GET", reference)).execute()
                sibling.get(reference)
                for _ in range(5):
                    seen = server.take_request()
                    assert seen.target == target.format(other=hostport), reference
                    assert seen.header("host") == f"127.0.0.1:{server.port}"
                    assert seen.header("authorization") == basic("alice", SECRET)
                    assert seen.header("x-api-key") == "k"
            for bad in ("\t/x", "/x\n", f"\x00//{hostport}/x", "b:8080/x"):
                with pytest.raises(ValueError):
                    client.get(bad)
        assert other.request_count == 0 and other.connection_count == 0


@pytest.mark.both_clients
def test_base_url_map_resolves_relative_urls_under_the_base(server: MockServer, client_kind: str) -> None:
    blocking_only(client_kind, "AsyncClient.map is an async iterator")
    with MockServer() as other:
        hostport = f"127.0.0.1:{other.port}"
        for _ in range(2):
            server.enqueue(MockResponse(200))
        with make_fast_client(base_url=server.url("/api/"), auth=("alice", SECRET)) as client:
            results = list(client.map([f"//{hostport}/x", "/y"], ordered=True))
        assert [r.status_code for _, r in results] == [200, 200]  # type: ignore[union-attr]
        targets = sorted(server.take_request().target for _ in range(2))
        assert targets == [f"/api/{hostport}/x", "/api/y"] and other.request_count == 0


@pytest.mark.both_clients
def test_relative_url_without_base_url_is_refused() -> None:
    with make_fast_client() as client, pytest.raises(ValueError):
        client.get("/no/base")


# -- the factory itself: join_base_url, build, core_for ------------------------------------------------


@pytest.mark.parametrize(
    "base, url, joined",
    [
        ("http://a.test/api/", "users", "http://a.test/api/users"),
        ("http://a.test/api", "users", "http://a.test/api/users"),  # the base's path is a folder
        ("http://a.test/api/", "/users?x=1#f", "http://a.test/api/users?x=1#f"),
        ("http://a.test/api/?old=1#frag", "x", "http://a.test/api/x"),  # its query and fragment go
        ("http://a.test/api/", "//b.test/x", "http://a.test/api/b.test/x"),  # never another host
        ("http://a.test/api/", "\\\\b.test", "http://a.test/api/b.test"),
        ("http://a.test/api/", "  x  ", "http://a.test/api/x"),
        ("http://a.test/api/", "https://b.test/y", "https://b.test/y"),  # absolute: as it is
        ("http://a.test/api/", "HTTP://b.test/y", "http://b.test/y"),
    ],
)
def test_factory_join_base_url(base: str, url: str, joined: str) -> None:
    assert str(join_base_url(fastnet.URL(base), url)) == joined


def test_factory_join_base_url_refuses_controls_and_non_strings() -> None:
    base = fastnet.URL("http://a.test/api/")
    assert join_base_url(base, fastnet.URL("http://b.test/")) == fastnet.URL("http://b.test/")
    for bad in ("x\ny", "\x00", "a\tb"):
        with pytest.raises(ValueError):
            join_base_url(base, bad)
    with pytest.raises(TypeError, match="must be a str or URL"):
        join_base_url(base, 42)  # type: ignore[arg-type]


def test_factory_build_applies_base_url_and_params() -> None:
    retry = RetryAndFollowUpInterceptor
    factory = RequestFactory(fastnet.URL("http://a.test/v1/"), "key=k&lang=en", retry)
    assert factory.builds and not RequestFactory(None, None, retry).builds
    request = factory.build("GET", "items", params={"lang": "fr", "page": 2})
    assert str(request.url) == "http://a.test/v1/items?key=k&lang=fr&page=2"
    plain = RequestFactory(None, None, retry).build(
        "POST", "http://a.test/x", params=[("a", 1)], data={"f": "v"}
    )
    assert str(plain.url) == "http://a.test/x?a=1"
    assert plain.body is not None and plain.body.content_type == "application/x-www-form-urlencoded"


def test_factory_core_for_one_copy_per_distinct_setting() -> None:
    with fastnet.Client(trust_env=False, read_timeout=10) as client:
        factory, core = client._assembly.factory, client._core
        plain = fastnet.Request("GET", "http://a.test/")
        assert factory.core_for(core, plain) is core  # no call settings: the client's own
        five = factory.core_for(core, fastnet.Request("GET", "http://a.test/", timeout=5))
        assert five is not core and (five.connect_timeout, five.read_timeout, five.write_timeout) == (5, 5, 5)
        assert five.pool is core.pool and five.connector is core.connector  # a copy sharing the rest
        again = factory.core_for(core, fastnet.Request("GET", "http://b.test/", timeout=5))
        assert again is five  # cached per setting, whatever the URL
        stay = factory.core_for(core, fastnet.Request("GET", "http://a.test/", follow_redirects=False))
        assert stay is not five and not stay.follow_redirects and stay.read_timeout == 10
        assert stay.interceptors is not core.interceptors  # RetryAndFollowUp of its own
        assert five.interceptors is core.interceptors
        client.close()
        assert five.closed and stay.closed  # the client's close reaches its calls' copies


def test_factory_an_unhashable_authenticator_is_not_cached() -> None:

    class Unhashable:
        __hash__ = None  # type: ignore[assignment]

        def authenticate(self, route: Any, response: Any) -> Any:
            return None

    with fastnet.Client(trust_env=False) as client:
        request = fastnet.Request("GET", "http://a.test/", auth=Unhashable())
        first = client._assembly.factory.core_for(client._core, request)
        second = client._assembly.factory.core_for(client._core, request)
        assert request._options is not None
        assert first is not second and first.authenticator is request._options[2]
        assert client._assembly.factory.cores == {}
