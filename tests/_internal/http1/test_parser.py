"""Tests of the HTTP/1.1 response parser: both twins against each other and against raw h11."""

from __future__ import annotations

import functools
import random
import re
import socket
from pathlib import Path
from typing import Any

import h11
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fastnet import _compat
from fastnet._internal.http1 import parser
from fastnet.exceptions import ConnectionClosedError, ProtocolError
from tests.support.http1_corpus import (
    BIG,
    DELIBERATE_DIFFERENCES,
    HAND_WRITTEN,
    Case,
    explain_difference,
    generated_cases,
    keep_alive_difference_applies,
    make_valid,
    mutate,
)
from tests.support.twins import Twins, available_twins

PARSER = "fastnet._internal.http1.parser"
# every twin this build loads ("c" only in a compiled build, so a pure build never imports it), for the
# differential checks that hold the twins against each other within one test
PARSER_TWINS = available_twins(PARSER)
_parser_py = PARSER_TWINS["py"]


@pytest.fixture
def Parser(twins: Twins) -> Any:  # noqa: N802 - it is a class
    """The pure and the compiled twin's ``ResponseParser``."""
    return twins(PARSER).ResponseParser


# -- drivers -----------------------------------------------------------------------------------------

Result = tuple[str, str, list[tuple[Any, ...]]]  # (kind, error class + message, exchanges)


def _chunks(data: bytes, cuts: list[int]) -> list[bytes]:
    points = [0] + sorted(set(c for c in cuts if 0 < c < len(data))) + [len(data)]
    return [data[a:b] for a, b in zip(points, points[1:], strict=False) if b > a]


def run_ours(cls: Any, case: Case, cuts: list[int]) -> Result:
    """Read every response of ``case`` as a client would, feeding the given pieces on demand."""
    pieces = _chunks(case.data, cuts)
    p = cls()
    state = {"next": 0, "eof": False}
    exchanges: list[tuple[Any, ...]] = []

    def more() -> bool:
        if state["next"] < len(pieces):
            p.feed(pieces[state["next"]])
            state["next"] += 1
            return True
        if case.eof and not state["eof"]:
            p.feed(b"")
            state["eof"] = True
            return True
        return False

    limit = len(pieces) + 50
    try:
        for _ in range(20):  # responses
            interims: list[tuple[Any, ...]] = []
            for _ in range(limit):
                head = p.read_head(case.head)
                if head is None:
                    if not more():
                        return ("incomplete", "", exchanges)
                    continue
                if 100 <= head[0] < 200 and head[0] != 101:
                    assert head[4] == parser.BODY_NONE
                    interims.append(head[:4])
                    continue
                break
            else:
                raise AssertionError("no final head")
            status, reason, version, headers, mode, length, keep_alive, encoding = head
            body = bytearray()
            for _ in range(len(case.data) + limit):
                piece = p.read_body()
                if piece is None:
                    break
                if piece == b"" and not more():
                    return ("incomplete", "", exchanges)
                body += piece
            else:
                raise AssertionError("body never completed")
            assert p.read_body() is None
            if mode == parser.BODY_LENGTH:
                assert length == len(body) and p.body_remaining == 0
            exchanges.append(
                (tuple(interims), status, reason, version, headers, bytes(body), p.trailers, keep_alive)
            )
            if not keep_alive:
                break
            rest = p.take_buffered()
            if rest:
                p.feed(rest)
            elif state["next"] < len(pieces):
                more()
            else:
                break
    except (ProtocolError, ConnectionClosedError) as exc:
        return ("error", f"{type(exc).__name__}: {exc}", exchanges)
    return ("ok", "", exchanges)


def _h11_headers(items: Any) -> list[tuple[str, str]]:
    return [(bytes(n).decode("latin-1"), bytes(v).decode("latin-1")) for n, v in items]


def _h11_conn(case: Case) -> h11.Connection:
    conn = h11.Connection(h11.CLIENT, max_incomplete_event_size=1 << 40)
    conn.send(
        h11.Request(
            method="HEAD" if case.head else "GET",
            target="/",
            headers=[("Host", "x"), ("Connection", "upgrade"), ("Upgrade", "x")],
        )
    )
    conn.send(h11.EndOfMessage())
    return conn


