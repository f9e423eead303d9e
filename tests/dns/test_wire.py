"""DNS wire-format helpers shared by ``UdpDns`` and ``DohDns`` (``fastnet/dns/_wire.py``), on responses
built with dnspython and read back from their wire bytes: the query made, which records are trusted (the
question's name and its CNAME chain only), the chain's smallest TTL, where a chain ends without
addresses, loops and over-long chains, error RCODEs, the cap on addresses, and the ``UnknownHostError``
naming every reason once."""

from __future__ import annotations

import dns.flags
import dns.message
import dns.name
import dns.rcode
import dns.rdatatype
import dns.rrset
import pytest

from fastnet.dns._wire import (
    MAX_ADDRESSES,
    MAX_CNAME_DEPTH,
    AnswerError,
    extract_addresses,
    make_query,
    rcode_reason,
    unknown_host,
)
from fastnet.exceptions import UnknownHostError

pytestmark = pytest.mark.filterwarnings("error")

A = dns.rdatatype.A
AAAA = dns.rdatatype.AAAA


def response(
    query: dns.message.Message, *rrsets: tuple, rcode: dns.rcode.Rcode = dns.rcode.NOERROR
) -> dns.message.Message:
    """The response to ``query`` with these ``(name, ttl, type, values)`` answers, through its wire bytes."""
    made = dns.message.make_response(query)
    for name, ttl, rdtype, values in rrsets:
        made.answer.append(dns.rrset.from_text_list(name, ttl, "IN", rdtype, values))
    made.set_rcode(rcode)
    return dns.message.from_wire(made.to_wire(want_shuffle=False))


def qname(query: dns.message.Message) -> dns.name.Name:
    return query.question[0].name


def test_wire_make_query_is_recursive_without_edns() -> None:
    query = make_query("App.Test", "AAAA")
    assert query.flags & dns.flags.RD and query.edns < 0
    assert qname(query) == dns.name.from_text("app.test.") and query.question[0].rdtype == AAAA
    assert make_query("app.test", "A", zero_id=True).id == 0  # RFC 8484: DoH queries carry ID 0


def test_wire_addresses_of_the_question_name_in_answer_order() -> None:
    query = make_query("app.test", "A")
    answer = response(query, ("app.test.", 30, "A", ["127.0.0.2", "127.0.0.1"]))
    assert extract_addresses(answer, qname(query), A) == (["127.0.0.2", "127.0.0.1"], 30, None)


def test_wire_records_for_other_names_are_ignored() -> None:
    query = make_query("app.test", "A")
    answer = response(query, ("poison.test.", 5, "A", ["10.66.66.66"]), ("app.test.", 5, "A", ["127.0.0.1"]))
    assert extract_addresses(answer, qname(query), A)[0] == ["127.0.0.1"]
    only_poison = response(query, ("poison.test.", 5, "A", ["10.66.66.66"]))
    assert extract_addresses(only_poison, qname(query), A) == ([], None, None)


def test_wire_a_cname_chain_is_followed_with_its_smallest_ttl() -> None:
    query = make_query("www.test", "A")
    answer = response(
        query,
        ("www.test.", 300, "CNAME", ["edge.test."]),
        ("edge.test.", 20, "CNAME", ["app.test."]),
        ("app.test.", 60, "A", ["127.0.0.1"]),
    )
    assert extract_addresses(answer, qname(query), A) == (["127.0.0.1"], 20, None)


def test_wire_a_chain_that_ends_without_addresses_names_where_to_ask_next() -> None:
    query = make_query("www.test", "A")
    answer = response(query, ("www.test.", 300, "CNAME", ["elsewhere.test."]))
    addresses, ttl, target = extract_addresses(answer, qname(query), A)
    assert (addresses, ttl, target) == ([], 300, dns.name.from_text("elsewhere.test."))


def test_wire_a_cname_loop_is_refused_across_requeries() -> None:
    query = make_query("a.test", "A")
    loop = response(query, ("a.test.", 5, "CNAME", ["b.test."]), ("b.test.", 5, "CNAME", ["a.test."]))
    with pytest.raises(AnswerError, match="CNAME loop"):
        extract_addresses(loop, qname(query), A)
    seen = {dns.name.from_text("c.test.")}  # asked for already, by an earlier query of the chain
    back = response(query, ("a.test.", 5, "CNAME", ["c.test."]))
    with pytest.raises(AnswerError, match="CNAME loop at c.test"):
        extract_addresses(back, qname(query), A, seen)


def test_wire_a_chain_longer_than_the_limit_is_refused() -> None:
    query = make_query("n0.test", "A")
    chain = [(f"n{i}.test.", 5, "CNAME", [f"n{i + 1}.test."]) for i in range(MAX_CNAME_DEPTH + 2)]
    with pytest.raises(AnswerError, match=f"longer than {MAX_CNAME_DEPTH}"):
        extract_addresses(response(query, *chain), qname(query), A)
    short = chain[: MAX_CNAME_DEPTH - 1] + [(f"n{MAX_CNAME_DEPTH - 1}.test.", 5, "A", ["127.0.0.9"])]
    assert extract_addresses(response(query, *short), qname(query), A)[0] == ["127.0.0.9"]


@pytest.mark.parametrize("rcode", [dns.rcode.NXDOMAIN, dns.rcode.SERVFAIL, dns.rcode.REFUSED])
def test_wire_an_error_rcode_is_the_reason(rcode: dns.rcode.Rcode) -> None:
    query = make_query("app.test", "A")
    answer = response(query, rcode=rcode)
    assert rcode_reason(answer) == dns.rcode.to_text(rcode)
    with pytest.raises(AnswerError, match=dns.rcode.to_text(rcode)):
        extract_addresses(answer, qname(query), A)
    assert rcode_reason(response(query)) is None


def test_wire_addresses_are_capped() -> None:
    query = make_query("many.test", "A")
    many = [f"10.0.{i // 250}.{i % 250 + 1}" for i in range(MAX_ADDRESSES + 10)]
    addresses = extract_addresses(response(query, ("many.test.", 5, "A", many)), qname(query), A)[0]
    assert addresses == many[:MAX_ADDRESSES]


def test_wire_unknown_host_names_each_reason_once() -> None:
    error = unknown_host("app.test", ["NXDOMAIN", "timed out", "NXDOMAIN"], "UDP 127.0.0.1:53")
    assert isinstance(error, UnknownHostError) and error.phase == "dns"
    assert str(error).startswith("app.test: NXDOMAIN; timed out (UDP 127.0.0.1:53)")
    assert str(unknown_host("app.test", [], "DoH")).startswith("app.test: no A or AAAA records (DoH)")
