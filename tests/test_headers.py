"""Headers: an ordered, case-insensitive, immutable multi-map whose names and values are validated."""

from __future__ import annotations

import enum

import pytest

import fastnet
from tests.support.twins import Twins


class Plain(str):
    pass


class Field(enum.StrEnum):
    TRACE = "X-Trace"


class OldField(str, enum.Enum):  # noqa: UP042 - str() and format() give "OldField.KEY", not its characters
    KEY = "X-Key"


def test_headers_empty() -> None:
    h = fastnet.Headers()
    assert len(h) == 0 and not h and h.items() == [] and h.get("a") is None


def test_headers_from_dict_and_pairs() -> None:
    assert fastnet.Headers({"a": "1"}).items() == [("a", "1")]
    h = fastnet.Headers([("a", "1"), ("A", "2"), ("b", "3")])
    assert len(h) == 3
    assert h.items() == [("a", "1"), ("A", "2"), ("b", "3")]
    assert h.keys() == ["a", "A", "b"] and h.values() == ["1", "2", "3"]
    assert list(h) == ["a", "A", "b"]


def test_headers_case_insensitive_lookup_last_value_wins() -> None:
    h = fastnet.Headers([("Set-Cookie", "a=1"), ("set-cookie", "b=2")])
    assert h.get("SET-COOKIE") == "b=2"
    assert h["set-Cookie"] == "b=2"
    assert h.get_all("Set-Cookie") == ["a=1", "b=2"]
    assert "set-cookie" in h and "SET-COOKIE" in h and "nope" not in h and 3 not in h
    assert h.get("missing", "dflt") == "dflt"
    with pytest.raises(KeyError):
        h["missing"]


def test_headers_add_set_remove_return_new_objects() -> None:
    h = fastnet.Headers([("A", "1"), ("B", "2"), ("a", "3")])
    added = h.add("C", "4")
    assert added is not h and h.items() == [("A", "1"), ("B", "2"), ("a", "3")]
    assert added.items()[-1] == ("C", "4")
    replaced = h.set("a", "9")
    assert replaced.items() == [("a", "9"), ("B", "2")]
    assert h.set("new", "x").items()[-1] == ("new", "x")
    removed = h.remove("A")
    assert removed.items() == [("B", "2")]
    assert h.remove("absent") is h or h.remove("absent") == h
    assert len(h) == 3


def test_headers_immutable() -> None:
    h = fastnet.Headers({"a": "1"})
    with pytest.raises((AttributeError, TypeError)):
        h["a"] = "2"  # type: ignore[index]
    with pytest.raises(TypeError):
        hash(h)


def test_headers_equality_case_insensitive_names() -> None:
    assert fastnet.Headers({"Content-Type": "x"}) == fastnet.Headers({"content-type": "x"})
    assert fastnet.Headers({"a": "1"}) == {"A": "1"}
    assert fastnet.Headers([("a", "1"), ("a", "2")]) == [("a", "1"), ("a", "2")]
    assert fastnet.Headers({"a": "1"}) != fastnet.Headers({"a": "2"})
    assert fastnet.Headers([("a", "1"), ("a", "2")]) != fastnet.Headers([("a", "2"), ("a", "1")])


def test_headers_values_are_stripped_and_numbers_accepted() -> None:
    # annotated: under the Mapping | Iterable[tuple] union mypy infers a mixed literal as dict[str, object]
    data: dict[str, str | int] = {"A": "  x y \t", "Content-Length": 12}
    h = fastnet.Headers(data)
    assert h["a"] == "x y" and h["content-length"] == "12"


def test_headers_copy_from_headers() -> None:
    h = fastnet.Headers({"a": "1"})
    copy = fastnet.Headers(h)
    assert copy == h and copy is not h


@pytest.mark.parametrize("bad", ["a\r\nb", "a\nb", "a\rb", "a\x00b", "a\x01b", "a\x7fb"])
def test_headers_value_with_control_characters_rejected_naming_the_header(bad: str) -> None:
    with pytest.raises(ValueError, match="X-Name"):
        fastnet.Headers({"X-Name": bad})
    with pytest.raises(ValueError, match="X-Name"):
        fastnet.Headers().add("X-Name", bad)
    with pytest.raises(ValueError, match="X-Name"):
        fastnet.Headers().set("X-Name", bad)


@pytest.mark.parametrize("bad", ["", "a b", "a:b", "a\r\nb", "a\x00", "é", "a(b)", "a/b", 'a"', "a\tb"])
def test_headers_name_not_a_token_rejected(bad: str) -> None:
    with pytest.raises(ValueError) as info:
        fastnet.Headers({bad: "v"})
    if bad:
        assert repr(bad) in str(info.value)
    with pytest.raises(ValueError):
        fastnet.Headers().add(bad, "v")


def test_headers_token_characters_accepted() -> None:
    name = "!#$%&'*+-.^_`|~09azAZ"
    assert fastnet.Headers({name: "v"})[name] == "v"


def test_headers_tab_and_obs_text_in_value_accepted() -> None:
    assert fastnet.Headers({"a": "x\ty"})["a"] == "x\ty"
    assert fastnet.Headers({"a": "caf\xe9"})["a"] == "caf\xe9"


def test_headers_wrong_types_raise_type_error() -> None:
    with pytest.raises(TypeError):
        fastnet.Headers({1: "v"})  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        fastnet.Headers({"a": object()})


def test_headers_sensitive_values_hidden_in_repr_and_errors() -> None:
    h = fastnet.Headers({"Authorization": "Bearer secret", "Accept": "x"})
    assert "secret" not in repr(h) and "'x'" in repr(h)
    with pytest.raises(ValueError) as info:
        fastnet.Headers({"Authorization": "Bearer s3cret\r\n"})
    assert "s3cret" not in str(info.value) and "Authorization" in str(info.value)


def test_headers_wire_form() -> None:
    h = fastnet.Headers([("A", "1"), ("b", "2")])
    assert h.to_wire() == b"A: 1\r\nb: 2\r\n"


def test_headers_public_name_is_the_units_type() -> None:
    import fastnet.headers

    assert fastnet.Headers is fastnet.headers.Headers


def test_headers_str_subclass_names_and_values_become_plain_str(twins: Twins) -> None:
    headers = twins("fastnet.headers")
    h = headers.Headers([(Field.TRACE, Plain("t1")), (OldField.KEY, OldField.KEY), (Plain("Accept"), b"x/y")])
    assert h.items() == [("X-Trace", "t1"), ("X-Key", "X-Key"), ("Accept", "x/y")]
    assert all(type(name) is str and type(value) is str for name, value in h.items())
    assert h.to_wire() == b"X-Trace: t1\r\nX-Key: X-Key\r\nAccept: x/y\r\n"
    assert h.get(Field.TRACE) == "t1" and h[Plain("accept")] == "x/y" and OldField.KEY in h
    assert h.get_all(Plain("X-KEY")) == ["X-Key"]
    changed = h.set(Plain("x-trace"), Field.TRACE).add(OldField.KEY, Plain("2")).remove(Plain("accept"))
    assert changed.to_wire() == b"x-trace: X-Trace\r\nX-Key: X-Key\r\nX-Key: 2\r\n"
    assert headers.check_name(OldField.KEY) == "X-Key" and type(headers.check_name(Plain("A"))) is str
    assert headers.check_value(Plain("A"), Plain(" v ")) == "v"
    with pytest.raises(TypeError, match="header name must be a str"):
        headers.Headers([(b"X-A", "v")])
    with pytest.raises(ValueError, match="header name"):
        headers.Headers([(Plain("X A"), "v")])