def run_h11(case: Case, cuts: list[int]) -> Result:
    """The same reading loop on raw h11 (the oracle)."""
    pieces = _chunks(case.data, cuts)
    conn = _h11_conn(case)
    state = {"next": 0, "eof": False}
    exchanges: list[tuple[Any, ...]] = []

    def more() -> bool:
        if state["next"] < len(pieces):
            conn.receive_data(pieces[state["next"]])
            state["next"] += 1
            return True
        if case.eof and not state["eof"]:
            conn.receive_data(b"")
            state["eof"] = True
            return True
        return False

    limit = 2 * len(case.data) + len(pieces) + 50
    try:
        for _ in range(20):
            interims: list[tuple[Any, ...]] = []
            head: Any = None
            body = bytearray()
            trailers: list[tuple[str, str]] = []
            for _ in range(limit):
                event = conn.next_event()
                if event is h11.NEED_DATA:
                    if not more():
                        return ("incomplete", "", exchanges)
                    continue
                if isinstance(event, h11.InformationalResponse) and event.status_code != 101:
                    interims.append(
                        (
                            event.status_code,
                            bytes(event.reason).decode("latin-1"),
                            event.http_version.decode(),
                            _h11_headers(event.headers.raw_items()),
                        )
                    )
                    continue
                if isinstance(event, (h11.Response, h11.InformationalResponse)):
                    head = event
                    if event.status_code == 101:
                        break
                    continue
                if isinstance(event, h11.Data):
                    body += event.data
                    continue
                if isinstance(event, h11.EndOfMessage):
                    trailers = _h11_headers(event.headers.raw_items())
                    break
                raise AssertionError(f"unexpected h11 event {event!r}")
            else:
                raise AssertionError("h11 never finished")
            framed = any(
                n.lower() in (b"content-length", b"transfer-encoding") for n, _ in head.headers.raw_items()
            )
            until_close = not (framed or case.head or head.status_code in (101, 204, 304))
            # h11 reports DONE after an until-close body on HTTP/1.1; the connection is closed all the same
            keep_alive = head.status_code != 101 and not until_close and conn.their_state is h11.DONE
            exchanges.append(
                (
                    tuple(interims),
                    head.status_code,
                    bytes(head.reason).decode("latin-1"),
                    head.http_version.decode(),
                    _h11_headers(head.headers.raw_items()),
                    bytes(body),
                    trailers,
                    keep_alive,
                )
            )
            if not keep_alive:
                break
            conn.start_next_cycle()
            conn.send(
                h11.Request(
                    method="HEAD" if case.head else "GET",
                    target="/",
                    headers=[("Host", "x"), ("Connection", "upgrade"), ("Upgrade", "x")],
                )
            )
            conn.send(h11.EndOfMessage())
            if not conn.trailing_data[0]:
                if state["next"] < len(pieces):
                    more()
                else:
                    break
    except h11.RemoteProtocolError as exc:
        return ("error", f"h11: {exc}", exchanges)
    return ("ok", "", exchanges)


