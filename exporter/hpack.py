"""HPACK (RFC 7541), the header compression of HTTP/2, as much as a gRPC client needs.

Pure. :class:`Decoder` reads any header block a server sends: indexed fields from the
static and dynamic tables, literals with or without indexing, dynamic table size
updates and Huffman-coded strings. :func:`encode` writes a client's request headers as
plain literals without indexing (no dynamic table, no Huffman: always valid, and the
request headers are a few dozen bytes).
"""

from __future__ import annotations

import functools
from collections import deque
from collections.abc import Iterable

Header = tuple[str, str]


class HpackError(ValueError):
    """A header block that cannot be decoded (a connection error in HTTP/2)."""


# RFC 7541 Appendix A.
_STATIC: tuple[Header, ...] = (
    ("", ""),  # index 0 is not used
    (":authority", ""), (":method", "GET"), (":method", "POST"), (":path", "/"),
    (":path", "/index.html"), (":scheme", "http"), (":scheme", "https"), (":status", "200"),
    (":status", "204"), (":status", "206"), (":status", "304"), (":status", "400"),
    (":status", "404"), (":status", "500"), ("accept-charset", ""),
    ("accept-encoding", "gzip, deflate"), ("accept-language", ""), ("accept-ranges", ""),
    ("accept", ""), ("access-control-allow-origin", ""), ("age", ""), ("allow", ""),
    ("authorization", ""), ("cache-control", ""), ("content-disposition", ""),
    ("content-encoding", ""), ("content-language", ""), ("content-length", ""),
    ("content-location", ""), ("content-range", ""), ("content-type", ""), ("cookie", ""),
    ("date", ""), ("etag", ""), ("expect", ""), ("expires", ""), ("from", ""), ("host", ""),
    ("if-match", ""), ("if-modified-since", ""), ("if-none-match", ""), ("if-range", ""),
    ("if-unmodified-since", ""), ("last-modified", ""), ("link", ""), ("location", ""),
    ("max-forwards", ""), ("proxy-authenticate", ""), ("proxy-authorization", ""),
    ("range", ""), ("referer", ""), ("refresh", ""), ("retry-after", ""), ("server", ""),
    ("set-cookie", ""), ("strict-transport-security", ""), ("transfer-encoding", ""),
    ("user-agent", ""), ("vary", ""), ("via", ""), ("www-authenticate", ""),
)  # fmt: skip

# RFC 7541 Appendix B, as code lengths: the code is canonical (within a length, codes
# count up in symbol order; each length starts where the shorter ones left off), so the
# lengths define every code. Symbol 256 is EOS.
_LENGTHS: dict[int, tuple[int | range, ...]] = {
    5: (48, 49, 50, 97, 99, 101, 105, 111, 115, 116),
    6: (32, 37, 45, 46, 47, range(51, 58), 61, 65, 95, 98, 100, 102, 103, 104, 108, 109,
        110, 112, 114, 117),
    7: (58, range(66, 88), 89, 106, 107, 113, range(118, 123)),
    8: (38, 42, 44, 59, 88, 90),
    10: (33, 34, 40, 41, 63),
    11: (39, 43, 124),
    12: (35, 62),
    13: (0, 36, 64, 91, 93, 126),
    14: (94, 125),
    15: (60, 96, 123),
    19: (92, 195, 208),
    20: (128, 130, 131, 162, 184, 194, 224, 226),
    21: (153, 161, 167, 172, 176, 177, 179, 209, 216, 217, 227, 229, 230),
    22: (129, 132, 133, 134, 136, 146, 154, 156, 160, 163, 164, 169, 170, 173, 178, 181,
         185, 186, 187, 189, 190, 196, 198, 228, 232, 233),
    23: (1, 135, 137, 138, 139, 140, 141, 143, 147, 149, 150, 151, 152, 155, 157, 158,
         165, 166, 168, 174, 175, 180, 182, 183, 188, 191, 197, 231, 239),
    24: (9, 142, 144, 145, 148, 159, 171, 206, 215, 225, 236, 237),
    25: (199, 207, 234, 235),
    26: (192, 193, 200, 201, 202, 205, 210, 213, 218, 219, 238, 240, 242, 243, 255),
    27: (203, 204, 211, 212, 214, 221, 222, 223, 241, 244, 245, 246, 247, 248, 250, 251,
         252, 253, 254),
    28: (range(2, 9), 11, 12, range(14, 22), range(23, 32), 127, 220, 249),
    30: (10, 13, 22, 256),
}  # fmt: skip
EOS = 256


def huffman_codes() -> dict[int, tuple[int, int]]:
    """symbol -> (code, bit length), built from the canonical code lengths."""
    lengths: dict[int, int] = {}
    for length, symbols in _LENGTHS.items():
        for item in symbols:
            for symbol in item if isinstance(item, range) else (item,):
                lengths[symbol] = length
    codes: dict[int, tuple[int, int]] = {}
    code, previous = 0, 0
    for symbol in sorted(lengths, key=lambda s: (lengths[s], s)):
        code <<= lengths[symbol] - previous
        previous = lengths[symbol]
        codes[symbol] = (code, previous)
        code += 1
    return codes


