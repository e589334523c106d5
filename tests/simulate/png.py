"""A minimal PNG reader for the screenshots of the report test (8-bit RGB / RGBA, not
interlaced: what Chromium writes), so the test needs no imaging library."""

from __future__ import annotations

import struct
import zlib
from collections import Counter


def _paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def read_png(data: bytes) -> tuple[int, int, list[bytes]]:
    """(width, height, rows of RGB bytes)."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat = 8, b""
    width = height = channels = 0
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or colour not in (2, 6) or interlace:
                raise ValueError(f"unsupported PNG (depth {depth}, colour type {colour})")
            channels = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += body
    raw = zlib.decompress(idat)
    stride = width * channels
    rows: list[bytes] = []
    prev = bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        filt, line = raw[start], bytearray(raw[start + 1 : start + 1 + stride])
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b = prev[i]
            c = prev[i - channels] if i >= channels else 0
            if filt == 1:
                line[i] = (line[i] + a) & 0xFF
            elif filt == 2:
                line[i] = (line[i] + b) & 0xFF
            elif filt == 3:
                line[i] = (line[i] + (a + b) // 2) & 0xFF
            elif filt == 4:
                line[i] = (line[i] + _paeth(a, b, c)) & 0xFF
        prev = line
        if channels == 4:
            rows.append(bytes(v for j, v in enumerate(line) if j % 4 != 3))
        else:
            rows.append(bytes(line))
    return width, height, rows


def colour_counts(
    rows: list[bytes], colours: list[tuple[int, int, int]], tolerance: int = 24
) -> dict[tuple[int, int, int], int]:
    """How many pixels are within ``tolerance`` (per channel) of each colour."""
    pixels: Counter[bytes] = Counter()
    for row in rows:
        pixels.update(row[x : x + 3] for x in range(0, len(row), 3))
    counts = dict.fromkeys(colours, 0)
    for pixel, n in pixels.items():
        for c in colours:
            if all(abs(pixel[i] - c[i]) <= tolerance for i in range(3)):
                counts[c] += n
                break
    return counts