def _h11_view_headers(headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """What h11 reports for our header list: one Content-Length, single value; lowercased T-E."""
    out = []
    seen_cl = False
    for name, value in headers:
        lower = name.lower()
        if lower == "content-length":
            if seen_cl:
                continue
            seen_cl = True
            value = value.split(",")[0].strip(" \t")
        elif lower == "transfer-encoding":
            value = value.lower()
        out.append((name, value))
    return out


def h11_view(result: Result) -> Result:
    kind, error, exchanges = result
    view = []
    for interims, status, reason, version, headers, body, trailers, keep_alive in exchanges:
        view.append(
            (
                tuple((s, r, v, _h11_view_headers(h)) for s, r, v, h in interims),
                status,
                reason,
                version,
                _h11_view_headers(headers),
                body,
                _h11_view_headers(trailers),
                keep_alive,
            )
        )
    return (kind, error, view)


def _cut_sets(case: Case) -> list[list[int]]:
    n = len(case.data)
    rnd = random.Random(case.name + str(n))
    sets: list[list[int]] = [[]]
    if case.name not in BIG:
        sets.append(list(range(1, n)))
    for _ in range(3):
        sets.append([rnd.randrange(1, max(2, n)) for _ in range(rnd.randint(1, 6))])
    return sets


def _same_kind(a: Result, b: Result) -> bool:
    return a[0] == b[0] and a[2] == b[2] and a[1].split(":")[0] == b[1].split(":")[0]


def check_case(case: Case) -> None:
    """The whole differential check for one corpus entry."""
    results: dict[str, Result] = {}
    for twin, module in PARSER_TWINS.items():
        cls = module.ResponseParser
        first: Result | None = None
        for cuts in _cut_sets(case):
            got = run_ours(cls, case, cuts)
            if first is None:
                first = got
            else:
                assert _same_kind(got, first), (twin, cuts[:10], got, first)
        assert first is not None
        results[twin] = first
    ours = results["py"]
    if "c" in results:
        assert _same_kind(results["c"], ours), (results["c"], ours)
    if case.expect is not None:
        assert ours[0] == case.expect, ours
    if case.count is not None:
        assert len(ours[2]) == case.count, ours
    oracle = run_h11(case, [])
    if case.name not in BIG:
        assert run_h11(case, list(range(1, len(case.data))))[0] == oracle[0]
    mine = h11_view(ours)
    if case.diff is not None:
        assert case.diff in DELIBERATE_DIFFERENCES
        _, pattern, behaviour = DELIBERATE_DIFFERENCES[case.diff]
        if behaviour == "h11-accepts":
            assert (
                ours[0] == "error" and pattern is not None and re.search(pattern, ours[1].split(": ", 1)[1])
            )
            assert oracle[0] == "ok", oracle
        else:
            assert _keep_alive_shape(mine, oracle), (mine, oracle)
        return
    if mine[0] == oracle[0] and mine[2] == oracle[2]:
        return
    if case.expect is None:  # generated input: the difference must be a deliberate one
        # we reject where h11 accepts (possibly h11 then rejects a later response it read further into)
        if ours[0] == "error" and (oracle[0] == "ok" or len(oracle[2]) > len(mine[2])):
            rule = explain_difference(case.data, ours[1].split(": ", 1)[1])
            if rule is not None:
                return
        if keep_alive_difference_applies(case.data) and _keep_alive_shape(mine, oracle):
            return
    raise AssertionError(f"differs from h11:\nours {mine}\nh11  {oracle}")


def _keep_alive_shape(mine: Result, oracle: Result) -> bool:
    """h11 stops at the first HTTP/1.0 keep-alive exchange and reports it as not reusable."""
    for k, ex in enumerate(mine[2]):
        if ex[3] == "1.0" and ex[7]:
            expected = mine[2][:k] + [ex[:7] + (False,)]
            return oracle[0] == "ok" and oracle[2] == expected
    return False


# -- the corpus --------------------------------------------------------------------------------------

GENERATED = generated_cases()


def test_parser_corpus_is_large_enough() -> None:
    assert len(HAND_WRITTEN) + len(GENERATED) >= 200
    assert len({c.name for c in HAND_WRITTEN}) == len(HAND_WRITTEN)
    used = {c.diff for c in HAND_WRITTEN if c.diff}
    assert used == set(DELIBERATE_DIFFERENCES)


@pytest.mark.parametrize("case", HAND_WRITTEN, ids=[c.name for c in HAND_WRITTEN])
def test_parser_differential_hand_written(case: Case) -> None:
    check_case(case)


@pytest.mark.parametrize("case", GENERATED, ids=[f"gen{i}" for i in range(len(GENERATED))])
def test_parser_differential_generated(case: Case) -> None:
    check_case(case)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.randoms(use_true_random=False))
def test_parser_differential_hypothesis_valid(r: random.Random) -> None:
    case = make_valid(r)
    check_case(case)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.randoms(use_true_random=False))
def test_parser_differential_hypothesis_mutated(r: random.Random) -> None:
    check_case(mutate(make_valid(r), r))


