"""What ``params=``, ``data=`` and ``files=`` turn into: a query string, a form body, a multipart body.

OkHttp builds these with ``HttpUrl.Builder.addQueryParameter``, ``FormBody`` and ``MultipartBody``;
fastnet takes the shapes requests and httpx users pass and encodes them the way requests does, so the
same call puts the same bytes on the wire:

* **query and form** (:func:`encode_pairs`): a mapping or ``(key, value)`` pairs; a list or tuple value
  repeats its key; ``None`` values are left out; ``str`` values are UTF-8, ``bytes`` as they are,
  numbers as ``str()``; keys and values percent-encoded with spaces as ``+``
  (``application/x-www-form-urlencoded``). A ``str`` or ``bytes`` is taken as already encoded.
* **multipart** (:class:`MultipartBody`): data fields first, then files, each file as a file object
  (read in 64 KiB pieces when it is sent, never whole), ``bytes`` or ``str``, or a tuple
  ``(filename, content[, content_type[, headers]])``. The filename defaults to the file's own name (or
  the field name), the content type to a guess from the filename (else ``application/octet-stream``);
  a ``None`` filename sends a plain field. Names and filenames are escaped as browsers do
  (``"`` → ``%22``, CR → ``%0D``, LF → ``%0A``). When every part's size is known (bytes, and files that
  can seek) the body has a ``Content-Length`` and can be sent again (a redirect, a retry: files are
  rewound); a pipe or a socket makes it chunked and one-shot.
"""

from __future__ import annotations

import io
import mimetypes
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import IO, Any, TypeAlias
from urllib.parse import quote_plus

__all__ = [
    "FileContent",
    "FileTypes",
    "FilesLike",
    "MultipartBody",
    "PairValue",
    "PairsLike",
    "ParamsLike",
    "encode_pairs",
    "pairs_of",
]

_Scalar: TypeAlias = str | bytes | bytearray | int | float
#: One value of a query or form: text, bytes or a number; a list or tuple of them repeats the key;
#: ``None`` is left out.
PairValue: TypeAlias = _Scalar | Sequence[_Scalar | None] | None
#: What ``params=`` and a form's ``data=`` accept (besides an already encoded ``str``/``bytes``): a mapping
#: or ``(key, value)`` pairs whose values are ``PairValue``s, checked when they are encoded. The annotation
#: says ``object`` so that a dict literal mixing them (``{"q": "x", "page": 2}``) type-checks.
PairsLike: TypeAlias = Mapping[str, object] | Iterable[tuple[object, object]]
#: ``params=``: pairs, or a query string already encoded.
ParamsLike: TypeAlias = PairsLike | str | bytes | bytearray
#: A file's content: a binary file object, ``bytes`` or ``str``.
FileContent: TypeAlias = IO[bytes] | bytes | str
#: One ``files=`` value: the content, or ``(filename, content[, content_type[, headers]])``.
FileTypes: TypeAlias = (
    FileContent
    | tuple[str | None, FileContent]
    | tuple[str | None, FileContent, str | None]
    | tuple[str | None, FileContent, str | None, Mapping[str, str]]
)
#: ``files=``: a mapping of field names to files, or ``(name, file)`` pairs.
FilesLike: TypeAlias = Mapping[str, FileTypes] | Iterable[tuple[str, FileTypes]]

_PIECE = 65536


def pairs_of(value: object, what: str) -> list[tuple[object, object]]:
    """``value`` (a mapping or an iterable of pairs) as a list of ``(key, value)``, lists expanded and
    ``None`` values left out."""
    if isinstance(value, Mapping):
        items: Iterable[object] = value.items()
    elif isinstance(value, (str, bytes, bytearray)) or not isinstance(value, Iterable):
        raise TypeError(f"{what} must be a mapping or (key, value) pairs, not {type(value).__name__}")
    else:
        items = value
    out: list[tuple[object, object]] = []
    for item in items:
        if not isinstance(item, (tuple, list)) or len(item) != 2:
            raise TypeError(f"{what}: each item must be a (key, value) pair, not {item!r}")
        key, values = item
        if isinstance(values, (list, tuple)):
            out.extend((key, v) for v in values if v is not None)
        elif values is not None:
            out.append((key, values))
    return out


def _text(value: object, what: str) -> str | bytes:
    if isinstance(value, (str, bytes)):
        return value
    if isinstance(value, bytearray):
        return bytes(value)
    if isinstance(value, (int, float)):
        return str(value)
    raise TypeError(f"{what}: a value must be a str, bytes or a number, not {type(value).__name__}")


