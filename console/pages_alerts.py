"""Every alert across a person's sites, filtered, counted, and linkable: ``GET /alerts``.

An officer with three sites, or an operator back from a weekend, asks "what is
open, where, how bad" once, not site by site. The list holds the episodes of
every site the person has a role on (nobody sees a site they have no role
on: the same rule as the site pages), newest first, filtered by the query
string so a filtered view can be bookmarked or sent:

- ``severity``: critical | warning | info
- ``state``: open | resolved | unacknowledged | silenced (default: any)
- ``site``: one site id among the person's
- ``kind``: one alert kind
- ``days``: opened or still open within the last N days before now (default 30;
  ``all`` for every episode)

The counts are those of the filtered list by severity (each chip links to the
same filters with that severity) and by state. An unknown value is refused with
400 and says what is expected.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import Response

from console import views
from console.auth import Permission
from console.web import Console, Refused, console_of, page_user, render
from siltwatch.vocabulary import Severity

STATES = ("open", "resolved", "unacknowledged", "silenced")
DAYS = ("1", "7", "30", "90", "all")
DEFAULT_DAYS = "30"
MS_PER_DAY = 86_400_000
FILTERS = ("severity", "state", "site", "kind", "days")


@dataclass(frozen=True)
class Filters:
    severity: str
    state: str
    site: str
    kind: str
    days: str

    def query(self, **change: str) -> str:
        """The query string of these filters with ``change`` applied (empty values left out)."""
        values = {name: getattr(self, name) for name in FILTERS} | change
        if values["days"] == DEFAULT_DAYS:
            values["days"] = ""
        kept = {k: v for k, v in values.items() if v}
        return "?" + urlencode(kept) if kept else "?"


def _choice(request: Request, name: str, allowed: tuple[str, ...], default: str = "") -> str:
    value = request.query_params.get(name, "") or default
    if value and value not in allowed:
        raise Refused(400, f"{name}={value[:30]!r}: expected one of {', '.join(allowed)}")
    return value


def filters_of(request: Request, sites: tuple[str, ...], kinds: tuple[str, ...]) -> Filters:
    severities = tuple(s.value for s in reversed(Severity))
    site = request.query_params.get("site", "")
    if site and site not in sites:
        # The same answer for a site that does not exist and one not yours.
        raise Refused(404, f"No site {site[:40]!r} among your sites.")
    return Filters(
        severity=_choice(request, "severity", severities),
        state=_choice(request, "state", STATES),
        site=site,
        kind=_choice(request, "kind", kinds),
        days=_choice(request, "days", DAYS, DEFAULT_DAYS),
    )


def _in_state(row: views.AlertRow, state: str) -> bool:
    return {
        "": True,
        "open": row.live,
        "resolved": not row.live,
        "unacknowledged": row.live and row.ack is None and not row.silenced,
        "silenced": bool(row.silenced),
    }[state]


def _rows(console: Console, sites: tuple[str, ...], now_ms: int) -> list[views.AlertRow]:
    rows: list[views.AlertRow] = []
    acks = console.book.acknowledgements(sites)  # one query for the page, not one a row
    for sid in sites:
        rows += views.all_alerts(console.sites[sid], console.store, console.book, now_ms, acks)
    return rows


async def alert_list(request: Request) -> Response:
    user = page_user(request)
    console = console_of(request)
    sites = tuple(
        sid for sid in console.sites if sid in user.roles and user.may(sid, Permission.READ)
    )
    now = console.now_ms()
    every = _rows(console, sites, now)
    kinds = tuple(sorted({r.kind for r in every}))
    f = filters_of(request, sites, kinds)
    since = None if f.days == "all" else now - int(f.days) * MS_PER_DAY

    def wanted(row: views.AlertRow, *, severity: bool = True) -> bool:
        return (
            (not f.site or row.site == f.site)
            and (not f.kind or row.kind == f.kind)
            and (since is None or row.live or row.opened_ms >= since or _ended_after(row, since))
            and _in_state(row, f.state)
            and (not severity or not f.severity or row.severity == f.severity)
        )

    shown = [r for r in every if wanted(r)]
    shown.sort(key=lambda r: (not r.live, -r.opened_ms))
    by_severity = Counter(r.severity for r in every if wanted(r, severity=False))
    context = {
        "rows": shown,
        "filters": f,
        "sites": sites,
        "kinds": [(k, views.kind_label(k)) for k in kinds],
        "severities": [s.value for s in reversed(Severity)],
        "states": STATES,
        "days": DAYS,
        "severity_counts": [(s.value, by_severity[s.value]) for s in reversed(Severity)],
        "open_count": sum(r.live for r in shown),
        "unacked_count": sum(_in_state(r, "unacknowledged") for r in shown),
        "silenced_count": sum(bool(r.silenced) for r in shown),
    }
    return render(request, "alerts.html", context, user=user)


def _ended_after(row: views.AlertRow, since: int) -> bool:
    """A resolved episode that lasted into the window."""
    return row.resolved_ms is not None and row.resolved_ms >= since