def test_parser_valid_generated_cases_parse() -> None:
    for case in GENERATED[:100]:
        result = run_ours(_parser_py.ResponseParser, case, [])
        assert result[0] == "ok", (case, result)


# -- API behaviour -----------------------------------------------------------------------------------


def test_parser_head_tuple_shape(Parser: Any) -> None:
    p = Parser()
    p.feed(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n"
        b"Content-Encoding:  GZip \r\nX-Dup: 1\r\nx-dup: 2\r\n\r\nhello"
    )
    head = p.read_head()
    assert head == (
        200,
        "OK",
        "1.1",
        [
            ("Content-Type", "text/plain"),
            ("Content-Length", "5"),
            ("Content-Encoding", "GZip"),
            ("X-Dup", "1"),
            ("x-dup", "2"),
        ],
        parser.BODY_LENGTH,
        5,
        True,
        "gzip",
    )
    assert p.body_remaining == 5
    assert p.read_body() == b"hello"
    assert p.body_remaining == 0
    assert p.read_body() is None
    assert p.read_head() is None


def test_parser_constants_match() -> None:
    for module in (parser, *PARSER_TWINS.values()):
        assert (module.BODY_NONE, module.BODY_LENGTH, module.BODY_CHUNKED, module.BODY_UNTIL_CLOSE) == (
            0,
            1,
            2,
            3,
        )


def test_parser_feed_accepts_buffer_types(Parser: Any) -> None:
    p = Parser()
    data = bytearray(b"HTTP/1.1 204 No Content\r\n\r\n")
    p.feed(memoryview(data)[:9])
    data[0:1] = b"X"  # copied on feed
    p.feed(bytearray(b"204 No Content\r\n"))
    p.feed(b"\r\n")
    assert p.read_head()[:2] == (204, "No Content")


def test_parser_interim_then_final(Parser: Any) -> None:
    p = Parser()
    p.feed(
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"
        b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx"
    )
    assert p.read_head()[0] == 100
    early = p.read_head()
    assert early[0] == 103 and early[3] == [("Link", "</a>")] and early[4] == parser.BODY_NONE
    assert p.read_head()[0] == 200
    assert p.read_body() == b"x"


