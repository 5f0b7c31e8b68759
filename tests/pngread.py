"""A PNG reader for the tests: width, height and RGB rows of an 8-bit RGB or RGBA PNG.

Both the email chart (alerts/pngchart.py, filter 0) and ``pdftoppm -png``
(adaptive filters) are read with it, so a test can look at the pixels that
were drawn without an imaging library in the dependencies.
"""

from __future__ import annotations

import struct
import zlib

SIGNATURE = b"\x89PNG\r\n\x1a\n"
CHANNELS = {2: 3, 6: 4}  # colour type -> samples per pixel (RGB, RGBA)


def _paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def _unfilter(kind: int, line: bytearray, prev: bytes, bpp: int) -> None:
    if kind == 0:
        return
    for i in range(len(line)):
        left = line[i - bpp] if i >= bpp else 0
        up = prev[i]
        if kind == 1:
            line[i] = (line[i] + left) & 0xFF
        elif kind == 2:
            line[i] = (line[i] + up) & 0xFF
        elif kind == 3:
            line[i] = (line[i] + ((left + up) >> 1)) & 0xFF
        elif kind == 4:
            corner = prev[i - bpp] if i >= bpp else 0
            line[i] = (line[i] + _paeth(left, up, corner)) & 0xFF
        else:
            raise AssertionError(f"unknown PNG filter {kind}")


def decode(png: bytes) -> tuple[int, int, list[bytes], list[int]]:
    """Width, height, the RGB rows (alpha dropped) and each row's filter type."""
    assert png[:8] == SIGNATURE, "not a PNG"
    pos, chunks = 8, []
    while pos < len(png):
        (length,) = struct.unpack(">I", png[pos : pos + 4])
        kind, data = png[pos + 4 : pos + 8], png[pos + 8 : pos + 8 + length]
        (crc,) = struct.unpack(">I", png[pos + 8 + length : pos + 12 + length])
        assert crc == zlib.crc32(kind + data), kind
        chunks.append((kind, data))
        pos += 12 + length
    assert chunks[0][0] == b"IHDR" and chunks[-1][0] == b"IEND"
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", chunks[0][1])
    assert depth == 8 and colour in CHANNELS and interlace == 0, (depth, colour, interlace)
    bpp = CHANNELS[colour]
    raw = zlib.decompress(b"".join(d for k, d in chunks if k == b"IDAT"))
    stride = 1 + bpp * width
    assert len(raw) == stride * height
    rows: list[bytes] = []
    filters: list[int] = []
    prev = bytes(stride - 1)
    for y in range(height):
        filters.append(raw[y * stride])
        line = bytearray(raw[y * stride + 1 : (y + 1) * stride])
        _unfilter(raw[y * stride], line, prev, bpp)
        prev = bytes(line)
        if bpp == 4:
            line = bytearray(b for i, b in enumerate(line) if i % 4 != 3)
        rows.append(bytes(line))
    return width, height, rows, filters


def colours(rows: list[bytes]) -> set[tuple[int, int, int]]:
    """Every distinct RGB colour in the rows."""
    return {(row[i], row[i + 1], row[i + 2]) for row in rows for i in range(0, len(row), 3)}
