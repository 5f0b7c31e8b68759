"""A small PNG line chart in pure Python, for the alert email's inline plot.

The email shows the officer what happened at a glance (downstream turbidity
against the limit, a basin's level against its design level) without a
plotting library, a browser or a network fetch: the chart is a PNG built from
bytes (zlib + struct, PNG 1.2 / ISO 15948), attached to the email and shown by
``<img src="cid:...">``. Pure: data in, bytes out, no clock and no I/O, so it
renders once when the notification enters the outbox.

What it draws: one or two series as polylines (blue, orange), horizontal
reference lines (the limit, a design level) dashed in red, optional vertical
dotted marks (when the alert opened), and the y values of the bottom, top and
each reference line in a 3x5 pixel digit font. Titles, units, legends and
times go in the HTML around the image, where mail clients render text well.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import pairwise

Point = tuple[int, float]  # (t in epoch ms, value)
RGB = tuple[int, int, int]

WHITE: RGB = (255, 255, 255)
FRAME: RGB = (160, 160, 160)
GRID: RGB = (232, 232, 232)
TEXT: RGB = (90, 90, 90)
REF: RGB = (214, 39, 40)
MARK: RGB = (120, 120, 120)
SERIES_COLORS: tuple[RGB, ...] = ((31, 119, 180), (255, 127, 14), (44, 160, 44))


def hex_color(color: RGB) -> str:
    """``#rrggbb`` for the HTML legend beside the image."""
    return "#" + bytes(color).hex()


# 3x5 digits, rows top to bottom, 3 bits each (left pixel is the high bit).
# fmt: off
_GLYPHS: dict[str, tuple[int, ...]] = {
    "0": (7, 5, 5, 5, 7), "1": (2, 6, 2, 2, 7), "2": (7, 1, 7, 4, 7), "3": (7, 1, 7, 1, 7),
    "4": (5, 5, 7, 1, 1), "5": (7, 4, 7, 1, 7), "6": (7, 4, 7, 5, 7), "7": (7, 1, 1, 1, 1),
    "8": (7, 5, 7, 5, 7), "9": (7, 5, 7, 1, 7), ".": (0, 0, 0, 0, 2), "-": (0, 0, 7, 0, 0),
}
# fmt: on
_SCALE = 2  # each font pixel is 2x2
_ADVANCE = 4 * _SCALE  # 3 pixels and a gap


@dataclass(frozen=True)
class ChartData:
    """What to plot for one alert: the chart provider's answer (``chart_for`` of the
    email channel), e.g. downstream and upstream turbidity with the limit."""

    title: str
    unit: str
    series: tuple[tuple[str, tuple[Point, ...]], ...]
    ref_lines: tuple[tuple[str, float], ...] = ()
    marks: tuple[tuple[str, int], ...] = ()  # (label, t ms): vertical dotted lines

    def has_data(self) -> bool:
        return any(len(points) >= 1 for _, points in self.series)


class Canvas:
    """An RGB pixel buffer with the few primitives a line chart needs."""

    def __init__(self, width: int, height: int, background: RGB = WHITE) -> None:
        self.width, self.height = width, height
        self.pixels = bytearray(bytes(background) * (width * height))

    def set(self, x: int, y: int, color: RGB) -> None:
        if 0 <= x < self.width and 0 <= y < self.height:
            i = (y * self.width + x) * 3
            self.pixels[i : i + 3] = bytes(color)

    def hline(
        self, x0: int, x1: int, y: int, color: RGB, dash: tuple[int, int] | None = None
    ) -> None:
        for x in _dashed(x0, x1, dash):
            self.set(x, y, color)

    def vline(
        self, x: int, y0: int, y1: int, color: RGB, dash: tuple[int, int] | None = None
    ) -> None:
        for y in _dashed(y0, y1, dash):
            self.set(x, y, color)

    def line(self, x0: int, y0: int, x1: int, y1: int, color: RGB) -> None:
        """Bresenham's line, two pixels thick (the pixel below too) so it reads on a phone."""
        dx, dy = abs(x1 - x0), -abs(y1 - y0)
        sx, sy = (1 if x0 < x1 else -1), (1 if y0 < y1 else -1)
        err = dx + dy
        while True:
            self.set(x0, y0, color)
            self.set(x0, y0 + 1, color)
            if x0 == x1 and y0 == y1:
                return
            e2 = 2 * err
            if e2 >= dy:
                err += dy
                x0 += sx
            if e2 <= dx:
                err += dx
                y0 += sy

    def text(self, x: int, y: int, text: str, color: RGB) -> None:
        """Digits, '.' and '-' in the 3x5 font (scaled), top-left at (x, y)."""
        for n, ch in enumerate(text):
            rows = _GLYPHS.get(ch)
            if rows is None:
                continue
            for r, bits in enumerate(rows):
                for c in range(3):
                    if bits & (4 >> c):
                        for ox in range(_SCALE):
                            for oy in range(_SCALE):
                                self.set(
                                    x + n * _ADVANCE + c * _SCALE + ox, y + r * _SCALE + oy, color
                                )

    def png(self) -> bytes:
        """The buffer as a PNG: 8-bit truecolour, filter 0 per row (PNG 1.2 §4.1, §6)."""
        stride = self.width * 3
        raw = b"".join(
            b"\x00" + bytes(self.pixels[y * stride : (y + 1) * stride]) for y in range(self.height)
        )
        header = struct.pack(">IIBBBBB", self.width, self.height, 8, 2, 0, 0, 0)
        return (
            b"\x89PNG\r\n\x1a\n"
            + _chunk(b"IHDR", header)
            + _chunk(b"IDAT", zlib.compress(raw, 9))
            + _chunk(b"IEND", b"")
        )