def test_parser_101_is_final_and_keeps_bytes(Parser: Any) -> None:
    p = Parser()
    p.feed(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n\x81\x02hi")
    head = p.read_head()
    assert head[0] == 101 and head[4] == parser.BODY_NONE and head[6] is False
    assert p.read_body() is None
    assert p.take_buffered() == b"\x81\x02hi"
    assert p.take_buffered() == b""


def test_parser_head_request_has_no_body(Parser: Any) -> None:
    p = Parser()
    p.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
    head = p.read_head(head_request=True)
    assert head[4] == parser.BODY_NONE and head[5] == 1000 and head[6] is True
    assert p.body_remaining == -1
    assert p.read_body() is None
    assert p.read_head(head_request=True)[0] == 200


def test_parser_keep_alive_rules(Parser: Any) -> None:
    cases = {
        b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n": True,
        b"HTTP/1.1 200 OK\r\nConnection: Keep-Alive, CLOSE\r\nContent-Length: 0\r\n\r\n": False,
        b"HTTP/1.1 200 OK\r\nConnection: closed\r\nContent-Length: 0\r\n\r\n": True,
        b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n": False,
        b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n": True,
        b"HTTP/1.1 200 OK\r\n\r\n": False,
    }
    for data, expected in cases.items():
        p = Parser()
        p.feed(data)
        assert p.read_head()[6] is expected, data


def test_parser_until_close(Parser: Any) -> None:
    p = Parser()
    p.feed(b"HTTP/1.1 200 OK\r\n\r\nabc")
    head = p.read_head()
    assert head[4] == parser.BODY_UNTIL_CLOSE and head[5] == -1 and head[6] is False
    assert p.read_body() == b"abc"
    assert p.read_body() == b""
    p.feed(b"def")
    assert p.read_body() == b"def"
    p.feed(b"")
    assert p.read_body() is None


def test_parser_chunked_trailers_and_next_response(Parser: Any) -> None:
    p = Parser()
    p.feed(
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n0\r\nX-Sum: 12\r\n\r\n"
        b"HTTP/1.1 204 No Content\r\n\r\n"
    )
    head = p.read_head()
    assert head[4] == parser.BODY_CHUNKED and p.body_remaining == -1
    assert p.read_body() == b"hello"
    assert p.read_body() is None
    assert p.trailers == [("X-Sum", "12")]
    assert p.read_head()[0] == 204
    assert p.trailers == []


def test_parser_read_head_mid_body_is_a_usage_error(Parser: Any) -> None:
    p = Parser()
    p.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhe")
    p.read_head()
    with pytest.raises(RuntimeError):
        p.read_head()


def test_parser_skip_body_bytes_fast_path(Parser: Any) -> None:
    p = Parser()
    p.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123")
    p.read_head()
    with pytest.raises(RuntimeError):
        p.skip_body_bytes(2)  # bytes are buffered
    assert p.read_body() == b"0123"
    assert p.body_remaining == 6
    with pytest.raises(ValueError):
        p.skip_body_bytes(7)
    p.skip_body_bytes(4)  # the caller recv_into'd four bytes itself
    assert p.body_remaining == 2
    p.feed(b"89HTTP/1.1 204 No Content\r\n\r\n")
    assert p.read_body() == b"89"
    assert p.read_body() is None
    assert p.read_head()[0] == 204
    with pytest.raises(RuntimeError):
        p.skip_body_bytes(1)


def test_parser_skip_body_bytes_with_a_real_socket(Parser: Any) -> None:
    body = bytes(range(256)) * 400
    server, client = socket.socketpair()
    with server, client:
        server.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body))
        p = Parser()
        p.feed(client.recv(65536))
        head = p.read_head()
        assert head is not None and head[5] == len(body)
        out = bytearray(p.read_body() or b"")
        server.sendall(body)
        target = bytearray(len(body))
        view = memoryview(target)
        got = 0
        for _ in range(1000):
            if p.body_remaining == 0:
                break
            n = client.recv_into(view[got:], p.body_remaining)
            assert n > 0
            p.skip_body_bytes(n)
            got += n
        assert bytes(out) + bytes(target[:got]) == body
        assert p.read_body() is None


def test_parser_eof_before_any_byte_is_connection_closed(Parser: Any) -> None:
    p = Parser()
    p.feed(b"")
    with pytest.raises(ConnectionClosedError):
        p.read_head()


def test_parser_eof_mid_head_and_body(Parser: Any) -> None:
    p = Parser()
    p.feed(b"HTTP/1.1 200 OK\r\nContent-Le")
    assert p.read_head() is None
    p.feed(b"")
    with pytest.raises(ProtocolError, match="unexpected end of stream"):
        p.read_head()
    p = Parser()
    p.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nabc")
    p.read_head()
    p.feed(b"")
    assert p.read_body() == b"abc"
    with pytest.raises(ProtocolError, match="unexpected end of stream"):
        p.read_body()
    with pytest.raises(ProtocolError):
        p.read_head()  # the parser stays failed


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"HTPP/1.1 200 OK\r\n\r\n", "Unexpected status line: 'HTPP/1.1 200 OK'"),
        (b"HTTP/1.1 200 OK\r\nNo colon here\r\n\r\n", "Invalid header line: 'No colon here'"),
        (b"HTTP/1.1 200 OK\r\nName : v\r\n\r\n", "Invalid header line: 'Name : v'"),
        (
            b"HTTP/1.1 200 OK\r\n folded\r\nA: b\r\n\r\n",
            "Obsolete line folding before the first field line: ' folded'",
        ),
        (b"HTTP/1.1 200 OK\r\nA: b\r\n \x00\r\n\r\n", "Invalid header line: 'A: b \\x00'"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "Invalid Content-Length: 'Content-Length: -1'"),
        (
            b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
            "Conflicting Content-Length: 'Content-Length: 2'",
        ),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
            "Unsupported Transfer-Encoding: 'Transfer-Encoding: gzip'",
        ),
        (b"HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n", "HTTP 204 had non-zero Content-Length: 5"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "Invalid chunk size line: 'zz'"),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n8000000000000000\r\n",
            "Chunk size too large: '8000000000000000'",
        ),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nab\r\n",
            "Chunk data not followed by CRLF: 'b\\r'",
        ),
    ],
)
def test_parser_error_messages_quote_the_line(Parser: Any, data: bytes, message: str) -> None:
    p = Parser()
    p.feed(data)
    with pytest.raises(ProtocolError) as info:
        head = p.read_head()
        assert head is not None
        for _ in range(10):
            if p.read_body() is None:
                break
    assert str(info.value) == message


