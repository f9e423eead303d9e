"""Content decoders for transparent decompression: gzip, deflate, and br and zstd when their packages are
installed (``pip install 'fastnet-http[compression]'``; from a checkout: ``pip install -e '.[compression]'``):
``brotli`` and ``zstandard``.

Each decoder has the surface of a ``zlib.decompressobj`` that the exchange drives: ``decompress(data,
max_length)`` returns at most about ``max_length`` decoded bytes, ``unconsumed_tail`` is non-empty while
output is pending without new input (feed it back), ``flush()`` ends the stream and ``eof`` says whether
the stream's end marker was seen (a body that ends without it is a ``ProtocolError``). That bound is what
keeps memory flat whatever a server compresses (a "bomb" is stopped by ``max_body_size`` one bounded
piece at a time), so every codec here honours it:

* gzip and deflate are zlib's own ``max_length``; deflate takes both the zlib-wrapped form RFC 9110
  means and the raw form some servers send (as browsers, curl and urllib3 do);
* br needs ``brotli`` >= 1.2 (``output_buffer_limit``); an older one is not offered. That limit is a
  hint, not a bound (brotli 1.2 grows its output buffer in steps and stops once it reaches the limit:
  nearly twice ``max_length`` for 1 MiB), so the decoder asks for half of ``max_length`` and splits
  what still comes out longer; after a piece that filled the hint it asks again with no input, since
  brotli may still hold output once it says it can take more input;
* zstd (``zstandard``, whose decompressor has no output limit) is fed one frame header or block at a
  time: the format caps a block's decoded size at 128 KiB, so a call decodes whole blocks up to
  ``max_length`` (one block when ``max_length`` is smaller). Windows are limited to 8 MiB as RFC 9659
  asks of HTTP's zstd.

``ACCEPT_ENCODING`` is what the Bridge offers: ``gzip, deflate``, then ``br`` and ``zstd`` when available
(what requests and httpx send with the same packages installed).
"""

from __future__ import annotations

import importlib
import struct
import zlib
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Protocol

    class Decoder(Protocol):
        """A content decoder, zlib's decompress object's way: bounded output, the input it did not take."""

        def decompress(self, data: bytes, max_length: int, /) -> bytes: ...
        def flush(self) -> bytes: ...
        @property
        def unconsumed_tail(self) -> bytes: ...
        @property
        def eof(self) -> bool: ...


__all__ = ["ACCEPT_ENCODING", "DecodeError", "SUPPORTED", "new_decoder"]


def _optional(name: str) -> ModuleType | None:
    try:
        return importlib.import_module(name)
    except ImportError:  # pragma: no cover - depends on what is installed
        return None


# the optional codec modules (None when not installed; they ship no type information)
brotli: Any = _optional("brotli")
if brotli is not None:
    try:
        brotli.Decompressor().process(b"", output_buffer_limit=1)
    except TypeError:  # pragma: no cover - brotli < 1.2 cannot bound its output: not offered
        brotli = None
zstandard: Any = _optional("zstandard")


class DecodeError(ValueError):
    """A compressed body that does not decode."""


_PENDING = b"\x00"  # the unconsumed_tail of a decoder with output waiting: fed back, it means "no input"


class _Deflate:
    """``deflate``: zlib-wrapped (RFC 1950, what the standard says) or raw (RFC 1951, what some send)."""

    __slots__ = ("_obj", "_raw")

    def __init__(self) -> None:
        self._obj: zlib._Decompress | None = None
        self._raw = b""

    def decompress(self, data: bytes, max_length: int) -> bytes:
        obj = self._obj
        if obj is None:
            data = self._raw + data
            if len(data) < 2:
                self._raw = data
                return b""
            wrapped = (data[0] & 0x0F) == 8 and (data[0] << 8 | data[1]) % 31 == 0
            obj = self._obj = zlib.decompressobj(zlib.MAX_WBITS if wrapped else -zlib.MAX_WBITS)
        out: bytes = obj.decompress(data, max_length)
        return out

    @property
    def unconsumed_tail(self) -> bytes:
        return self._obj.unconsumed_tail if self._obj is not None else b""

    @property
    def eof(self) -> bool:
        return self._obj is not None and bool(self._obj.eof)

    def flush(self) -> bytes:
        return self._obj.flush() if self._obj is not None else b""


class _Brotli:
    """``br`` with ``brotli`` >= 1.2: ``output_buffer_limit`` bounds each piece (with the split above)."""

    __slots__ = ("_obj", "_held", "_full")

    def __init__(self) -> None:
        self._obj = brotli.Decompressor()
        self._held = b""  # decoded output beyond the last piece's max_length
        self._full = False  # the last call filled its output hint: brotli may hold more

    def decompress(self, data: bytes, max_length: int) -> bytes:
        out: bytes = self._held
        if not out:
            if data is _PENDING:
                data = b""
            hint = max_length >> 1 or 1
            try:
                out = self._obj.process(data, output_buffer_limit=hint)
            except brotli.error as exc:
                raise DecodeError(str(exc) or "corrupt brotli stream") from exc
            self._full = len(out) >= hint
        if len(out) > max_length:
            self._held = out[max_length:]
            return out[:max_length]
        self._held = b""
        return out

    @property
    def unconsumed_tail(self) -> bytes:
        if self._held or self._full or not self._obj.can_accept_more_data():
            return _PENDING
        return b""

    @property
    def eof(self) -> bool:
        return not self._held and bool(self._obj.is_finished())

    def flush(self) -> bytes:
        return b""