def encode_pairs(value: ParamsLike, what: str = "params") -> str:
    """A query string or form body (``a=1&b=x+y``) from a mapping, pairs, or an encoded ``str``/``bytes``."""
    if isinstance(value, str):
        return value.lstrip("?")
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("ascii").lstrip("?")
    parts = []
    for key, item in pairs_of(value, what):
        parts.append(f"{quote_plus(_text(key, what))}={quote_plus(_text(item, what))}")
    return "&".join(parts)


def _keys(value: ParamsLike, what: str) -> set[str]:
    """The keys a params value sets (for merging the client's under a request's)."""
    if isinstance(value, (str, bytes, bytearray)):
        text = value.decode("ascii") if isinstance(value, (bytes, bytearray)) else value
        keys = set()
        for part in text.lstrip("?").split("&"):
            if part:
                keys.add(part.split("=", 1)[0])
        return keys
    out = set()
    for key, _ in pairs_of(value, what):
        k = _text(key, what)
        out.add(quote_plus(k))
    return out


def merge_params(client: ParamsLike | None, request: ParamsLike | None) -> str:
    """The client's ``params`` under the request's: a key the request sets replaces the client's. Either
    may be ``None`` (not both: ``encode_pairs`` refuses ``None`` with a ``TypeError``)."""
    if client is None:
        return encode_pairs(request)  # type: ignore[arg-type]  # None as well: refused there
    if request is None:
        return encode_pairs(client)
    overridden = _keys(request, "params")
    mine = [p for p in encode_pairs(client).split("&") if p and p.split("=", 1)[0] not in overridden]
    theirs = encode_pairs(request)
    return "&".join([*mine, theirs] if theirs else mine)


# -- multipart ----------------------------------------------------------------------------------------


def _escape(value: str) -> str:
    # what browsers do to a name or filename in Content-Disposition (WHATWG HTML, urllib3 and httpx too)
    return value.replace('"', "%22").replace("\r", "%0D").replace("\n", "%0A")


def _header_text(value: object, what: str) -> str:
    if isinstance(value, bytes):
        value = value.decode("utf-8")
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str, not {type(value).__name__}")
    return value


class _Part:
    __slots__ = ("head", "data", "file", "start", "size")

    def __init__(
        self, head: bytes, data: bytes | None, file: IO[bytes] | None, start: int, size: int
    ) -> None:
        self.head = head  # the part's header lines and the blank line after them
        self.data = data  # in-memory content, or None for a file
        self.file = file
        self.start = start  # where the file's content starts (a seekable file)
        self.size = size  # content length, -1 when unknown (a pipe)


def _file_size(file: IO[bytes]) -> tuple[int, int]:
    """``(start, size)`` of a binary file from its current position; ``(0, -1)`` when it cannot seek."""
    try:
        if not file.seekable():
            return 0, -1
        start = file.tell()
        end = file.seek(0, os.SEEK_END)
        file.seek(start)
        return start, end - start
    except (AttributeError, OSError, ValueError):
        return 0, -1