def test_parser_error_message_is_truncated(Parser: Any) -> None:
    p = Parser()
    p.feed(b"XTTP/1.1 200 " + b"A" * 500 + b"\r\n\r\n")
    with pytest.raises(ProtocolError) as info:
        p.read_head()
    text = str(info.value)
    assert text.startswith("Unexpected status line: 'XTTP/1.1 200 AAA") and text.endswith("'...")
    assert len(text) < 130


def test_parser_header_block_limit(Parser: Any) -> None:
    block = (
        b"HTTP/1.1 200 OK\r\n" + b"".join(b"X-%04d: %s\r\n" % (i, b"v" * 100) for i in range(3000)) + b"\r\n"
    )
    assert len(block) > 262144
    for step in (len(block), 65536, 4096):
        p = Parser()
        with pytest.raises(ProtocolError, match="response headers exceed 262144 bytes"):
            for i in range(0, len(block), step):
                p.feed(block[i : i + step])
                p.read_head()
    p = Parser(max_header_size=100)
    p.feed(b"HTTP/1.1 200 OK\r\n" + b"X: " + b"y" * 90 + b"\r\n\r\n")
    with pytest.raises(ProtocolError, match="exceed 100 bytes"):
        p.read_head()
    p = Parser(max_header_size=100)
    p.feed(b"HTTP/1.1 200 OK\r\n" + b"X: " + b"y" * 70 + b"\r\n\r\n")
    assert p.read_head()[3] == [("X", "y" * 70)]


def test_parser_line_limit(Parser: Any) -> None:
    p = Parser(max_line_size=20)
    p.feed(b"HTTP/1.1 200 OK\r\nX: 12345678901234567\r\n\r\n")  # 20 bytes: fits
    assert p.read_head() is not None
    p = Parser(max_line_size=20)
    p.feed(b"HTTP/1.1 200 OK\r\nX: 123456789012345678\r\n\r\n")
    with pytest.raises(ProtocolError, match="line longer than 20 bytes"):
        p.read_head()
    p = Parser(max_line_size=20)
    p.feed(b"HTTP/1.1 200 OK\r\nX: " + b"1" * 30)  # incomplete, already too long
    with pytest.raises(ProtocolError, match="line longer than 20 bytes"):
        p.read_head()


def test_parser_bare_lf_is_accepted(Parser: Any) -> None:
    p = Parser()
    p.feed(b"HTTP/1.1 200 OK\nContent-Length: 2\nX: y\n\nhi")
    assert p.read_head()[3] == [("Content-Length", "2"), ("X", "y")]
    assert p.read_body() == b"hi"


def test_parser_buffer_compaction_over_many_responses(Parser: Any) -> None:
    one = b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nX-Pad: " + b"p" * 500 + b"\r\n\r\nabc"
    p = Parser()
    rnd = random.Random(7)
    stream = one * 300
    pos = 0
    seen = 0
    for _ in range(5000):
        if seen == 300:
            break
        head = p.read_head()
        if head is None:
            n = rnd.randint(1, 3000)
            p.feed(stream[pos : pos + n])
            pos += n
            continue
        body = b""
        for _ in range(100):
            piece = p.read_body()
            if piece is None:
                break
            if piece == b"":
                n = rnd.randint(1, 3000)
                p.feed(stream[pos : pos + n])
                pos += n
            body += piece
        assert body == b"abc"
        seen += 1
    assert seen == 300