_ZSTD_MAGIC = 0xFD2FB528
_MAX_BLOCK = 128 * 1024
_MAX_WINDOW = 8 * 1024 * 1024
_FCS_SIZES = (0, 2, 4, 8)
_DID_SIZES = (0, 1, 2, 4)


class _Zstd:
    """``zstd`` with ``zstandard``: the input is fed a frame header, a block or a checksum at a time, so the
    output of one call is bounded (see the module doc). Several frames in a row are decoded in turn."""

    __slots__ = ("_buffer", "_dobj", "_state", "_checksum", "_frames")

    # _state: what the next unit in the buffer is
    _FRAME, _BLOCK, _CHECKSUM = 0, 1, 2

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._dobj: Any = None  # the frame's zstandard decompressobj
        self._state = self._FRAME
        self._checksum = False
        self._frames = 0

    def _next_unit(self) -> int:
        """The size of the next whole unit at the start of the buffer, or 0 if it is not all there yet."""
        buf = self._buffer
        if self._state == self._FRAME:
            if len(buf) < 5:
                return 0
            magic = struct.unpack_from("<I", buf)[0]
            if 0x184D2A50 <= magic <= 0x184D2A5F:  # a skippable frame
                if len(buf) < 8:
                    return 0
                size = 8 + struct.unpack_from("<I", buf, 4)[0]
                return size if len(buf) >= size else 0
            if magic != _ZSTD_MAGIC:
                raise DecodeError("not a zstd frame (bad magic number)")
            descriptor = buf[4]
            single = descriptor & 0x20
            fcs = _FCS_SIZES[descriptor >> 6] or (1 if single else 0)
            size = 5 + (0 if single else 1) + _DID_SIZES[descriptor & 3] + fcs
            return size if len(buf) >= size else 0
        if self._state == self._CHECKSUM:
            return 4 if len(buf) >= 4 else 0
        if len(buf) < 3:
            return 0
        header = buf[0] | buf[1] << 8 | buf[2] << 16
        kind = (header >> 1) & 3
        size = header >> 3
        if kind == 3:
            raise DecodeError("corrupt zstd stream (reserved block type)")
        if size > _MAX_BLOCK:
            raise DecodeError("corrupt zstd stream (a block larger than 128 KiB)")
        total = 3 + (1 if kind == 1 else size)
        return total if len(buf) >= total else 0

    def decompress(self, data: bytes, max_length: int) -> bytes:
        if data is not _PENDING and data:
            self._buffer += data
        out: list[bytes] = []
        produced = 0
        while True:
            size = self._next_unit()
            if not size:
                break
            if self._state == self._BLOCK and out and produced + _MAX_BLOCK > max_length:
                break  # the next block could pass the limit: it waits for the next call
            unit = bytes(self._buffer[:size])
            del self._buffer[:size]
            state = self._state
            if state == self._FRAME:
                if struct.unpack_from("<I", unit)[0] != _ZSTD_MAGIC:
                    continue  # skippable frame: nothing to decode
                self._checksum = bool(unit[4] & 0x04)
                self._dobj = zstandard.ZstdDecompressor(max_window_size=_MAX_WINDOW).decompressobj()
                self._state = self._BLOCK
            elif state == self._BLOCK:
                if unit[0] & 1:  # the frame's last block
                    self._state = self._CHECKSUM if self._checksum else self._FRAME
            else:
                self._state = self._FRAME
            try:
                piece = self._dobj.decompress(unit)
            except zstandard.ZstdError as exc:
                raise DecodeError(f"corrupt zstd stream ({exc})") from exc
            if self._state == self._FRAME:
                self._frames += 1
            if piece:
                out.append(piece)
                produced += len(piece)
        return b"".join(out)

    @property
    def unconsumed_tail(self) -> bytes:
        return _PENDING if self._next_unit() else b""

    @property
    def eof(self) -> bool:
        return self._state == self._FRAME and self._frames > 0 and not self._buffer

    def flush(self) -> bytes:
        return b""


def _gzip() -> zlib._Decompress:
    return zlib.decompressobj(16 + zlib.MAX_WBITS)


_FACTORIES: dict[str, Callable[[], Decoder]] = {"gzip": _gzip, "x-gzip": _gzip, "deflate": _Deflate}
if brotli is not None:
    _FACTORIES["br"] = _Brotli
if zstandard is not None:
    _FACTORIES["zstd"] = _Zstd

#: The content codings fastnet decodes.
SUPPORTED = frozenset(_FACTORIES)
#: The ``Accept-Encoding`` the Bridge sends.
ACCEPT_ENCODING = ", ".join(c for c in ("gzip", "deflate", "br", "zstd") if c in SUPPORTED)


def new_decoder(content_encoding: str) -> Decoder | None:
    """A decoder for a ``Content-Encoding`` value, or None for one fastnet does not decode (several
    codings, or an unknown one: the body is then handed over as sent)."""
    factory = _FACTORIES.get(content_encoding)
    if factory is None:
        factory = _FACTORIES.get(content_encoding.strip().lower())
        if factory is None:
            return None
    return factory()
