"""What requests and httpx put on the wire for a call, to hold fastnet's against.

``sent_by(library, server, method, path, **options)`` makes the call with ``requests`` or ``httpx`` (no
environment, no redirects) against a ``MockServer`` and returns the request the server recorded;
``comparable(recorded)`` keeps what the three clients must agree on: the request line, the headers that
describe the body and the credentials, and the body, with a multipart boundary replaced by
``BOUNDARY`` (each client picks its own at random). ``CRAWLED_TARGETS`` is what goes on the wire for
URLs as a crawler finds them.
"""

from __future__ import annotations

import re
import warnings
from typing import Any

from fastnet.testing import MockResponse, MockServer
from fastnet.testing._mock_server import RecordedRequest

__all__ = ["COMPARED_HEADERS", "CRAWLED_TARGETS", "comparable", "sent_by"]

#: The headers the three clients set the same way for the same call.
COMPARED_HEADERS = ("content-type", "content-length", "authorization", "cookie", "transfer-encoding")


#: ``(what follows "http://host:port" in a URL as found, the request target sent for it)``. Checked
#: against httpx 0.29.0 (what it puts on the wire; 0.28.1 encodes these the same) and the WHATWG URL
#: Standard's percent-encode sets for http(s): only space, '"', '<', '>', non-ASCII (as UTF-8) and, in the
#: path, '`', '{', '}' (in the query, "'") are encoded; an existing %XX and a bare % stay as they are;
#: the fragment is never sent. Two rows differ from httpx, which follows RFC 3986 there and WHATWG
#: (browsers) does not: a backslash in the path is a slash, and "'" in the query is %27.
CRAWLED_TARGETS = [
    ("/search?data[0]=1&data[1]=2", "/search?data[0]=1&data[1]=2"),
    ("/a[1]/b]?x=[y]", "/a[1]/b]?x=[y]"),
    ("/p|q?a=b|c", "/p|q?a=b|c"),
    ("/x?q=a^b&r=c\\d", "/x?q=a^b&r=c\\d"),
    ("/x^y", "/x^y"),
    ("/already%2Fencoded%20path?q=%3D%3d%7e", "/already%2Fencoded%20path?q=%3D%3d%7e"),
    ("/lower%c3%a9?x=%e2%82%ac", "/lower%c3%a9?x=%e2%82%ac"),
    ("/bare%?q=100%&r=%zz&s=%4", "/bare%?q=100%&r=%zz&s=%4"),
    ("/has space?q=a b", "/has%20space?q=a%20b"),
    ("/caf\u00e9/\u00f1?q=na\u00efve&k=\u20ac", "/caf%C3%A9/%C3%B1?q=na%C3%AFve&k=%E2%82%AC"),
    ("/\u65e5\u672c\u8a9e?q=\u65e5\u672c", "/%E6%97%A5%E6%9C%AC%E8%AA%9E?q=%E6%97%A5%E6%9C%AC"),
    ("/emoji/\U0001f600?e=\U0001f600", "/emoji/%F0%9F%98%80?e=%F0%9F%98%80"),
    ('/quote"d?q="x"', "/quote%22d?q=%22x%22"),
    ("/back`tick`?q=`x`", "/back%60tick%60?q=`x`"),
    ("/br{ace}?q={x}", "/br%7Bace%7D?q={x}"),
    ("/lt<gt>?q=<x>", "/lt%3Cgt%3E?q=%3Cx%3E"),
    ("/apos'?q='x'", "/apos'?q=%27x%27"),  # httpx: ?q='x'
    ("/empty?", "/empty?"),
    ("/double??x=1", "/double??x=1"),
    ("/frag#section", "/frag"),
    ("/frag?q=1#sec?x", "/frag?q=1"),
    ("/p?q=a#b#c", "/p?q=a"),
    ("/matrix;a=1;b=2?x=1", "/matrix;a=1;b=2?x=1"),
    ("/plus+path+x?q=a+b", "/plus+path+x?q=a+b"),
    ("/sub-delims!$&'()*+,;=:@?q=!$&()*+,;=:@/?", "/sub-delims!$&'()*+,;=:@?q=!$&()*+,;=:@/?"),
    ("/tilde~_-.x?q=~_-.", "/tilde~_-.x?q=~_-."),
    ("/path\\with\\backslash?q=a\\b", "/path/with/backslash?q=a\\b"),  # httpx keeps the backslashes
    ("/p?q=a/b?c", "/p?q=a/b?c"),
    ("/%41%42?%41=%42", "/%41%42?%41=%42"),
    ("/p?q=a%20b+c", "/p?q=a%20b+c"),
    ("/a/./b/../c?q=./..", "/a/c?q=./.."),
    ("/p?url=http://x.example/y?z=1&w=2", "/p?url=http://x.example/y?z=1&w=2"),
    ("/%E2%82%AC?x=%E2%82%AC", "/%E2%82%AC?x=%E2%82%AC"),
    ("/pct%25?q=%25", "/pct%25?q=%25"),
    ("/wiki/Foo_(bar)|baz?action=edit&section=[1]", "/wiki/Foo_(bar)|baz?action=edit&section=[1]"),
    ("/img/a.jpg?crop=[0,0,100,50]|fit&w=100", "/img/a.jpg?crop=[0,0,100,50]|fit&w=100"),
    ("/search?q=c%2B%2B+templates&lang=en|fr", "/search?q=c%2B%2B+templates&lang=en|fr"),
    ("/%7Euser/~other/a%2fb%2Fc", "/%7Euser/~other/a%2fb%2Fc"),
    ("/p?a=1&&b=2&", "/p?a=1&&b=2&"),
    ("/p?q=a:b@c", "/p?q=a:b@c"),
    ("?only", "/?only"),
    ("", "/"),
]


def sent_by(library: str, server: MockServer, method: str, path: str, **options: Any) -> RecordedRequest:
    """The request ``library`` ("requests" or "httpx") sends for ``method path`` with ``options``."""
    server.enqueue(MockResponse(200, body=b"ok"))
    url = path if "://" in path else server.url(path)
    if library == "requests":
        import requests

        with requests.Session() as session:
            session.trust_env = False
            session.request(method, url, allow_redirects=False, timeout=10, **options).close()
    else:
        import httpx

        with httpx.Client(trust_env=False, timeout=10) as client, warnings.catch_warnings():
            # httpx deprecates per-request cookies= and data= for raw bytes, but still sends them
            warnings.simplefilter("ignore", DeprecationWarning)
            client.request(method, url, **options).close()
    return server.take_request()


def _boundary(recorded: RecordedRequest) -> str | None:
    ctype = recorded.header("content-type") or ""
    found = re.search(r"boundary=([^;\s]+)", ctype)
    return found.group(1).strip('"') if found else None


def comparable(recorded: RecordedRequest) -> dict[str, Any]:
    """The request line, ``COMPARED_HEADERS`` and the body, boundary replaced by ``BOUNDARY``."""
    boundary = _boundary(recorded)
    body = recorded.body
    headers = {name: recorded.header(name) for name in COMPARED_HEADERS}
    if headers["content-length"] is not None:
        assert int(headers["content-length"]) == len(body), "the body does not match its Content-Length"
    if boundary is not None:
        body = body.replace(boundary.encode("ascii"), b"BOUNDARY")
        headers["content-type"] = (headers["content-type"] or "").replace(boundary, "BOUNDARY")
        if headers["content-length"] is not None:  # each boundary's length is its client's
            headers["content-length"] = str(len(body))
    return {"request_line": recorded.request_line, "headers": headers, "body": body}