def test_parser_compiled_module_is_loaded() -> None:
    if _compat.NO_EXTENSIONS:
        assert not parser.__file__.endswith((".so", ".pyd"))
        assert parser.ResponseParser is _parser_py.ResponseParser
    else:
        assert "c" in PARSER_TWINS, "compiled build expected: run setup.py build_ext"
        assert parser.ResponseParser is PARSER_TWINS["c"].ResponseParser
        assert (parser.__file__ or "").endswith((".so", ".pyd"))
        assert (_parser_py.__file__ or "").endswith("parser.py")


# -- the pure twin's use of h11's private grammar ------------------------------------------------------


def test_parser_py_h11_private_grammar_is_where_we_expect() -> None:
    """The pure twin imports h11 internals (tested with h11 0.16); fail loudly if they move."""
    from h11 import _abnf, _headers, _readers

    for name in ("OWS", "field_name", "header_field", "status_line", "chunk_header"):
        assert isinstance(getattr(_abnf, name), str), f"h11._abnf.{name} moved or changed type"
    assert isinstance(_headers.CONTENT_LENGTH_MAX_DIGITS, int)
    assert _readers.chunk_header_re.pattern == _abnf.chunk_header.encode("ascii")
    assert set(re.compile(_abnf.header_field).groupindex) >= {"field_name", "field_value"}
    assert set(re.compile(_abnf.status_line).groupindex) >= {"http_version", "status_code", "reason"}
    assert set(_readers.chunk_header_re.groupindex) >= {"chunk_size"}


def _h11_field(line: bytes) -> tuple[str, str] | None:
    from h11._readers import header_field_re

    match = header_field_re.fullmatch(line)
    if match is None:
        return None
    return match["field_name"].decode("latin-1"), match["field_value"].decode("latin-1")


def _fast_field(line: bytes) -> tuple[str, str] | None:
    text = line.decode("latin-1") + "\n"
    found = _parser_py._FIELD_LINES.findall(text)
    return found[0] if len(found) == 1 else None


def test_parser_py_field_regex_equals_h11_for_every_byte() -> None:
    templates = [
        b"N%sme: v",
        b"%sName: v",
        b"Name%s: v",
        b"Name: a%sb",
        b"Name: %sab",
        b"Name: ab%s",
        b"Name:%s",
        b"Name: %s",
        b"Name: a %s",
        b"Name: a%s b",
        b"Name: a %s b",
        b"Name: %s%s",
        b"Name: a%s%s",
    ]
    for byte in range(256):
        if byte == 0x0A:
            continue  # a line never contains LF
        b = bytes([byte])
        for template in templates:
            raw = template.replace(b"%s", b)  # a line as received, between two LFs
            stripped = raw[:-1] if raw.endswith(b"\r") else raw  # h11 strips one CR before matching
            assert _fast_field(raw) == _h11_field(stripped), (raw, _fast_field(raw), _h11_field(stripped))
            assert _fast_field(raw + b"\r") == _h11_field(raw), raw
    # the slow path's per-line regex is h11's own rule on latin-1 text
    for byte in range(256):
        line = b"Name: a" + bytes([byte]) + b"b "
        match = _parser_py._FIELD_LINE.fullmatch(line.decode("latin-1"))
        expected = _h11_field(line)
        got = None if match is None else (match["field_name"], match["field_value"] or "")
        assert got == expected, line


def test_parser_py_status_regex_equals_h11_for_every_byte() -> None:
    from h11._readers import status_line_re

    templates = [
        b"HTTP/1.1 200 O%sK",
        b"HTTP/1.1 200 %s",
        b"HTTP/1.1 20%s OK",
        b"HTTP/1.%s 200 OK",
        b"HTTP/1.1%s200",
    ]
    for byte in range(256):
        if byte == 0x0A:
            continue
        for template in templates:
            line = template.replace(b"%s", bytes([byte]))
            theirs = status_line_re.fullmatch(line)
            ours = _parser_py._STATUS.fullmatch(line.decode("latin-1") + "\r\n")
            assert (ours is None) == (theirs is None), line
            if ours is not None and theirs is not None:
                reason = None if theirs["reason"] is None else theirs["reason"].decode("latin-1")
                assert ours.group("http_version", "status_code", "reason") == (
                    theirs["http_version"].decode(),
                    theirs["status_code"].decode(),
                    reason,
                ), line


