"""DNS wire-format helpers shared by ``UdpDns`` and ``DohDns`` (dnspython does the codec).

An answer is trusted only after ``query.is_response(response)`` (same ID, QR set, same question); the
addresses are then read by following the CNAME chain from the question name inside the answer section,
so records for unrelated names in a response never reach a cache.
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, TypeAlias

from fastnet.exceptions import UnknownHostError

if TYPE_CHECKING:
    from dns.message import Message, QueryMessage
    from dns.name import Name
    from dns.rdatatype import RdataType

    #: What one query came to: the server's response, or why there is none.
    Outcome: TypeAlias = "Message | str"

__all__ = [
    "MAX_ADDRESSES",
    "MAX_CNAME_DEPTH",
    "AnswerError",
    "Extracted",
    "extract_addresses",
    "load_dnspython",
    "make_query",
    "rcode_reason",
]

#: More addresses than this in one answer are cut off (connect attempts are sequential anyway).
MAX_ADDRESSES = 64
#: Longest CNAME chain followed, across re-queries too.
MAX_CNAME_DEPTH = 8

#: ``(addresses, ttl, target)``: see :func:`extract_addresses`.
Extracted = tuple[list[str], "float | None", "Name | None"]


class AnswerError(Exception):
    """A response that cannot be used; the message is the reason shown in ``UnknownHostError``."""


def load_dnspython() -> ModuleType:
    """Import dnspython's modules, or explain the optional extra that provides it: the ``dns`` package,
    with ``exception``, ``flags``, ``message``, ``name``, ``query``, ``rcode``, ``rdataclass`` and
    ``rdatatype`` loaded."""
    try:
        import dns.exception
        import dns.flags
        import dns.message
        import dns.name
        import dns.query
        import dns.rcode
        import dns.rdataclass
        import dns.rdatatype
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "UdpDns and DohDns need dnspython: "
            "pip install 'fastnet-http[dns]' (from a checkout: pip install -e '.[dns]')"
        ) from exc
    return dns


def make_query(name: Name | str, rdtype: RdataType | str, *, zero_id: bool = False) -> QueryMessage:
    """A recursive query (RD set) for ``name``/``rdtype`` (a ``RdataType`` or its text, ``"AAAA"``, as
    dnspython's ``make_query`` takes); ``zero_id`` for DoH (RFC 8484 §4.1)."""
    dns = load_dnspython()
    query: QueryMessage = dns.message.make_query(name, rdtype, use_edns=False)
    if zero_id:
        query.id = 0
    return query


def rcode_reason(response: Message) -> str | None:
    """``None`` for NOERROR, else the RCODE's name (``NXDOMAIN``, ``SERVFAIL``, ``REFUSED``...)."""
    dns = load_dnspython()
    rcode = response.rcode()
    if rcode == dns.rcode.NOERROR:
        return None
    return str(dns.rcode.to_text(rcode))


def extract_addresses(
    response: Message, qname: Name, rdtype: RdataType, seen: set[Name] | None = None
) -> Extracted:
    """Addresses of type ``rdtype`` for ``qname``, following CNAMEs within ``response``.

    Returns ``(addresses, ttl, target)``: ``target`` is the name a CNAME chain ended at without
    addresses in this response (the caller asks again for it), else ``None``. ``ttl`` is the smallest
    TTL along the chain. Raises :class:`AnswerError` for an error RCODE, a CNAME loop or a chain longer
    than ``MAX_CNAME_DEPTH``.
    """
    dns = load_dnspython()
    reason = rcode_reason(response)
    if reason is not None:
        raise AnswerError(reason)
    if seen is None:
        seen = set()
    name = qname
    seen.add(name)
    ttl: float | None = None
    for _ in range(MAX_CNAME_DEPTH + 1):
        rrset = response.get_rrset(response.answer, name, dns.rdataclass.IN, rdtype)
        if rrset is not None and len(rrset):
            ttl = rrset.ttl if ttl is None else min(ttl, rrset.ttl)
            addresses = [rdata.address for rdata in rrset][:MAX_ADDRESSES]
            return addresses, ttl, None
        cname = response.get_rrset(response.answer, name, dns.rdataclass.IN, dns.rdatatype.CNAME)
        if cname is None or not len(cname):
            return [], ttl, (name if name != qname else None)
        ttl = cname.ttl if ttl is None else min(ttl, cname.ttl)
        target = cname[0].target
        if target in seen:
            raise AnswerError(f"CNAME loop at {target}")
        if len(seen) > MAX_CNAME_DEPTH:
            break
        seen.add(target)
        name = target
    raise AnswerError(f"CNAME chain longer than {MAX_CNAME_DEPTH}")


def unknown_host(name: str, reasons: list[str], where: str) -> UnknownHostError:
    """The error for a name that produced no addresses, naming every reason once."""
    unique: list[str] = []
    for reason in reasons:
        if reason not in unique:
            unique.append(reason)
    text = "; ".join(unique) if unique else "no A or AAAA records"
    return UnknownHostError(f"{name}: {text} ({where})", phase="dns")