@functools.cache  # built on first use: most answers carry no Huffman string at all
def _decode_table() -> dict[tuple[int, int], int]:
    return {(length, code): sym for sym, (code, length) in huffman_codes().items()}


def huffman_decode(data: bytes) -> bytes:
    """Decode a Huffman-coded string; padding must be at most 7 one-bits (RFC 7541 5.2)."""
    table = _decode_table()
    out = bytearray()
    code = length = 0
    for byte in data:
        for shift in range(7, -1, -1):
            code = (code << 1) | ((byte >> shift) & 1)
            length += 1
            symbol = table.get((length, code))
            if symbol is not None:
                if symbol == EOS:
                    raise HpackError("Huffman string contains EOS")
                out.append(symbol)
                code = length = 0
            elif length > 30:
                raise HpackError("invalid Huffman code")
    if length > 7 or code != (1 << length) - 1:
        raise HpackError("invalid Huffman padding")
    return bytes(out)


def huffman_encode(data: bytes) -> bytes:
    """Huffman-code a string (tests use it to build what servers send)."""
    codes = huffman_codes()
    value = bits = 0
    for byte in data:
        code, length = codes[byte]
        value = (value << length) | code
        bits += length
    pad = -bits % 8
    value = (value << pad) | ((1 << pad) - 1)
    return value.to_bytes((bits + pad) // 8, "big")


def _integer(data: bytes, pos: int, prefix: int) -> tuple[int, int]:
    mask = (1 << prefix) - 1
    if pos >= len(data):
        raise HpackError("truncated integer")
    value = data[pos] & mask
    pos += 1
    if value < mask:
        return value, pos
    shift = 0
    while True:
        if pos >= len(data):
            raise HpackError("truncated integer")
        byte = data[pos]
        pos += 1
        value += (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos
        if shift > 28:
            raise HpackError("integer too large")


def _string(data: bytes, pos: int) -> tuple[str, int]:
    if pos >= len(data):
        raise HpackError("truncated string")
    huffman = data[pos] & 0x80
    length, pos = _integer(data, pos, 7)
    end = pos + length
    if end > len(data):
        raise HpackError("truncated string")
    raw = data[pos:end]
    if huffman:
        raw = huffman_decode(raw)
    # header values are ASCII on the wire (RFC 9113 8.2.1); latin-1 never fails
    return raw.decode("latin-1"), end


class Decoder:
    """One connection's decoding state (the dynamic table)."""

    def __init__(self, max_table_size: int = 4096) -> None:
        self._max_allowed = max_table_size  # what this side announced (SETTINGS)
        self._max = max_table_size
        self._size = 0
        self._table: deque[Header] = deque()

    def _add(self, header: Header) -> None:
        self._table.appendleft(header)
        self._size += 32 + len(header[0]) + len(header[1])
        self._evict()

    def _evict(self) -> None:
        while self._size > self._max and self._table:
            name, value = self._table.pop()
            self._size -= 32 + len(name) + len(value)

    def _indexed(self, index: int) -> Header:
        if 0 < index < len(_STATIC):
            return _STATIC[index]
        dynamic = index - len(_STATIC)
        if index == 0 or dynamic >= len(self._table):
            raise HpackError(f"header index {index} is not in the tables")
        return self._table[dynamic]

    def decode(self, block: bytes) -> list[Header]:
        headers: list[Header] = []
        pos = 0
        while pos < len(block):
            byte = block[pos]
            if byte & 0x80:  # indexed field
                index, pos = _integer(block, pos, 7)
                headers.append(self._indexed(index))
                continue
            if byte & 0xE0 == 0x20:  # dynamic table size update
                size, pos = _integer(block, pos, 5)
                if size > self._max_allowed:
                    raise HpackError(f"table size {size} above the announced maximum")
                self._max = size
                self._evict()
                continue
            indexing = byte & 0xC0 == 0x40
            index, pos = _integer(block, pos, 6 if indexing else 4)
            if index:
                name = self._indexed(index)[0]
            else:
                name, pos = _string(block, pos)
            value, pos = _string(block, pos)
            if indexing:
                self._add((name, value))
            headers.append((name, value))
        return headers


def _encode_integer(value: int, prefix: int, first: int = 0) -> bytes:
    mask = (1 << prefix) - 1
    if value < mask:
        return bytes([first | value])
    out = bytearray([first | mask])
    value -= mask
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def encode(headers: Iterable[Header]) -> bytes:
    """A header block of literals without indexing, new names, no Huffman."""
    out = bytearray()
    for name, value in headers:
        out.append(0)
        for text in (name.encode("latin-1"), value.encode("latin-1")):
            out += _encode_integer(len(text), 7)
            out += text
    return bytes(out)
