"""The sites overview, a site's page with its plots over a chosen window, and its report.

The window is chosen as ``?from=YYYY-MM-DD&to=YYYY-MM-DD`` (the site's local
days, both included) or ``?hours=N`` (the last N hours before *now*, the
console's clock: "last 24 h" of a station silent since Friday is empty, and
its row in station health says for how long it has been silent). Without
either it is the 7 days before the site's newest reading, not the wall
clock's week: a store replayed from a past storm still opens on its data.

The overview and the site page update themselves (console/static/live.js
swaps their ``data-live`` parts), so a reading that arrives shows without a
reload.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path
from urllib.parse import urlencode

from markupsafe import Markup
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from console import views
from console.auth import Permission
from console.report.maker import ReportInputs
from console.web import Console, Refused, console_of, page_user, render, site_for
from ingest.store.queries import SqlStore
from siltwatch.config import SiteConfig

DEFAULT_DAYS = 7
MAX_DAYS = 92  # the site page's plots
# The report: a year, what a town asks for at the permit's yearly review. Its plots read the
# hourly summaries (ingest/store/summaries.py), so a year costs what a quarter did (issue 24).
REPORT_MAX_DAYS = 366
MS_PER_H = 3_600_000


@dataclass(frozen=True)
class Window:
    """A span of the site's data: [start_ms, end_ms), and the local days it covers."""

    start_ms: int
    end_ms: int
    first_day: date
    last_day: date
    query: str  # how to ask for it again (?from=..&to=.. or ?hours=..)


def _day(text: str, name: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise Refused(400, f"{name}={text[:20]!r}: expected a date as YYYY-MM-DD") from None


def _local_midnight(day: date, site: SiteConfig) -> int:
    return round(datetime.combine(day, time(), site.site.zone).timestamp() * 1000)


def _local_day(ms: int, site: SiteConfig) -> date:
    return datetime.fromtimestamp(ms / 1000, site.site.zone).date()


def chosen_window(
    request: Request, site: SiteConfig, store: SqlStore, now_ms: int, max_days: int = MAX_DAYS
) -> Window:
    params = request.query_params
    if params.get("from") or params.get("to"):
        end_ms = views.newest_reading_ms(site, store) or now_ms
        first = _day(params["from"], "from") if params.get("from") else None
        last = _day(params["to"], "to") if params.get("to") else _local_day(end_ms, site)
        first = first or last - timedelta(days=DEFAULT_DAYS - 1)
        if first > last:
            raise Refused(400, f"from={first} is after to={last}")
        if (last - first).days + 1 > max_days:
            raise Refused(400, f"choose at most {max_days} days at once")
        query = urlencode({"from": first.isoformat(), "to": last.isoformat()})
        return Window(
            _local_midnight(first, site),
            _local_midnight(last + timedelta(days=1), site),
            first,
            last,
            query,
        )
    end_ms = now_ms if params.get("hours") else views.newest_reading_ms(site, store) or now_ms
    hours = DEFAULT_DAYS * 24
    if params.get("hours"):
        try:
            hours = int(params["hours"])
        except ValueError:
            raise Refused(400, f"hours={params['hours'][:20]!r}: expected a whole number") from None
        if not 1 <= hours <= max_days * 24:
            raise Refused(400, f"hours must be between 1 and {max_days * 24}")
    start_ms = end_ms - hours * MS_PER_H
    return Window(
        start_ms,
        end_ms + 1,
        _local_day(start_ms, site),
        _local_day(end_ms, site),
        urlencode({"hours": hours}) if params.get("hours") else "",
    )


def _site_summary(console: Console, site: SiteConfig, role: str) -> dict[str, object]:
    alerts = views.open_alerts(site, console.store, console.book, console.now_ms())
    return {
        "site": site,
        "role": role,
        "alerts": alerts,
        "counts": views.severity_counts(alerts),
        "duties": views.pressing(views.duty_rows(site, console.store, console.now_ms())),
        "stations": views.station_rows(site, console.store, console.now_ms()),
        "sensors": views.sensor_rows(site, console.store),
    }


async def overview(request: Request) -> Response:
    user = page_user(request)
    console = console_of(request)
    summaries = [
        _site_summary(console, site, user.roles[sid])
        for sid, site in console.sites.items()
        if sid in user.roles
    ]
    return render(request, "overview.html", {"summaries": summaries}, user=user)


def _charts(site: SiteConfig, store: SqlStore, window: Window) -> list[Markup]:
    from console.charts.draw import chart_html  # drawn on demand: the overview needs no plots
    from console.charts.plots import site_charts

    return [
        Markup(chart_html(chart))
        for chart in site_charts(site, store, window.start_ms, window.end_ms)
    ]


async def site_page(request: Request) -> Response:
    user = page_user(request)
    site = site_for(request, user, Permission.READ)
    console = console_of(request)
    window = chosen_window(request, site, console.store, console.now_ms())
    sid = site.site.id
    log = console.store.latest_site_log(sid, 15)
    context = {
        **_site_summary(console, site, user.roles[sid]),
        "window": window,
        "charts": _charts(site, console.store, window),
        "all_alerts": views.all_alerts(site, console.store, console.book, console.now_ms()),
        "site_log": views.site_log_rows(list(reversed(log)), site),
        "may_record": user.may(sid, Permission.RECORD),
        "silences": [s for s in console.book.silences(sid, since_ms=console.now_ms())],
    }
    return render(request, "site.html", context, user=user)


async def report(request: Request) -> Response:
    """The inspector's report of the window: HTML, or PDF with ``?format=pdf``."""
    user = page_user(request)
    site = site_for(request, user, Permission.READ)
    console = console_of(request)
    window = chosen_window(request, site, console.store, console.now_ms(), REPORT_MAX_DAYS)
    html = console.reports.html(
        ReportInputs(
            site,
            console.store,
            console.book,
            window.first_day,
            window.last_day,
            generated_at=datetime.fromtimestamp(console.now_ms() / 1000, UTC),  # the footer's
        )
    )
    stem = f"siltwatch-report-{site.site.id}-{window.first_day}-{window.last_day}"
    console.book.audit(
        console.now_ms(),
        user.name,
        "report",
        site=site.site.id,
        detail=f"{window.first_day} .. {window.last_day} {request.query_params.get('format', 'html')}",
    )
    if request.query_params.get("format") != "pdf":
        return HTMLResponse(
            html, headers={"Content-Disposition": f'inline; filename="{stem}.html"'}
        )
    with tempfile.TemporaryDirectory(prefix="siltwatch-report-") as work:
        out = Path(work) / f"{stem}.pdf"
        await run_in_threadpool(console.reports.pdf, html, out)  # a browser: seconds
        data = out.read_bytes()
    return Response(
        data,
        media_type="application/pdf",
        headers={"Content-Disposition": f'inline; filename="{stem}.pdf"'},
    )
