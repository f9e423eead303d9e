"""Content decoders (``fastnet._internal.http1.decoders``), driven the way the exchange drives them:
each call returns at most ``max_length`` decoded bytes whatever the compression ratio (a "bomb" is read one
bounded piece at a time), ``unconsumed_tail`` is fed back while output is pending, ``eof`` tells a whole
stream from a truncated one, and a corrupt stream raises. gzip, both forms of deflate, br and zstd
(skipped where brotli or zstandard is not installed); the whole path through the client is in
tests/integration/test_client_defaults.py and tests/_internal/engine/test_bridge.py."""

from __future__ import annotations

import gzip
import os
import zlib
from collections.abc import Callable
from typing import Any

import pytest

from fastnet._internal.http1 import decoders
from fastnet._internal.http1.decoders import ACCEPT_ENCODING, SUPPORTED, DecodeError, new_decoder


def _raw_deflate(data: bytes) -> bytes:
    compressor = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    return compressor.compress(data) + compressor.flush()


def _br(data: bytes) -> bytes:
    brotli = pytest.importorskip("brotli")
    return bytes(brotli.compress(data, quality=5))


def _zstd(data: bytes) -> bytes:
    zstandard = pytest.importorskip("zstandard")
    return bytes(zstandard.ZstdCompressor(write_checksum=True).compress(data))


CODINGS: dict[str, Callable[[bytes], bytes]] = {
    "gzip": gzip.compress,
    "deflate": zlib.compress,  # zlib-wrapped, as RFC 9110 means it
    "raw-deflate": _raw_deflate,  # what some servers send as "deflate"
    "br": _br,
    "zstd": _zstd,
}


def _decoder(coding: str) -> Any:
    name = "deflate" if coding == "raw-deflate" else coding
    if name not in SUPPORTED:
        pytest.skip(f"{name} is not available here")
    return new_decoder(name)


#: zstd decodes whole blocks: a call returns up to max_length, or one block (128 KiB at most) when smaller.
ZSTD_BLOCK = 128 * 1024


def decode(decoder: Any, compressed: bytes, max_length: int, feed: int = 8192) -> tuple[list[bytes], bool]:
    """What the exchange does: feed raw pieces, feed the tail back while output is pending, then flush."""
    bound = max(max_length, ZSTD_BLOCK) if isinstance(decoder, decoders._Zstd) else max_length
    pieces: list[bytes] = []
    for start in range(0, len(compressed), feed):
        data = decoder.decompress(compressed[start : start + feed], max_length)
        while True:
            assert len(data) <= bound, f"a piece of {len(data)} bytes for max_length={max_length}"
            if data:
                pieces.append(data)
            tail = decoder.unconsumed_tail
            if not tail:
                break
            data = decoder.decompress(tail, max_length)
    rest = decoder.flush()
    if rest:
        pieces.append(rest)
    return pieces, bool(decoder.eof)


@pytest.mark.parametrize("coding", list(CODINGS))
def test_decoders_round_trip(coding: str) -> None:
    original = os.urandom(50_000) + b"text " * 40_000
    pieces, eof = decode(_decoder(coding), CODINGS[coding](original), 65536)
    assert b"".join(pieces) == original and eof


@pytest.mark.parametrize("coding", list(CODINGS))
def test_decoders_a_bomb_comes_out_in_bounded_pieces(coding: str) -> None:
    original = b"\x00" * (8 << 20)  # 8 MiB of zeros: a few KiB compressed
    compressed = CODINGS[coding](original)
    assert len(compressed) < len(original) // 100
    max_length = 256 * 1024
    pieces, eof = decode(_decoder(coding), compressed, max_length)
    assert eof and sum(map(len, pieces)) == len(original) and len(pieces) >= len(original) // max_length


@pytest.mark.parametrize("coding", list(CODINGS))
def test_decoders_a_truncated_stream_is_not_at_its_end(coding: str) -> None:
    compressed = CODINGS[coding](os.urandom(20_000))
    _, eof = decode(_decoder(coding), compressed[: len(compressed) // 2], 65536)
    assert not eof


@pytest.mark.parametrize("coding", list(CODINGS))
def test_decoders_a_corrupt_stream_raises(coding: str) -> None:
    decoder = _decoder(coding)
    garbage = b"\xff" * 64 + os.urandom(64)
    with pytest.raises((zlib.error, DecodeError)):
        decode(decoder, garbage, 65536)


def test_decoders_deflate_with_its_first_bytes_split() -> None:
    original = b"split header " * 1000
    for compressed in (zlib.compress(original), _raw_deflate(original)):
        decoder = new_decoder("deflate")
        assert decoder is not None
        first = decoder.decompress(compressed[:1], 65536)  # one byte: cannot tell the form yet
        assert first == b"" and decoder.unconsumed_tail == b"" and not decoder.eof
        pieces, eof = decode(decoder, compressed[1:], 65536)
        assert first + b"".join(pieces) == original and eof


def test_decoders_zstd_several_frames_and_a_skippable_frame() -> None:
    if "zstd" not in SUPPORTED:
        pytest.skip("zstandard is not installed")
    skippable = (0x184D2A50).to_bytes(4, "little") + (3).to_bytes(4, "little") + b"abc"
    stream = _zstd(b"one ") + skippable + _zstd(b"two")
    pieces, eof = decode(new_decoder("zstd"), stream, 65536, feed=7)
    assert b"".join(pieces) == b"one two" and eof


def test_decoders_unknown_or_several_codings_are_not_decoded() -> None:
    assert new_decoder("compress") is None
    assert new_decoder("gzip, br") is None
    assert new_decoder("identity") is None
    assert new_decoder(" GZip ") is not None  # names are case-insensitive, spaces around them ignored


def test_decoders_accept_encoding_offers_what_is_supported() -> None:
    offered = ACCEPT_ENCODING.split(", ")
    assert offered[:2] == ["gzip", "deflate"] and set(offered) <= SUPPORTED
    assert ("br" in offered) == (decoders.brotli is not None)
    assert ("zstd" in offered) == (decoders.zstandard is not None)
