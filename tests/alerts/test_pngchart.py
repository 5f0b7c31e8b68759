"""The email's inline chart: a real PNG with the series and the dashed limit line."""

from __future__ import annotations

from alerts.pngchart import REF, SERIES_COLORS, ChartData, render_png
from tests.pngread import colours
from tests.pngread import decode as read_png

CHART = ChartData(
    title="Turbidity outfall-a",
    unit="NTU",
    series=(
        (
            "downstream",
            tuple((i * 60_000, 20.0 + (150.0 if 100 <= i < 300 else 0.0)) for i in range(480)),
        ),
        ("upstream", tuple((i * 60_000, 25.0) for i in range(480))),
    ),
    ref_lines=(("limit", 54.3),),
)


def decode(png: bytes) -> tuple[int, int, list[bytes]]:
    """Width, height and RGB rows; the chart writer uses filter 0 on every row."""
    width, height, rows, filters = read_png(png)
    assert set(filters) == {0}
    return width, height, rows


def test_the_chart_is_a_valid_png_of_the_asked_size() -> None:
    width, height, _ = decode(render_png(CHART))
    assert (width, height) == (480, 140)
    width, height, _ = decode(render_png(CHART, 300, 100))
    assert (width, height) == (300, 100)


def test_both_series_and_the_limit_are_drawn() -> None:
    _, _, rows = decode(render_png(CHART))
    seen = colours(rows)
    assert SERIES_COLORS[0] in seen and SERIES_COLORS[1] in seen and REF in seen


def test_the_limit_line_is_dashed_and_horizontal() -> None:
    _, _, rows = decode(render_png(ChartData("t", "NTU", (("a", ((0, 0.0), (1, 100.0))),),
                                             (("limit", 50.0),))))  # fmt: skip
    red_rows = [y for y, row in enumerate(rows) if row.count(bytes(REF)) > 40]
    assert len(red_rows) == 1  # one horizontal line
    row = rows[red_rows[0]]
    pixels = [row[i : i + 3] == bytes(REF) for i in range(44 * 3, 470 * 3, 3)]
    assert any(pixels) and not all(pixels)  # dashes: some red, some not


def test_a_chart_without_points_is_an_empty_frame() -> None:
    width, height, rows = decode(render_png(ChartData("t", "NTU", (("a", ()),))))
    assert (width, height) == (480, 140)
    assert SERIES_COLORS[0] not in colours(rows)
