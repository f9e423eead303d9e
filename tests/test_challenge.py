"""Challenges: ``WWW-Authenticate`` and ``Proxy-Authenticate`` parsed per RFC 9110 §11 (``parse_challenges``),
the immutable ``Challenge`` value, and ``Response.challenges()`` per status. No I/O: values only."""

from __future__ import annotations

import pytest

import fastnet
from fastnet.challenge import parse_challenges


def test_challenge_parse_basic_realm():
    assert parse_challenges(['Basic realm="simple"']) == [fastnet.Challenge("Basic", {"realm": "simple"})]


def test_challenge_parse_several_challenges_in_one_header():
    found = parse_challenges(
        ['Newauth realm="apps", type=1, title="Login to \\"apps\\"", Basic realm="simple"']
    )
    assert [c.scheme for c in found] == ["Newauth", "Basic"]
    assert found[0].params == {"realm": "apps", "type": "1", "title": 'Login to "apps"'}
    assert found[1].realm == "simple"


def test_challenge_parse_several_headers_in_order():
    found = parse_challenges(['Bearer realm="a"', 'Digest realm="b", nonce="n", qop="auth,auth-int"'])
    assert [(c.scheme, c.realm) for c in found] == [("Bearer", "a"), ("Digest", "b")]
    assert found[1].params["qop"] == "auth,auth-int"


def test_challenge_parse_token68():
    found = parse_challenges(
        ["Negotiate YIIBnQYGKwYBBQUCoIIBkTCCAY2gMDAuBgkqhkiC9xIBAgIGCSqGSIb3EgECAgY==, Basic"]
    )
    assert found[0].token68 == "YIIBnQYGKwYBBQUCoIIBkTCCAY2gMDAuBgkqhkiC9xIBAgIGCSqGSIb3EgECAgY=="
    assert found[0].params == {}
    assert found[1] == fastnet.Challenge("Basic")


def test_challenge_parse_names_lowercased_and_whitespace():
    (c,) = parse_challenges(['Basic   REALM = "r" ,\tCharset=UTF-8'])
    assert c.params == {"realm": "r", "charset": "UTF-8"} and c.charset == "UTF-8"


def test_challenge_charset_defaults_to_latin1():
    assert fastnet.Challenge("Basic").charset == "ISO-8859-1"
    assert fastnet.Challenge("Basic", {"charset": "no-such-codec"}).charset == "ISO-8859-1"


@pytest.mark.parametrize(
    "values, schemes",
    [
        ([""], []),
        ([",, ,"], []),
        (['Basic realm="a", realm="b"'], []),  # duplicate parameter: that challenge is dropped
        (['Bearer realm="a"', 'Basic realm="unterminated'], ["Bearer"]),
        (['Bearer realm="a", Basic realm=x y'], ["Bearer"]),  # stray token: keep what came before
        (["=Basic"], []),
        (["Basic="], []),
        (['Basic realm="x", =, Digest realm="y"'], ["Basic"]),
        (["\x00\x01\x02"], []),
        (["Basic realm=" + "a" * 100_000], ["Basic"]),
    ],
)
def test_challenge_parse_malformed_never_raises(values, schemes):
    assert [c.scheme for c in parse_challenges(values)] == schemes


def test_challenge_parse_accepts_a_single_string():
    assert parse_challenges("Basic") == [fastnet.Challenge("Basic")]


def test_challenge_challenge_is_immutable_and_hashable():
    c = fastnet.Challenge("Basic", {"Realm": "x"})
    with pytest.raises(AttributeError):
        c.scheme = "Digest"
    assert c == fastnet.Challenge("basic", {"realm": "x"}) and hash(c) == hash(
        fastnet.Challenge("BASIC", {"realm": "x"})
    )
    assert "Basic" in repr(c)


def test_challenge_response_challenges_per_status():
    r401 = fastnet.Response(401, headers=[("WWW-Authenticate", "Basic realm=a"), ("Proxy-Authenticate", "X")])
    r407 = fastnet.Response(407, headers=[("WWW-Authenticate", "Basic realm=a"), ("Proxy-Authenticate", "X")])
    assert r401.challenges() == [fastnet.Challenge("Basic", {"realm": "a"})]
    assert r407.challenges() == [fastnet.Challenge("X")]
    assert fastnet.Response(200, headers={"WWW-Authenticate": "Basic"}).challenges() == []
