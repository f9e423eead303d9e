"""Corpus of HTTP/1.1 responses for the parser's differential tests.

Each :class:`Case` is the byte stream a client would read on one connection (one or more responses),
whether the request was ``HEAD``, whether the peer closes after the bytes (EOF), and what the parsers
must decide (``"ok"`` or ``"error"``). ``diff`` names the row of :data:`DELIBERATE_DIFFERENCES` when our
two twins deliberately disagree with raw h11 on that input.

``generated_cases`` builds valid responses and mutations of them from a seeded ``random.Random``; the
same builders drive the hypothesis strategies ``valid_case_strategy`` and ``mutated_case_strategy``.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

__all__ = [
    "Case",
    "DELIBERATE_DIFFERENCES",
    "HAND_WRITTEN",
    "explain_difference",
    "generated_cases",
    "make_valid",
    "mutate",
]


@dataclass(frozen=True)
class Case:
    name: str
    data: bytes
    expect: str | None = "ok"  # "ok", "error", or None (generated: unknown, only agreement matters)
    head: bool = False
    eof: bool = True
    diff: str | None = None
    count: int | None = None  # expected number of final responses when "ok"


# rule -> (why we differ from raw h11, regex our error message matches (None: we accept), h11's behaviour,
#          predicate on the input bytes that must hold when the difference shows up in generated input)
DELIBERATE_DIFFERENCES: dict[str, tuple[str, str | None, str]] = {
    "http-version": (
        "only HTTP/1.0 and HTTP/1.1 status lines are accepted (as OkHttp); h11 accepts any HTTP/x.y",
        r"^Unexpected status line",
        "h11-accepts",
    ),
    "cl-and-te": (
        "Content-Length together with Transfer-Encoding is a request-smuggling signal; h11 lets chunked win",
        r"both Content-Length and Transfer-Encoding",
        "h11-accepts",
    ),
    "204-length": (
        "a 204 with a non-zero Content-Length is rejected (as OkHttp); h11 ignores the header",
        r"^HTTP 204 had non-zero Content-Length",
        "h11-accepts",
    ),
    "length-overflow": (
        "Content-Length and chunk sizes must fit in 63 bits; h11 accepts up to 20 digits",
        r"too large",
        "h11-accepts",
    ),
    "header-limit": (
        "the header/trailer block limit applies to the complete block whatever the read sizes; h11 only "
        "checks an incomplete buffer (and the oracle runs with no limit)",
        r"exceed \d+ bytes",
        "h11-accepts",
    ),
    "line-limit": (
        "a single line over max_line_size is rejected; h11 has no line limit",
        r"line longer than",
        "h11-accepts",
    ),
    "http10-keep-alive": (
        "an HTTP/1.0 response with Connection: keep-alive keeps the connection (as OkHttp); h11 always "
        "closes after HTTP/1.0, so it reports keep_alive False and reads no further response",
        None,
        "keep-alive",
    ),
}

_PREDICATES = {
    "http-version": lambda d: re.search(rb"HTTP/(?!1\.[01] )[0-9]\.[0-9] ", d) is not None,
    "cl-and-te": lambda d: b"content-length" in d.lower() and b"transfer-encoding" in d.lower(),
    "204-length": lambda d: b" 204" in d and b"content-length" in d.lower(),
    "length-overflow": lambda d: re.search(rb"[0-9a-fA-F]{16,}", d) is not None,
    "header-limit": lambda d: len(d) > 65536,
    "line-limit": lambda d: len(d) > 4096,
    "http10-keep-alive": lambda d: b"HTTP/1.0" in d and b"keep-alive" in d.lower(),
}


def explain_difference(data: bytes, our_error: str | None) -> str | None:
    """The rule that explains our rejecting ``data`` (with ``our_error``) where h11 accepts, if any."""
    for rule, (_, pattern, behaviour) in DELIBERATE_DIFFERENCES.items():
        if behaviour != "h11-accepts" or pattern is None or our_error is None:
            continue
        if re.search(pattern, our_error) and _PREDICATES[rule](data):
            return rule
    return None


def keep_alive_difference_applies(data: bytes) -> bool:
    return _PREDICATES["http10-keep-alive"](data)


# -- hand-written cases ------------------------------------------------------------------------------

HAND_WRITTEN: list[Case] = []


def _add(name: str, data: bytes, expect: str | None = "ok", **kw: object) -> None:
    HAND_WRITTEN.append(Case(name, data, expect, **kw))  # type: ignore[arg-type]


OK_HEAD = b"HTTP/1.1 200 OK\r\n"
CL0 = b"Content-Length: 0\r\n"


def _resp(status_line: bytes = OK_HEAD, headers: bytes = CL0, body: bytes = b"") -> bytes:
    return status_line + headers + b"\r\n" + body


# status lines
_add("basic", _resp(headers=b"Content-Length: 5\r\nServer: x\r\n", body=b"hello"))
_add("no-reason-no-space", _resp(b"HTTP/1.1 200\r\n"))
_add("no-reason-with-space", _resp(b"HTTP/1.1 200 \r\n"))
_add("reason-spaces-tabs", _resp(b"HTTP/1.1 200 Very  OK\t!\r\n"))
_add("reason-obs-text", _resp(b"HTTP/1.1 200 D\xe9j\xe0 vu\r\n"))
_add("reason-leading-space", _resp(b"HTTP/1.1 404  Not Found\r\n"))
_add("status-999", _resp(b"HTTP/1.1 999 Custom\r\n"))
_add("status-599", _resp(b"HTTP/1.1 599 Whatever\r\n"))
_add("typo-protocol", _resp(b"HTPP/1.1 200 OK\r\n"), "error")
_add("version-1.2", _resp(b"HTTP/1.2 200 OK\r\n"), "error", diff="http-version")
_add("version-2.0", _resp(b"HTTP/2.0 200 OK\r\n"), "error", diff="http-version")
_add("version-0.9", _resp(b"HTTP/0.9 200 OK\r\n"), "error", diff="http-version")
_add("version-1.11", _resp(b"HTTP/1.11 200 OK\r\n"), "error")
_add("version-lowercase", _resp(b"http/1.1 200 OK\r\n"), "error")
_add("status-2-digits", _resp(b"HTTP/1.1 20 OK\r\n"), "error")
_add("status-4-digits", _resp(b"HTTP/1.1 2000 OK\r\n"), "error")
_add("status-10-digits", _resp(b"HTTP/1.1 2000000000 OK\r\n"), "error")
_add("status-non-digit", _resp(b"HTTP/1.1 20a OK\r\n"), "error")
_add("status-00a", _resp(b"HTTP/1.1 00a OK\r\n"), "error")
_add("status-099", _resp(b"HTTP/1.1 099 Low\r\n"), "error")
_add("status-000", _resp(b"HTTP/1.1 000 Zero\r\n"), "error")
_add("leading-space", _resp(b" HTTP/1.1 200 OK\r\n"), "error")
_add("double-space", _resp(b"HTTP/1.1  200 OK\r\n"), "error")
_add("tab-before-status", _resp(b"HTTP/1.1\t200 OK\r\n"), "error")
_add("tab-before-reason", _resp(b"HTTP/1.1 200\tOK\r\n"), "error")
_add("reason-nul", _resp(b"HTTP/1.1 200 O\x00K\r\n"), "error")
_add("reason-cr", _resp(b"HTTP/1.1 200 O\rK\r\n"), "error")
_add("reason-vt", _resp(b"HTTP/1.1 200 O\x0bK\r\n"), "error")
_add("icy", _resp(b"ICY 200 OK\r\n"), "error")
_add("leading-blank-line", b"\r\n" + _resp(), "error")
_add("leading-bare-lf", b"\n" + _resp(), "error")
_add("empty-stream", b"", "error")
_add("eof-mid-status-line", b"HTTP/1.1 200 O", "error")
_add("eof-mid-headers", b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n", "error")
_add("eof-before-blank-cr", b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r", "error")
_add("garbage", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", "error")
_add("html-instead", b"<html><body>hi</body></html>\r\n\r\n", "error")
_add("cr-cr-lf-line", b"HTTP/1.1 200 OK\r\r\nContent-Length: 0\r\n\r\n", "error")

# header lines
_add("header-no-colon", _resp(headers=CL0 + b"NoColon\r\n"), "error")
_add("header-space-before-colon", _resp(headers=CL0 + b"Name : v\r\n"), "error")
_add("header-tab-before-colon", _resp(headers=CL0 + b"Name\t: v\r\n"), "error")
_add("header-empty-name", _resp(headers=CL0 + b": v\r\n"), "error")
_add("header-space-in-name", _resp(headers=CL0 + b"Na me: v\r\n"), "error")
_add("header-non-token-name", _resp(headers=CL0 + b"N\xe1me: v\r\n"), "error")
_add("header-bracket-name", _resp(headers=CL0 + b"Na[me]: v\r\n"), "error")
_add("header-nul-in-value", _resp(headers=CL0 + b"Name: a\x00b\r\n"), "error")
_add("header-cr-in-value", _resp(headers=CL0 + b"Name: a\rb\r\n"), "error")
_add("header-vt-in-value", _resp(headers=CL0 + b"Name: a\x0bb\r\n"), "error")
_add("header-ff-in-value", _resp(headers=CL0 + b"Name: a\x0cb\r\n"), "error")
_add("header-controls-obs-text-ok", _resp(headers=CL0 + b"Name: a\x01b\x7f\xff c\r\n"))
_add("header-empty-value", _resp(headers=CL0 + b"Empty:\r\n"))
_add("header-blank-value", _resp(headers=CL0 + b"Blank:    \r\n"))
_add("header-ows-stripped", _resp(headers=CL0 + b"Ows: \t v a l \t \r\n"))
_add("header-colons-in-value", _resp(headers=CL0 + b"X-Weird: a:b::c\r\n"))
_add("header-duplicates", _resp(headers=CL0 + b"Set-Cookie: a=1\r\nset-cookie: b=2\r\nSET-COOKIE: c=3\r\n"))
_add("header-case-kept", _resp(headers=b"cOnTeNt-LeNgTh: 2\r\nX-MiXeD: Val\r\n", body=b"ok"))
_add("header-token-symbols", _resp(headers=CL0 + b"!#$%&'*+-.^_`|~09az: x\r\n"))
# obs-fold (RFC 9112 §5.2): unfolded into the previous line with one SP, as h11 does
_add("obs-fold-space", _resp(headers=CL0 + b"X-A: one\r\n two\r\n"))
_add("obs-fold-tab", _resp(headers=CL0 + b"X-A: one\r\n\ttwo\r\n"))
_add("obs-fold-several", _resp(headers=b"X-A: one \r\n \t two\r\n\tthree\r\n" + CL0 + b"X-B: b\r\n  c\r\n"))
_add("obs-fold-only-whitespace", _resp(headers=b"X-A: one\r\n  \t \r\n" + CL0))
_add("obs-fold-empty-value", _resp(headers=b"X-A:\r\n value\r\n" + CL0))
_add("obs-fold-after-last-header", _resp(headers=b"Content-Length: 2\r\nX-A: one\r\n two\r\n", body=b"hi"))
_add("obs-fold-bare-lf", b"HTTP/1.1 200 OK\nContent-Length: 2\nX-A: one\n two\n\nhi")
_add("obs-fold-content-length", _resp(headers=b"Content-Length:\r\n 2\r\n", body=b"hi"))
_add("obs-fold-content-length-list", _resp(headers=b"Content-Length: 2,\r\n 2\r\n", body=b"hi"))
_add("obs-fold-transfer-encoding", _resp(headers=b"Transfer-Encoding:\r\n chunked\r\n", body=b"0\r\n\r\n"))
_add("obs-fold-connection-close", _resp(headers=CL0 + b"Connection: keep-alive,\r\n close\r\n") + _resp())
_add("obs-fold-then-next-response", _resp(headers=CL0 + b"X-A: 1\r\n 2\r\n") * 2, count=2)
_add("obs-fold-first-line", _resp(headers=b" X-A: one\r\n" + CL0), "error")
_add("obs-fold-first-line-tab", _resp(headers=b"\tX-A: one\r\n" + CL0), "error")
_add("obs-fold-nul", _resp(headers=CL0 + b"X-A: one\r\n t\x00wo\r\n"), "error")
_add("obs-fold-after-cr-cr-line", _resp(headers=CL0 + b"X-A: one\r\r\n two\r\n"), "error")
_add("obs-fold-makes-bad-length", _resp(headers=b"Content-Length: 2\r\n 3\r\n", body=b"hi"), "error")
_add("header-line-bare-cr-end", _resp(headers=CL0 + b"X: y\r\r\n"), "error")
_add("many-headers", _resp(headers=CL0 + b"".join(b"X-H%d: value %d\r\n" % (i, i) for i in range(100))))

# Content-Length
_add("cl-zero", _resp())
_add("cl-repeat-list", _resp(headers=b"Content-Length: 5, 5\r\n", body=b"hello"))
_add("cl-repeat-list-ows", _resp(headers=b"Content-Length: 5 ,5 , 5\r\n", body=b"hello"))
_add("cl-repeat-headers", _resp(headers=b"Content-Length: 5\r\ncontent-length: 5\r\n", body=b"hello"))
_add(
    "cl-conflict-headers",
    _resp(headers=b"Content-Length: 5\r\nContent-Length: 6\r\n", body=b"hello!"),
    "error",
)
_add("cl-conflict-list", _resp(headers=b"Content-Length: 5, 6\r\n", body=b"hello!"), "error")
_add("cl-trailing-comma", _resp(headers=b"Content-Length: 5,\r\n", body=b"hello"), "error")
_add("cl-non-numeric", _resp(headers=b"Content-Length: abc\r\n"), "error")
_add("cl-negative", _resp(headers=b"Content-Length: -1\r\n"), "error")
_add("cl-plus", _resp(headers=b"Content-Length: +5\r\n", body=b"hello"), "error")
_add("cl-empty", _resp(headers=b"Content-Length:\r\n"), "error")
_add("cl-float", _resp(headers=b"Content-Length: 5.0\r\n", body=b"hello"), "error")
_add("cl-exp", _resp(headers=b"Content-Length: 1e3\r\n"), "error")
_add("cl-hex", _resp(headers=b"Content-Length: 0x5\r\n", body=b"hello"), "error")
_add("cl-inner-space", _resp(headers=b"Content-Length: 1 0\r\n", body=b"0123456789"), "error")
_add("cl-leading-zeros", _resp(headers=b"Content-Length: 005\r\n", body=b"hello"))
_add(
    "cl-zeros-vs-plain", _resp(headers=b"Content-Length: 05\r\nContent-Length: 5\r\n", body=b"hello"), "error"
)
_add(
    "cl-20-digits-overflow",
    _resp(headers=b"Content-Length: 99999999999999999999\r\n"),
    "error",
    head=True,
    diff="length-overflow",
)
_add(
    "cl-2-63",
    _resp(headers=b"Content-Length: 9223372036854775808\r\n"),
    "error",
    head=True,
    diff="length-overflow",
)
_add("cl-2-63-minus-1-head", _resp(headers=b"Content-Length: 9223372036854775807\r\n"), head=True)
_add("cl-21-digits", _resp(headers=b"Content-Length: 000000000000000000005\r\n", body=b"hello"), "error")
_add("cl-20-digits-small", _resp(headers=b"Content-Length: 00000000000000000005\r\n", body=b"hello"))
_add("cl-short-body-eof", _resp(headers=b"Content-Length: 10\r\n", body=b"short"), "error")
_add("cl-body-not-closed", _resp(headers=b"Content-Length: 10\r\n", body=b"short"), None, eof=False)

# Transfer-Encoding and chunked bodies
CHUNKED = b"Transfer-Encoding: chunked\r\n"
_add("chunked-basic", _resp(headers=CHUNKED, body=b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"))
_add("chunked-uppercase-te", _resp(headers=b"Transfer-Encoding: CHUNKED\r\n", body=b"1\r\na\r\n0\r\n\r\n"))
_add(
    "chunked-extensions",
    _resp(headers=CHUNKED, body=b'5;name=val\r\nhello\r\n3;a;b="c d"\r\nabc\r\n0;x\r\n\r\n'),
)
_add("chunked-ext-with-cr", _resp(headers=CHUNKED, body=b"5;a\rb\r\nhello\r\n0\r\n\r\n"))
_add("chunked-ows-after-size", _resp(headers=CHUNKED, body=b"5 \t\r\nhello\r\n0\r\n\r\n"))
_add("chunked-space-before-ext", _resp(headers=CHUNKED, body=b"5 ;x\r\nhello\r\n0\r\n\r\n"), "error")
_add("chunked-uppercase-hex", _resp(headers=CHUNKED, body=b"A\r\n0123456789\r\n0\r\n\r\n"))
_add("chunked-trailers", _resp(headers=CHUNKED, body=b"5\r\nhello\r\n0\r\nX-T: 1\r\nY-Sum: abc\r\n\r\n"))
_add("chunked-trailers-bare-lf", _resp(headers=CHUNKED, body=b"5\r\nhello\r\n0\r\nX-T: 1\nY: 2\n\n"))
_add("chunked-end-bare-lf", _resp(headers=CHUNKED, body=b"5\r\nhello\r\n0\r\n\n"))
_add("chunked-trailer-obs-fold", _resp(headers=CHUNKED, body=b"0\r\nX-T: 1\r\n more\r\n\r\n"))
_add("chunked-trailer-obs-fold-bare-lf", _resp(headers=CHUNKED, body=b"0\r\nX-T: 1\n\tmore\nY: 2\n\n"))
_add("chunked-trailer-first-fold", _resp(headers=CHUNKED, body=b"0\r\n X-T: 1\r\n\r\n"), "error")
_add("chunked-trailer-bad-line", _resp(headers=CHUNKED, body=b"0\r\nbad trailer\r\n\r\n"), "error")
_add("chunked-trailer-bad-cl", _resp(headers=CHUNKED, body=b"0\r\nContent-Length: x\r\n\r\n"), "error")
_add("chunked-trailer-cr-start", _resp(headers=CHUNKED, body=b"0\r\n\rX: y\r\n\r\n"), "error")
_add(
    "chunked-many-small",
    _resp(headers=CHUNKED, body=b"".join(b"1\r\n%c\r\n" % (65 + i % 26) for i in range(200)) + b"0\r\n\r\n"),
)
_add("chunked-0x", _resp(headers=CHUNKED, body=b"0x5\r\nhello\r\n0\r\n\r\n"), "error")
_add("chunked-empty-size", _resp(headers=CHUNKED, body=b"\r\nhello\r\n0\r\n\r\n"), "error")
_add("chunked-non-hex", _resp(headers=CHUNKED, body=b"g\r\nhello\r\n0\r\n\r\n"), "error")
_add("chunked-negative", _resp(headers=CHUNKED, body=b"-5\r\nhello\r\n0\r\n\r\n"), "error")
_add("chunked-leading-space", _resp(headers=CHUNKED, body=b" 5\r\nhello\r\n0\r\n\r\n"), "error")
_add("chunked-20-digits", _resp(headers=CHUNKED, body=b"00000000000000000005\r\nhello\r\n0\r\n\r\n"))
_add(
    "chunked-21-digits", _resp(headers=CHUNKED, body=b"000000000000000000005\r\nhello\r\n0\r\n\r\n"), "error"
)
_add("chunked-huge-incomplete", _resp(headers=CHUNKED, body=b"7fffffffffffffff\r\nhello"), "error")
_add("chunked-overflow-2-63", _resp(headers=CHUNKED, body=b"8000000000000000\r\nhello"), "error")
_add("chunked-overflow-2-64", _resp(headers=CHUNKED, body=b"10000000000000000\r\nhello"), "error")
_add("chunked-data-no-crlf", _resp(headers=CHUNKED, body=b"5\r\nhelloX\r\n0\r\n\r\n"), "error")
_add("chunked-data-bare-lf", _resp(headers=CHUNKED, body=b"5\r\nhello\n0\r\n\r\n"), "error")
_add("chunked-data-cr-only", _resp(headers=CHUNKED, body=b"5\r\nhello\r0\r\n\r\n"), "error")
_add("chunked-size-bare-lf", _resp(headers=CHUNKED, body=b"5\nhello\r\n0\r\n\r\n"), "error")
_add("chunked-eof-in-data", _resp(headers=CHUNKED, body=b"5\r\nhel"), "error")
_add("chunked-eof-no-last-chunk", _resp(headers=CHUNKED, body=b"5\r\nhello\r\n"), "error")
_add("chunked-eof-in-trailers", _resp(headers=CHUNKED, body=b"0\r\nX-T: 1\r\n"), "error")
_add("te-gzip", _resp(headers=b"Transfer-Encoding: gzip\r\n", body=b"abc"), "error")
_add("te-gzip-chunked", _resp(headers=b"Transfer-Encoding: gzip, chunked\r\n", body=b"0\r\n\r\n"), "error")
_add("te-chunked-gzip", _resp(headers=b"Transfer-Encoding: chunked, gzip\r\n", body=b"0\r\n\r\n"), "error")
_add("te-identity", _resp(headers=b"Transfer-Encoding: identity\r\n", body=b"abc"), "error")
_add("te-empty", _resp(headers=b"Transfer-Encoding:\r\n", body=b"abc"), "error")
_add("te-twice", _resp(headers=CHUNKED + CHUNKED, body=b"0\r\n\r\n"), "error")
_add(
    "te-and-cl",
    _resp(headers=CHUNKED + b"Content-Length: 5\r\n", body=b"0\r\n\r\n"),
    "error",
    diff="cl-and-te",
)
_add(
    "cl-and-te-head", _resp(headers=b"Content-Length: 5\r\n" + CHUNKED), "error", head=True, diff="cl-and-te"
)

# until-close bodies
_add("until-close", _resp(headers=b"Server: x\r\n", body=b"hello world"))
_add("until-close-empty", _resp(headers=b""))
_add("until-close-http10", _resp(b"HTTP/1.0 200 OK\r\n", headers=b"", body=b"old school"))
_add("until-close-not-closed", _resp(headers=b"", body=b"partial"), None, eof=False)
_add("until-close-keep-alive-header", _resp(headers=b"Connection: keep-alive\r\n", body=b"abc"))

# statuses without a body
_add("204", _resp(b"HTTP/1.1 204 No Content\r\n", headers=b""))
_add("204-cl-zero", _resp(b"HTTP/1.1 204 No Content\r\n"))
_add(
    "204-cl-five",
    _resp(b"HTTP/1.1 204 No Content\r\n", headers=b"Content-Length: 5\r\n"),
    "error",
    diff="204-length",
)
_add("204-chunked", _resp(b"HTTP/1.1 204 No Content\r\n", headers=CHUNKED))
_add("304-with-cl", _resp(b"HTTP/1.1 304 Not Modified\r\n", headers=b'Content-Length: 100\r\nETag: "x"\r\n'))
_add("304-with-chunked", _resp(b"HTTP/1.1 304 Not Modified\r\n", headers=CHUNKED))
_add(
    "204-then-200",
    _resp(b"HTTP/1.1 204 No Content\r\n", headers=b"") + _resp(headers=b"Content-Length: 2\r\n", body=b"hi"),
    count=2,
)
_add(
    "304-then-200",
    _resp(b"HTTP/1.1 304 Not Modified\r\n", headers=b"Content-Length: 9\r\n")
    + _resp(headers=b"Content-Length: 2\r\n", body=b"hi"),
    count=2,
)
_add("205-with-body", _resp(b"HTTP/1.1 205 Reset Content\r\n", headers=b"Content-Length: 2\r\n", body=b"hi"))

# HEAD
_add("head-cl", _resp(headers=b"Content-Length: 100\r\n"), head=True)
_add("head-chunked", _resp(headers=CHUNKED), head=True)
_add("head-no-framing", _resp(headers=b""), head=True)
_add("head-two", _resp(headers=b"Content-Length: 100\r\n") * 2, head=True, count=2)
_add(
    "head-cl-then-more",
    _resp(headers=b"Content-Length: 3\r\n") + _resp(headers=b"Content-Length: 3\r\n"),
    head=True,
    count=2,
)

# interim responses
_add("100-then-200", b"HTTP/1.1 100 Continue\r\n\r\n" + _resp(headers=b"Content-Length: 2\r\n", body=b"hi"))
_add(
    "103-early-hints",
    b"HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\nLink: </b.js>\r\n\r\n"
    + _resp(headers=b"Content-Length: 2\r\nLink: </a.css>\r\n", body=b"hi"),
)
_add("102-100-200", b"HTTP/1.1 102 Processing\r\n\r\nHTTP/1.1 100 Continue\r\n\r\n" + _resp())
_add("199-then-200", b"HTTP/1.1 199 Unknown\r\nX: 1\r\n\r\n" + _resp())
_add("interim-with-cl", b"HTTP/1.1 100 Continue\r\nContent-Length: 5\r\n\r\n" + _resp())
_add("interim-then-eof", b"HTTP/1.1 100 Continue\r\n\r\n", "error")
_add("interim-then-bad", b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 2x0 OK\r\n\r\n", "error")
_add(
    "101-switching",
    b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n\x81\x05hello",
)
_add("101-http10", b"HTTP/1.0 101 Switching\r\n\r\n")
_add("100-then-chunked-head", b"HTTP/1.1 100 Continue\r\n\r\n" + _resp(headers=CHUNKED), head=True)

# keep-alive sequences
_add(
    "two-cl",
    _resp(headers=b"Content-Length: 3\r\n", body=b"one")
    + _resp(headers=b"Content-Length: 3\r\n", body=b"two"),
    count=2,
)
_add(
    "cl-then-chunked",
    _resp(headers=b"Content-Length: 3\r\n", body=b"one")
    + _resp(headers=CHUNKED, body=b"3\r\ntwo\r\n0\r\n\r\n"),
    count=2,
)
_add(
    "chunked-then-cl",
    _resp(headers=CHUNKED, body=b"3\r\none\r\n0\r\nT: 1\r\n\r\n")
    + _resp(headers=b"Content-Length: 3\r\n", body=b"two"),
    count=2,
)
_add("three-responses", (_resp(headers=b"Content-Length: 1\r\n", body=b"x")) * 3, count=3)
_add(
    "keep-alive-then-bad",
    _resp(headers=b"Content-Length: 1\r\n", body=b"x") + b"HTTP/1.1 abc\r\n\r\n",
    "error",
)
_add("keep-alive-then-until-close", _resp() + _resp(headers=b"", body=b"rest"), count=2)
_add("conn-close", _resp(headers=b"Connection: close\r\nContent-Length: 1\r\n", body=b"x") + _resp(), count=1)
_add(
    "conn-close-upper",
    _resp(headers=b"Connection: CLOSE\r\nContent-Length: 1\r\n", body=b"x") + _resp(),
    count=1,
)
_add(
    "conn-list-close",
    _resp(headers=b"Connection: keep-alive, close\r\nContent-Length: 0\r\n") + _resp(),
    count=1,
)
_add("conn-list-upgrade-close", _resp(headers=b"Connection: upgrade,close\r\n" + CL0) + _resp(), count=1)
_add(
    "conn-two-headers-close",
    _resp(headers=b"Connection: keep-alive\r\nConnection: close\r\n" + CL0) + _resp(),
    count=1,
)
_add("conn-closed-not-token", _resp(headers=b"Connection: closed\r\n" + CL0) + _resp(), count=2)
_add("conn-xclose-not-token", _resp(headers=b"Connection: xclose, close-ish\r\n" + CL0) + _resp(), count=2)
_add("conn-keep-alive-11", _resp(headers=b"Connection: keep-alive\r\n" + CL0) + _resp(), count=2)
_add(
    "http10-cl",
    _resp(b"HTTP/1.0 200 OK\r\n", headers=b"Content-Length: 2\r\n", body=b"hi") + _resp(),
    count=1,
)
_add(
    "http10-keep-alive",
    _resp(b"HTTP/1.0 200 OK\r\n", headers=b"Connection: keep-alive\r\nContent-Length: 2\r\n", body=b"hi")
    + _resp(),
    count=2,
    diff="http10-keep-alive",
)
_add(
    "http10-keep-alive-mixed-case",
    _resp(b"HTTP/1.0 200 OK\r\n", headers=b"Connection: Keep-Alive\r\n" + CL0) + _resp(),
    count=2,
    diff="http10-keep-alive",
)
_add(
    "http10-keep-alive-then-close",
    _resp(b"HTTP/1.0 200 OK\r\n", headers=b"Connection: keep-alive, close\r\n" + CL0) + _resp(),
    count=1,
)
_add("http10-204", _resp(b"HTTP/1.0 204 No Content\r\n", headers=b""), count=1)
_add("not-closed-second-partial", _resp() + b"HTTP/1.1 200 OK\r\nContent-", None, eof=False)

# line endings
_add("bare-lf-everywhere", b"HTTP/1.1 200 OK\nContent-Length: 2\nX: y\n\nhi")
_add("bare-lf-mixed", b"HTTP/1.1 200 OK\r\nContent-Length: 2\nX: y\r\n\nhi")
_add("bare-lf-end-crlf", b"HTTP/1.1 200 OK\nContent-Length: 2\n\r\nhi")
_add("bare-lf-chunked-head", b"HTTP/1.1 200 OK\nTransfer-Encoding: chunked\n\n2\r\nhi\r\n0\r\n\r\n")
_add("bare-lf-no-headers", b"HTTP/1.1 204 No Content\n\n")

# Content-Encoding
_add("content-encoding", _resp(headers=b"Content-Encoding: GZIP \r\n" + CL0))
_add("content-encoding-last", _resp(headers=b"Content-Encoding: br\r\ncontent-encoding: Deflate\r\n" + CL0))

# the pure twin's whole-block fast path and where it hands over to the line-by-line path
_add(
    "fast-framing-adjacent",
    _resp(headers=b"Content-Length: 2\r\nConnection: keep-alive\r\nContent-Encoding: x\r\n", body=b"hi")
    + _resp(),
    count=2,
)
_add(
    "fast-framing-first-and-last",
    _resp(headers=b"connection: close\r\nServer: x\r\nDate: y\r\nCONTENT-LENGTH: 2\r\n", body=b"hi")
    + _resp(),
    count=1,
)
_add(
    "fast-framing-lookalikes",
    _resp(headers=CL0 + b"X-Note: content-length: 5\r\nX-Content-Length: 7\r\nConnection-X: close\r\n")
    + _resp(),
    count=2,
)
_add(
    "fast-chunked-then-connection",
    _resp(headers=b"Transfer-Encoding: chunked\r\nConnection: close\r\n", body=b"2\r\nhi\r\n0\r\n\r\n"),
)
_add(
    "fast-conn-repeated",
    _resp(headers=b"Connection: keep-alive\r\nConnection: close\r\n" + CL0) + _resp(),
    count=1,
)
_add("fast-conn-ows", _resp(headers=b"Connection: \t Close \t\r\n" + CL0) + _resp(), count=1)
_add("fast-cl-18-digits", _resp(headers=b"Content-Length: 999999999999999999\r\n"), head=True)
_add("fast-cl-19-digits", _resp(headers=b"Content-Length: 1000000000000000000\r\n"), head=True)
_add("fast-cl-ows", _resp(headers=b"Content-Length: \t 2 \t\r\n", body=b"hi"))
_add("fast-cl-superscript", _resp(headers=b"Content-Length: \xb2\r\n", body=b"hi"), "error")
_add("fast-cl-arabic-digit-bytes", _resp(headers=b"Content-Length: \xd9\xa3\r\n", body=b"hi"), "error")
_add(
    "fast-latin1-spaces-in-value", _resp(headers=CL0 + b"X-U: a\x85b\xa0c \x1c\x1d\x1e\x1f\r\nX-V: \xa0\r\n")
)
_add("fast-latin1-space-in-name", _resp(headers=CL0 + b"X\xa0Y: v\r\n"), "error")
_add("fast-nel-ends-value", _resp(headers=CL0 + b"X-U: \x85\r\n"))
_add("fast-status-200-ok-trailing-space", _resp(b"HTTP/1.1 200 OK \r\n"))
_add("fast-status-200-okay", _resp(b"HTTP/1.1 200 OKAY\r\n"))
_add("fast-status-200-ok-cr-cr", _resp(b"HTTP/1.1 200 OK\r\r\n"), "error")
_add("fast-header-cr-cr-end", _resp(headers=b"X: y\r\r\n" + CL0), "error")
_add("fast-header-lone-cr-at-start", _resp(headers=CL0 + b"\rX: y\r\n"), "error")
_add("fast-fold-after-cl", _resp(headers=b"Content-Length: 0\r\n 1\r\n"), "error")

# limits (sized so the defaults trip; checked with several cut points but never byte by byte)
_add(
    "header-block-too-big",
    _resp(headers=CL0 + b"".join(b"X-Pad-%05d: %s\r\n" % (i, b"p" * 990) for i in range(270))),
    "error",
    diff="header-limit",
)
_add(
    "header-block-just-fits",
    _resp(headers=CL0 + b"".join(b"X-Pad-%05d: %s\r\n" % (i, b"p" * 990) for i in range(250))),
)
_add(
    "header-line-too-long",
    _resp(headers=CL0 + b"X-Long: " + b"v" * 70000 + b"\r\n"),
    "error",
    diff="line-limit",
)
_add("status-line-too-long", _resp(b"HTTP/1.1 200 " + b"r" * 70000 + b"\r\n"), "error", diff="line-limit")
_add(
    "chunk-line-too-long",
    _resp(headers=CHUNKED, body=b"5;" + b"e" * 70000 + b"\r\nhello\r\n0\r\n\r\n"),
    "error",
    diff="line-limit",
)
_add(
    "obs-fold-long-value-fits",
    _resp(headers=CL0 + b"X-Folded: start\r\n" + b"".join(b" %s\r\n" % (b"f" * 990) for _ in range(60))),
)
_add(
    "obs-fold-unfolded-line-too-long",
    _resp(headers=CL0 + b"X-Folded: start\r\n" + b"".join(b" %s\r\n" % (b"f" * 990) for _ in range(70))),
    "error",
    diff="line-limit",
)
_add(
    "obs-fold-block-too-big",
    _resp(headers=CL0 + b"X-Folded: start\r\n" + b"".join(b" %s\r\n" % (b"f" * 990) for _ in range(270))),
    "error",
    diff="header-limit",
)
_add(
    "trailers-too-big",
    _resp(
        headers=CHUNKED,
        body=b"0\r\n" + b"".join(b"T-%05d: %s\r\n" % (i, b"t" * 990) for i in range(270)) + b"\r\n",
    ),
    "error",
    diff="header-limit",
)

BIG = frozenset(c.name for c in HAND_WRITTEN if len(c.data) > 20000)


# -- generated cases ---------------------------------------------------------------------------------

_TOKEN_CHARS = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-!#$%&'*+.^_`|~"
_VALUE_CHARS = bytes(range(0x21, 0x7F)) + b"\x80\xa0\xe9\xff\x01\x7f"
_NAMES = [
    b"Server",
    b"Date",
    b"Content-Type",
    b"Cache-Control",
    b"ETag",
    b"Vary",
    b"X-Request-Id",
    b"Set-Cookie",
    b"Link",
    b"Content-Encoding",
    b"Connection",
    b"Keep-Alive",
]


def _token(r: random.Random) -> bytes:
    if r.random() < 0.5:
        return r.choice(_NAMES)
    return bytes(r.choice(_TOKEN_CHARS) for _ in range(r.randint(1, 12)))


def _value(r: random.Random) -> bytes:
    words = [bytes(r.choice(_VALUE_CHARS) for _ in range(r.randint(1, 8))) for _ in range(r.randint(0, 3))]
    sep = [r.choice([b" ", b"\t", b"  "]) for _ in words]
    inner = b"".join(w + s for w, s in zip(words, sep, strict=True)).rstrip(b" \t")
    return r.choice([b"", b" ", b"\t", b"  "]) + inner + r.choice([b"", b" ", b"\t "])


_FRAMING = (b"Content-Length", b"Transfer-Encoding", b"Connection")


def _one_response(r: random.Random, head: bool, last: bool) -> bytes:
    eol = b"\n" if r.random() < 0.1 else b"\r\n"
    version = b"1.1" if r.random() < 0.85 else b"1.0"
    out = b""
    if r.random() < 0.15:
        out += b"HTTP/1.1 " + r.choice([b"100 Continue", b"103 Early Hints", b"102"]) + eol
        out += b"Link: </x>" + eol if r.random() < 0.5 else b""
        out += eol
    status = r.choice([200, 200, 200, 201, 204, 301, 304, 404, 500, 418, 299])
    reason = r.choice([b" OK", b"", b" ", b" Some  Reason\tHere", b" \xe9t\xe9"])
    lines = [b"HTTP/" + version + b" %d" % status + reason]
    body = bytes(r.choice(b"abcxyz\r\n0123") for _ in range(r.choice([0, 1, 5, 17, 100])))
    framing = r.choice(["cl", "cl", "chunked", "close"] if last else ["cl", "cl", "chunked"])
    if status in (204, 304) or head:
        framing = r.choice(["cl0", "none", "chunked-no-body"])
    headers = [(_token(r), _value(r)) for _ in range(r.randint(0, 8))]
    headers = [
        (n, v)
        for n, v in headers
        if n.lower() not in (b"content-length", b"transfer-encoding", b"connection")
    ]
    if framing == "cl":
        headers.insert(r.randint(0, len(headers)), (b"Content-Length", b" %d" % len(body)))
    elif framing == "cl0":
        headers.append((b"Content-Length", b"0"))
    elif framing in ("chunked", "chunked-no-body"):
        headers.insert(
            r.randint(0, len(headers)), (b"Transfer-Encoding", r.choice([b" chunked", b"Chunked"]))
        )
    if not last or framing == "close" or r.random() < 0.3:
        if framing != "close" and version == b"1.0":
            headers.append((b"Connection", b" keep-alive"))
        elif r.random() < 0.5:
            headers.append((b"Connection", r.choice([b" keep-alive", b" Keep-Alive, foo"])))
    if last and r.random() < 0.1:
        headers.append((b"Connection", b" close"))
    for name, value in headers:
        lines.append(name + b":" + value)
    foldable = [i for i, (name, _) in enumerate(headers, 1) if name not in _FRAMING]
    if foldable and r.random() < 0.1:  # an obs-fold continuing one of the other header lines
        lines.insert(r.choice(foldable) + 1, r.choice([b" ", b"\t", b" \t "]) + _value(r).lstrip(b" \t"))
    out += eol.join(lines) + eol + eol
    if framing == "cl" or framing == "close":
        out += body
    elif framing == "chunked":
        pos = 0
        while pos < len(body):
            n = r.randint(1, max(1, len(body) - pos))
            ext = r.choice([b"", b"", b";a=b", b";x"])
            out += b"%x" % n + ext + b"\r\n" + body[pos : pos + n] + b"\r\n"
            pos += n
        out += b"0\r\n"
        if r.random() < 0.3:
            out += b"X-Trailer: " + _value(r).strip(b" \t") + eol
        out += eol
    return out


def make_valid(r: random.Random) -> Case:
    """A valid stream: one to three responses on one connection."""
    head = r.random() < 0.1
    count = r.choice([1, 1, 2, 3])
    data = b"".join(_one_response(r, head, i == count - 1) for i in range(count))
    return Case(f"valid-{r.random():.8f}", data, None, head=head)


_MUTATION_BYTES = b" \t\r\n\x00:;,0aZ\x0b-\x7f\xff5F"


def mutate(case: Case, r: random.Random) -> Case:
    """Damage a valid stream a little: change, insert, delete, duplicate or truncate."""
    data = bytearray(case.data)
    for _ in range(r.randint(1, 3)):
        if not data:
            break
        i = r.randrange(len(data))
        kind = r.randrange(6)
        if kind == 0:
            data[i] = r.choice(_MUTATION_BYTES)
        elif kind == 1:
            data.insert(i, r.choice(_MUTATION_BYTES))
        elif kind == 2:
            del data[i]
        elif kind == 3:
            j = data.find(b"\n", i)
            if j > 0:
                k = data.rfind(b"\n", 0, i) + 1
                data[j + 1 : j + 1] = data[k : j + 1]
        elif kind == 4:
            del data[i:]
        else:
            data[i:i] = r.choice(
                [
                    b"\r\n",
                    b"\n ",
                    b"Content-Length: 3\r\n",
                    b"Transfer-Encoding: chunked\r\n",
                    b"HTTP/1.1 200 OK\r\n",
                ]
            )
    return Case(case.name.replace("valid", "mutated"), bytes(data), None, head=case.head)


def generated_cases(n_valid: int = 100, n_mutated: int = 100, seed: int = 20240501) -> list[Case]:
    r = random.Random(seed)
    valid = [make_valid(r) for _ in range(n_valid)]
    mutated = [mutate(valid[i % n_valid], r) for i in range(n_mutated)]
    return valid + mutated