class MultipartBody:
    """A ``multipart/form-data`` body (RFC 7578) that streams: an iterable of bytes, iterated afresh (files
    rewound) for every attempt. ``content_type`` carries the boundary; ``length`` is ``-1`` when a part's
    size is unknown (then the body is sent chunked, once).

    >>> body = MultipartBody({"title": "report"}, {"file": open("report.pdf", "rb")})
    >>> body.content_type, body.length
    ('multipart/form-data; boundary=...', 48213)
    """

    __slots__ = ("boundary", "parts", "length", "content_type", "one_shot")
    boundary: str
    parts: list[_Part]
    length: int
    content_type: str
    one_shot: bool

    def __init__(
        self, data: PairsLike | None = None, files: FilesLike | None = None, *, boundary: str | None = None
    ) -> None:
        if boundary is None:
            boundary = os.urandom(16).hex()
        elif not boundary or len(boundary) > 70 or any(c in boundary for c in '\r\n"'):
            raise ValueError(f"invalid multipart boundary {boundary!r}")
        self.boundary = boundary
        self.content_type = f"multipart/form-data; boundary={boundary}"
        parts: list[_Part] = []
        if data is not None:
            if isinstance(data, (str, bytes, bytearray)):
                raise TypeError("with files=, data= must be form fields (a mapping or pairs), not a body")
            for name, value in pairs_of(data, "data"):
                content = _text(value, "data")
                raw = content.encode("utf-8") if isinstance(content, str) else content
                head = self._head(_header_text(name, "a field name"), None, None, None)
                parts.append(_Part(head, raw, None, 0, len(raw)))
        if files is not None:
            for name, value in self._file_items(files):
                parts.append(self._file_part(_header_text(name, "a field name"), value))
        self.parts = parts
        sizes = [p.size for p in parts]
        self.one_shot = any(s < 0 for s in sizes)
        if self.one_shot:
            self.length = -1
        else:
            framing = sum(len(b"--") + len(boundary) + 2 + len(p.head) + 2 for p in parts)
            self.length = framing + sum(sizes) + len(boundary) + 6

    @staticmethod
    def _file_items(files: FilesLike) -> list[tuple[str, FileTypes]]:
        if isinstance(files, Mapping):
            return list(files.items())
        if isinstance(files, (str, bytes)) or not isinstance(files, Iterable):
            raise TypeError(f"files must be a mapping or (name, file) pairs, not {type(files).__name__}")
        out = []
        for item in files:
            if not isinstance(item, (tuple, list)) or len(item) != 2:
                raise TypeError(f"files: each item must be a (name, file) pair, not {item!r}")
            out.append((item[0], item[1]))
        return out

    def _head(
        self, name: str, filename: str | None, content_type: str | None, headers: Mapping[str, str] | None
    ) -> bytes:
        lines = [f'Content-Disposition: form-data; name="{_escape(name)}"']
        if filename is not None:
            lines[0] += f'; filename="{_escape(filename)}"'
        if content_type is not None:
            lines.append(f"Content-Type: {content_type}")
        for key, val in (headers or {}).items():
            if key.lower() in ("content-disposition", "content-type"):
                continue
            lines.append(f"{key}: {val}")
        for line in lines:
            if "\r" in line or "\n" in line or "\x00" in line:
                raise ValueError(f"a multipart header line cannot hold CR, LF or NUL: {line[:60]!r}")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8")

    def _file_part(self, name: str, value: FileTypes) -> _Part:
        filename: str | None = _UNSET
        content_type: str | None = None
        headers: Mapping[str, str] | None = None
        if isinstance(value, tuple):
            if not 2 <= len(value) <= 4:
                raise ValueError(
                    f"files[{name!r}]: a tuple must be (filename, content[, content_type[, headers]])"
                )
            filename, content = value[0], value[1]
            if len(value) > 2:
                content_type = value[2]
            if len(value) > 3:
                headers = value[3]
        else:
            content = value
        if filename is not _UNSET and filename is not None:
            filename = _header_text(filename, f"files[{name!r}] filename")
        if isinstance(content, io.TextIOBase):
            raise TypeError(
                f"files[{name!r}] is a file opened in text mode: open it in binary mode ('rb') so its bytes "
                "are sent as they are"
            )
        if isinstance(content, str):
            content = content.encode("utf-8")
        data: bytes | None
        if isinstance(content, (bytes, bytearray, memoryview)):
            data = bytes(content)
            file = None
            start, size = 0, len(data)
        elif callable(getattr(content, "read", None)):
            data = None
            file = content
            start, size = _file_size(file)
        else:
            raise TypeError(
                f"files[{name!r}] must be a binary file object, bytes or str, not {type(content).__name__}"
            )
        if filename is _UNSET:
            own = getattr(file, "name", None)
            if isinstance(own, str) and own and own[0] != "<" and own[-1] != ">":
                filename = os.path.basename(own)
            else:
                filename = name
        if content_type is None and filename is not None:
            content_type = mimetypes.guess_type(filename)[0] or "application/octet-stream"
        return _Part(self._head(name, filename, content_type, headers), data, file, start, size)

    def __iter__(self) -> Iterator[bytes]:
        """The body's bytes in pieces of about 64 KiB (files rewound to where they started)."""
        boundary = self.boundary.encode("ascii")
        pending = bytearray()
        for part in self.parts:
            pending += b"--" + boundary + b"\r\n" + part.head
            if part.data is not None:
                pending += part.data
            else:
                file: IO[bytes] = part.file  # type: ignore[assignment]  # a part without data has a file
                left = part.size
                if left >= 0:
                    file.seek(part.start)
                while left != 0:
                    block = file.read(_PIECE if left < 0 else min(_PIECE, left))
                    if not block:
                        break  # a file shorter than it was: the exchange reports the short body
                    if isinstance(block, str):
                        raise TypeError("a file read returned str: open it in binary mode ('rb')")
                    if left > 0:
                        left -= len(block)
                    if pending:
                        pending += block
                        if len(pending) >= _PIECE:
                            yield bytes(pending)
                            pending.clear()
                    else:
                        yield block
            pending += b"\r\n"
            if len(pending) >= _PIECE:
                yield bytes(pending)
                pending.clear()
        pending += b"--" + boundary + b"--\r\n"
        yield bytes(pending)

    def __repr__(self) -> str:
        return f"<MultipartBody {len(self.parts)} parts, {self.length} bytes>"


_UNSET: Any = object()  # "no filename given": stands in for a str | None, so it is typed Any