def _dashed(a: int, b: int, dash: tuple[int, int] | None) -> Iterator[int]:
    """The positions from ``a`` to ``b`` (either order) that a dash pattern
    ``(on, off)``, counted from ``a``, draws; all of them without a pattern."""
    for p in range(min(a, b), max(a, b) + 1):
        if dash is None or (p - a) % (dash[0] + dash[1]) < dash[0]:
            yield p


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def label_number(value: float) -> str:
    """A y value in at most ~5 characters of digits, '.' and '-'."""
    magnitude = abs(value)
    if magnitude >= 100:
        text = f"{value:.0f}"
    elif magnitude >= 10:
        text = f"{value:.1f}"
    else:
        text = f"{value:.2f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def _bounds(chart: ChartData) -> tuple[int, int, float, float] | None:
    times = [t for _, pts in chart.series for t, _ in pts]
    values = [v for _, pts in chart.series for _, v in pts] + [v for _, v in chart.ref_lines]
    if not times:
        return None
    t0, t1 = min(times), max(times)
    lo, hi = min(values), max(values)
    pad = (hi - lo) * 0.08 or max(abs(hi) * 0.1, 1.0)
    lo, hi = lo - pad, hi + pad
    if min(values) >= 0 > lo:
        lo = 0.0  # a level, a turbidity: the axis starts at zero rather than below it
    return t0, max(t1, t0 + 1), lo, hi


def render_png(chart: ChartData, width: int = 480, height: int = 140) -> bytes:
    """The chart as PNG bytes; a frame with no lines when there are no points."""
    canvas = Canvas(width, height)
    left, right, top, bottom = 44, width - 6, 6, height - 7
    bounds = _bounds(chart)
    canvas.hline(left, right, top, FRAME)
    canvas.hline(left, right, bottom, FRAME)
    canvas.vline(left, top, bottom, FRAME)
    canvas.vline(right, top, bottom, FRAME)
    if bounds is None:
        return canvas.png()
    t0, t1, lo, hi = bounds

    def x_of(t: int) -> int:
        return left + round((t - t0) / (t1 - t0) * (right - left))

    def y_of(v: float) -> int:
        return bottom - round((v - lo) / (hi - lo) * (bottom - top))

    for quarter in (1, 2, 3):
        canvas.hline(left + 1, right - 1, top + (bottom - top) * quarter // 4, GRID)
    labels = [(top, hi, TEXT), (bottom - 5 * _SCALE, lo, TEXT)]
    for _label, value in chart.ref_lines:
        y = y_of(value)
        canvas.hline(left + 1, right - 1, y, REF, dash=(6, 4))
        labels.append((y - 5 * _SCALE // 2, value, REF))
    for _label, t in chart.marks:
        if t0 <= t <= t1:
            canvas.vline(x_of(t), top + 1, bottom - 1, MARK, dash=(2, 3))
    for n, (_label, points) in enumerate(chart.series):
        color = SERIES_COLORS[n % len(SERIES_COLORS)]
        mapped = [(x_of(t), y_of(v)) for t, v in sorted(points)]
        if len(mapped) == 1:
            canvas.line(*mapped[0], *mapped[0], color)
        for (xa, ya), (xb, yb) in pairwise(mapped):
            if (xa, ya) != (xb, yb):
                canvas.line(xa, ya, xb, yb, color)
    _axis_labels(canvas, labels, left)
    return canvas.png()


def _axis_labels(canvas: Canvas, labels: list[tuple[int, float, RGB]], left: int) -> None:
    """Right-aligned values left of the axis; a label that would overlap one already
    drawn is left out (the reference lines' values win over bottom and top)."""
    placed: list[int] = []
    for y, value, color in sorted(labels, key=lambda item: item[2] != REF):
        y = max(0, min(canvas.height - 5 * _SCALE, y))
        if any(abs(y - other) < 5 * _SCALE + 2 for other in placed):
            continue
        text = label_number(value)
        canvas.text(left - 3 - len(text) * _ADVANCE + _SCALE, y, text, color)
        placed.append(y)
