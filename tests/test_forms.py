"""``fastnet/forms.py``: what ``params=``, ``data=`` and ``files=`` turn into. ``encode_pairs`` and
``merge_params`` (a query string or a form body, as requests encodes them), and ``MultipartBody``: its
parts (read back with the standard library's MIME parser), its length against the bytes it yields, files
rewound for every attempt, unknown sizes made one-shot, and the input it refuses. Values only; the same
options on the wire, held against requests and httpx, are in tests/_internal/call/test_factory.py."""

from __future__ import annotations

import email.parser
import email.policy
import io
import os
from typing import Any

import pytest

from fastnet.forms import MultipartBody, encode_pairs, merge_params, pairs_of

# -- query strings and form bodies ---------------------------------------------------------------------


def test_forms_encode_pairs_from_a_mapping_pairs_and_lists() -> None:
    assert encode_pairs({"a": 1, "b": "x y", "c": None}) == "a=1&b=x+y"
    assert encode_pairs([("k", "1"), ("k", "2"), ("z", 2.5)]) == "k=1&k=2&z=2.5"
    assert encode_pairs({"tag": ["a", None, "b"], "e": []}) == "tag=a&tag=b"
    # a bytes key in a mapping is encoded raw, though PairsLike types a mapping's keys as str
    assert encode_pairs({"q": "é&=/?", b"raw": b"\xff"}) == "q=%C3%A9%26%3D%2F%3F&raw=%FF"  # type: ignore[arg-type]


def test_forms_encode_pairs_takes_an_encoded_string_as_it_is() -> None:
    assert encode_pairs("?a=1&b=%20") == "a=1&b=%20"
    assert encode_pairs(b"x=1") == "x=1"
    assert encode_pairs({}) == ""


@pytest.mark.parametrize(
    "value, message",
    [
        (42, "mapping or"),
        ([("a", "b", "c")], "pair"),
        (["ab"], "pair"),
        ({"a": object()}, "a value must be"),
        ({("t",): "v"}, "a value must be"),
    ],
)
def test_forms_encode_pairs_refuses_what_is_not_pairs(value: Any, message: str) -> None:
    with pytest.raises(TypeError, match=message):
        encode_pairs(value, "params")


def test_forms_pairs_of_keeps_order_and_expands_lists() -> None:
    assert pairs_of([("b", 1), ("a", (2, 3))], "data") == [("b", 1), ("a", 2), ("a", 3)]
    with pytest.raises(TypeError, match="data must be"):
        pairs_of("a=1", "data")


def test_forms_merge_params_puts_the_clients_under_the_requests() -> None:
    assert merge_params(None, {"a": 1}) == "a=1"
    assert merge_params({"a": 1}, None) == "a=1"
    assert merge_params({"a": 1, "b": 2}, {"b": 3, "c": 4}) == "a=1&b=3&c=4"
    assert merge_params("a=1&b=2", "b=9") == "a=1&b=9"  # encoded strings too
    assert merge_params({"key with space": 1, "k": 0}, {"key with space": 2}) == "k=0&key+with+space=2"
    assert merge_params({"a": 1}, {}) == "a=1"


# -- multipart -----------------------------------------------------------------------------------------


def _parts(body: MultipartBody) -> list[Any]:
    raw = b"".join(body)
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        f"Content-Type: {body.content_type}\r\n\r\n".encode() + raw
    )
    assert message.is_multipart() and not message.defects
    return list(message.iter_parts())


def test_forms_multipart_fields_then_files_read_back_by_a_mime_parser(tmp_path: Any) -> None:
    path = tmp_path / "report.pdf"
    path.write_bytes(b"%PDF-1.4 " + os.urandom(100_000))
    # annotated: under the Mapping | Iterable[tuple] union mypy infers a mixed literal as dict[str, object]
    fields: dict[str, str | int] = {"title": "réport", "n": 3}
    with path.open("rb") as f:
        body = MultipartBody(
            fields,
            {"file": f, "raw": b"\x00\x01", "text": ("notes.txt", "hello", None, {"X-Extra": "1"})},
            boundary="b0undary",
        )
        assert body.content_type == "multipart/form-data; boundary=b0undary"
        title, n, file, raw, text = _parts(body)
    assert title.get_param("name", header="content-disposition") == "title"
    assert title.get_payload(decode=True) == "réport".encode() and n.get_payload(decode=True) == b"3"
    assert file.get_filename() == "report.pdf" and file.get_content_type() == "application/pdf"
    assert file.get_payload(decode=True) == path.read_bytes()
    assert raw.get_filename() == "raw" and raw.get_content_type() == "application/octet-stream"
    assert raw.get_payload(decode=True) == b"\x00\x01"
    assert text.get_filename() == "notes.txt" and text["X-Extra"] == "1"
    assert text.get_content_type() == "text/plain" and text.get_payload(decode=True) == b"hello"


def test_forms_multipart_length_is_what_it_yields_and_files_are_rewound(tmp_path: Any) -> None:
    path = tmp_path / "data.bin"
    path.write_bytes(os.urandom(200_000))
    with path.open("rb") as f:
        f.seek(1000)  # sent from where the file stands
        body = MultipartBody({"a": "1"}, {"f": f})
        first = b"".join(body)
        assert len(first) == body.length and not body.one_shot
        assert b"".join(body) == first  # a second attempt (redirect, retry) sends the same bytes
        pieces = list(body)
    assert max(len(p) for p in pieces) <= 2 * 65536  # streamed in pieces, never the whole file at once
    assert path.read_bytes()[1000:] in first
    assert repr(body) == f"<MultipartBody 2 parts, {body.length} bytes>"


def test_forms_multipart_a_pipe_makes_it_one_shot_of_unknown_length() -> None:
    read_end, write_end = os.pipe()
    with os.fdopen(write_end, "wb") as w:
        w.write(b"piped data")
    with os.fdopen(read_end, "rb") as pipe:
        body = MultipartBody(files={"p": ("p.bin", pipe)})
        assert body.one_shot and body.length == -1
        (part,) = _parts(body)
    assert part.get_payload(decode=True) == b"piped data"


def test_forms_multipart_names_are_escaped_and_a_none_filename_is_a_plain_field() -> None:
    body = MultipartBody(files={'we"ird\nname': ('a"b\r.txt', b"x"), "plain": (None, b"value")})
    raw = b"".join(body)
    assert b'name="we%22ird%0Aname"; filename="a%22b%0D.txt"' in raw
    assert b'Content-Disposition: form-data; name="plain"\r\n\r\nvalue' in raw


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"data": "a=1", "files": {"f": b"x"}}, TypeError, "form fields"),
        ({"files": {"f": io.StringIO("text")}}, TypeError, "binary mode"),
        ({"files": {"f": 42}}, TypeError, "binary file object"),
        ({"files": {"f": ("a",)}}, ValueError, "a tuple must be"),
        ({"files": "f"}, TypeError, "files must be"),
        ({"files": [("f",)]}, TypeError, "pair"),
        ({"files": {"f": ("n", b"x", "text/plain", {"X-Bad": "a\r\nInjected: 1"})}}, ValueError, "CR, LF"),
        ({"files": {"f": b"x"}, "boundary": 'a"b'}, ValueError, "boundary"),
        ({"files": {"f": b"x"}, "boundary": "x" * 71}, ValueError, "boundary"),
    ],
)
def test_forms_multipart_refuses_bad_input(kwargs: dict[str, Any], error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        MultipartBody(**kwargs)


def test_forms_multipart_boundaries_are_random_by_default() -> None:
    assert MultipartBody({"a": "1"}).boundary != MultipartBody({"a": "1"}).boundary