def _longest_line(data: bytes) -> int:
    end = data.find(b"\n\n")
    end2 = data.find(b"\n\r\n")
    ends = [e for e in (end, end2) if e >= 0]
    head = data[: min(ends)] if ends else data
    return max((len(line.rstrip(b"\r")) for line in head.split(b"\n")), default=1)


def test_parser_py_fast_path_equals_slow_path() -> None:
    """A head longer than max_line_size takes the line-by-line path: it must decide exactly the same."""
    cases = [c for c in HAND_WRITTEN + GENERATED if c.name not in BIG and c.data]
    rnd = random.Random(11)
    cases += [mutate(make_valid(rnd), rnd) for _ in range(200)]
    slow_taken = 0
    for case in cases:
        limit = max(_longest_line(case.data), 1)
        fast = run_ours(_parser_py.ResponseParser, case, [])
        slow = run_ours(functools.partial(_parser_py.ResponseParser, max_line_size=limit), case, [])
        if "longer than" in slow[1]:
            continue  # a later response has a longer line: the small limit itself decides
        slow_taken += 1
        assert fast == slow, (case.name, case.data[:200], fast, slow)
    assert slow_taken > 300


def test_parser_py_buffer_stays_small_over_many_responses() -> None:
    one = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi"
    p = _parser_py.ResponseParser()
    for _ in range(1000):
        assert p.read_head() is None
        p.feed(memoryview(one))
        assert p.read_head() is not None
        assert p.read_body() == b"hi" and p.read_body() is None
        assert p.take_buffered() == b""
        assert len(p._buf) <= len(one)
    # two responses in one read: the second is parsed from the consumed offset, then compacted on feed
    p.feed(one * 2)
    for _ in range(2):
        head = p.read_head()
        assert head is not None and head[0] == 200
        assert p.read_body() == b"hi" and p.read_body() is None
    p.feed(one[:5])
    assert len(p._buf) == 5


# What the README's table of deliberate differences says about status-line versions and bare LF, held
# against both twins: (row marker in the README, input, accepted?).
README_RULES = [
    ("`HTTP/0.9`", b"HTTP/0.9 200 OK\r\nContent-Length: 2\r\n\r\nhi", False),
    ("`HTTP/0.9`", b"<html>hi</html>\r\n\r\n", False),  # head-less HTTP/0.9
    ("`HTTP/1.2`", b"HTTP/1.2 200 OK\r\nContent-Length: 2\r\n\r\nhi", False),
    ("`HTTP/2.0`", b"HTTP/2.0 200 OK\r\nContent-Length: 2\r\n\r\nhi", False),
    ("`ICY`", b"ICY 200 OK\r\nContent-Length: 2\r\n\r\nhi", False),
    ("`SOURCETABLE`", b"SOURCETABLE 200 OK\r\nContent-Length: 2\r\n\r\nhi", False),
    ("the status line, the headers", b"HTTP/1.1 200 OK\nContent-Length: 2\nX: y\n\nhi", True),
    ("the trailers", b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\nX: y\n\n", True),
    ("after a chunk size", b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\nhi\r\n0\r\n\r\n", False),
    ("end of chunk data", b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\n0\r\n\r\n", False),
]


def _readme_rows() -> str:
    readme = (Path(__file__).parents[3] / "README.md").read_text(encoding="utf-8")
    table = readme.split("## Where fastnet deliberately differs from OkHttp", 1)[1]
    return "\n".join(
        line
        for line in table.splitlines()
        if line.startswith("| status lines other than") or line.startswith("| bare LF line endings")
    )


@pytest.mark.parametrize(("marker", "data", "accepted"), README_RULES, ids=[r[0] for r in README_RULES])
def test_parser_readme_documents_versions_and_bare_lf(Parser: Any, marker: str, data: bytes, accepted: bool):
    assert marker in _readme_rows()
    p = Parser()
    p.feed(data)
    p.feed(b"")
    if not accepted:
        with pytest.raises(ProtocolError):
            p.read_head()
            while p.read_body() is not None:
                pass
        return
    assert p.read_head()[0] == 200
    body = b""
    while (piece := p.read_body()) is not None:
        body += piece
    assert body == b"hi"
