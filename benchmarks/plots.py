"""Plot benchmark: what drawing a site page's, a report's and an email's charts costs.

Run: ``.venv/bin/python -m benchmarks.plots`` (``--days 30`` for a month).

Charts are drawn with matplotlib (console/charts/draw.py). A site page draws
each chart twice (a wide and a phone-width drawing), the report once at half
a page, the email once as a PNG at 2x. This times, on the demo week's store
(tests/console/app_world.py: the Lake George storm week, 1-minute and
5-minute sensors), after matplotlib is imported and its fonts are loaded:

* building the site's charts from the store (``site_charts``: range queries,
  medians per bucket, limits) over the window;
* drawing them as the site page does (``Chart.html``: 2 SVGs each), with the
  page's SVG size in bytes;
* drawing them as the report does (one 340 x 250 SVG each);
* drawing the plume alert's email PNG (``AlertCharts``, store included);
* the same page again, its drawings kept (``chart_draw`` keeps the last 64);
* and a 30-day chart of 30-second readings (86 400 points per series) drawn
  alone, the long-window case the min/max-per-pixel reduction is for.

Benchmarks may read the clock (``time.perf_counter``); the analytics never do.
"""

from __future__ import annotations

import argparse
import math
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from console.charts import draw as chart_draw
from console.charts.draw import chart_html, svg_text
from console.charts.email import AlertCharts
from console.charts.model import Chart, RefLine, Series
from console.charts.plots import site_charts
from ingest.store.sqlite import SqliteStore
from tests.console.app_world import SID, SITE, week_store

WEEK_START_MS = 1_777_867_200_000  # 2026-05-04 00:00 EDT
DAY_MS = 86_400_000


def timed(fn: Callable[[], object], repeat: int) -> tuple[float, object]:
    """The median wall time of ``repeat`` runs (seconds) and the last result."""
    times, result = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


def fresh(fn: Callable[[], object]) -> object:
    """``fn`` with no drawing kept from before (console/charts/draw.py keeps the last ones)."""
    chart_draw._DRAWN.clear()
    return fn()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=8, help="the site window (the week: 8)")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    svg_text(Chart("warm-up", "x", [Series("x", [(0, 1.0), (1, 2.0)])], start_ms=0, end_ms=1))

    with tempfile.TemporaryDirectory(prefix="siltwatch-bench-plots-") as tmp:
        db = week_store(Path(tmp))
        store = SqliteStore(db)
        try:
            start, end = WEEK_START_MS, WEEK_START_MS + args.days * DAY_MS
            build_s, charts = timed(lambda: site_charts(SITE, store, start, end), args.repeat)
            assert isinstance(charts, list)
            page_s, page = timed(
                lambda: fresh(lambda: [chart_html(c) for c in charts]), args.repeat
            )
            again_s, _ = timed(lambda: [chart_html(c) for c in charts], args.repeat)
            report_s, _ = timed(
                lambda: fresh(lambda: [svg_text(c, 340, 250) for c in charts]), args.repeat
            )
            plume = next(a for a in store.alerts(SID) if a.kind == "turbidity_contrast")
        finally:
            store.close()
        email = AlertCharts({SID: SITE}, db)
        email_s, data = timed(lambda: email(SID, plume), args.repeat)

    n = 30 * 2880
    t0 = WEEK_START_MS
    long = Chart(
        "30 days of 30 s readings",
        "NTU",
        [Series("downstream", [(t0 + i * 30_000, 10 + math.sin(i / 500)) for i in range(n)])],
        [RefLine("limit 50 NTU", 50.0)],
        start_ms=t0,
        end_ms=t0 + n * 30_000,
    )
    long_s, long_svg = timed(lambda: fresh(lambda: svg_text(long, 540, 270)), args.repeat)

    page_bytes = sum(len(h) for h in page) if isinstance(page, list) else 0
    png = getattr(data, "png", b"")
    print(f"site window: {args.days} days, {len(charts)} charts; median of {args.repeat} runs")
    print(f"  site_charts from the store          {build_s * 1000:8.1f} ms")
    print(
        f"  site page drawings (2 SVG each)     {page_s * 1000:8.1f} ms  {page_bytes / 1024:7.1f} KiB"
    )
    print(f"  the same page again (kept drawings) {again_s * 1000:8.1f} ms")
    print(f"  report drawings (1 SVG each)        {report_s * 1000:8.1f} ms")
    print(
        f"  email PNG of the plume (with store) {email_s * 1000:8.1f} ms  {len(png) / 1024:7.1f} KiB"
    )
    print(
        f"  30 days x 30 s, one SVG             {long_s * 1000:8.1f} ms  {len(str(long_svg)) / 1024:7.1f} KiB"
    )


if __name__ == "__main__":
    main()
