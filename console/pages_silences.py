"""Silences and maintenance windows of a site: list, create, end (``/sites/{site}/silences``).

A trap cleaned out on Tuesday morning or a probe sent for calibration should
not text the officer. The site's people (operators and qualified inspectors:
those who record the site's work) silence a station, a practice or a sensor
from now, or from a later start (a maintenance window), for a number of
hours, with a reason; it can be ended early. Each is stored in the console's
book with an audit row (console/book.py), and what it covers is worked out
once from the site file (console/silences.py). Alerts keep being raised,
stored and shown (marked "silenced"); the delivery side holds them from
people (alerts/silences.py).

Regulatory duties and facts the town must hear of (a missed inspection or
stabilization deadline, a missing notice, a violation) cannot be silenced:
asking to silence such a kind is refused with the reason, and a silence of
every kind never holds them.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from alerts.silences import may_be_silenced
from console import views
from console.auth import Permission, SessionUser
from console.silences import MAX_DAYS, REASON_MAX, Scope, Silence, covered_subjects, targets
from console.web import (
    ROLE_LABELS,
    Banner,
    Refused,
    console_of,
    field_text,
    page_site,
    posted_form,
    render,
    when,
)
from siltwatch.config import SiteConfig
from siltwatch.detections import alert_kinds, alert_spec

MS_PER_H = 3_600_000
DONE = {
    "created": "Silence recorded. Alerts it covers are still raised and shown here, "
    "marked silenced, but nobody is texted or emailed about them until it ends.",
    "ended": "Silence ended: alerts it covered reach people again.",
}


def _may_silence(user: SessionUser, site: SiteConfig) -> bool:
    return user.may(site.site.id, Permission.RECORD)


def _silencer(request: Request) -> tuple[SessionUser, SiteConfig]:
    user, site = page_site(request, Permission.READ)
    if not _may_silence(user, site):
        role = ROLE_LABELS.get(user.roles[site.site.id], user.roles[site.site.id])
        raise Refused(
            403,
            f"As {role} on {site.site.id} you may not silence alerts: "
            "the site's operators and qualified inspectors plan its work.",
        )
    return user, site


def _kind_choices() -> list[tuple[str, str, bool]]:
    out = []
    for kind in alert_kinds():
        spec = alert_spec(kind)
        out.append((kind, spec.label if spec is not None else kind, may_be_silenced(kind)))
    return sorted(out, key=lambda k: k[1])


def _rows(site: SiteConfig, silences: list[Silence], now_ms: int) -> list[dict[str, Any]]:
    rows = []
    for s in silences:
        if s.ended_ms is not None and s.ended_ms < s.end_ms:
            state = "ended early" if s.ended_ms > s.start_ms else "cancelled"
        elif now_ms < s.start_ms:
            state = "planned"
        elif s.active(now_ms):
            state = "active"
        else:
            state = "over"
        rows.append(
            {
                "s": s,
                "state": state,
                "what": f"{s.scope} {s.target}",
                "kind": views.kind_label(s.kind) if s.kind else "every alert that may be silenced",
                "start": when(s.start_ms, site),
                "until": when(s.until_ms(), site),
                "ended_by": s.ended_by,
                "may_end": state in ("active", "planned"),
            }
        )
    return rows


def _page(
    request: Request,
    user: SessionUser,
    site: SiteConfig,
    banner: Banner,
    status: int = 200,
) -> Response:
    console = console_of(request)
    now = console.now_ms()
    context = {
        "site": site,
        "silences": _rows(site, console.book.silences(site.site.id), now),
        "targets": targets(site),
        "kinds": _kind_choices(),
        "may_silence": _may_silence(user, site),
        "reason_max": REASON_MAX,
        "max_hours": MAX_DAYS * 24,
    }
    return render(request, "silences.html", context, user=user, status=status, banner=banner)


async def silences_page(request: Request) -> Response:
    user, site = page_site(request, Permission.READ)
    return _page(request, user, site, Banner.done(request, DONE))


def _start_ms(text: str, site: SiteConfig, now_ms: int) -> int:
    if not text:
        return now_ms
    try:
        local = datetime.fromisoformat(text)
    except ValueError:
        raise Refused(400, f"start {text[:30]!r}: expected a date and time") from None
    if local.tzinfo is None:
        local = local.replace(tzinfo=site.site.zone)
    return max(now_ms, round(local.timestamp() * 1000))


def parse_silence(form: dict[str, str], site: SiteConfig, by: str, now_ms: int) -> Silence:
    """The silence a form asks for, or :class:`Refused` saying what to change."""
    scope_text, _, target = form.get("target", "").partition(":")
    try:
        scope = Scope(scope_text)
    except ValueError:
        raise Refused(400, "Choose the station, practice or sensor to silence.") from None
    subjects = covered_subjects(site, scope, target)
    if subjects is None:
        raise Refused(400, f"{site.site.id} has no {scope.value} {target[:40]!r}.")
    kind = form.get("kind", "")
    if kind:
        spec = alert_spec(kind)
        if spec is None:
            raise Refused(400, f"kind {kind[:40]!r}: expected one of {', '.join(alert_kinds())}")
        if not may_be_silenced(kind):
            raise Refused(
                400,
                f"“{spec.label}” cannot be silenced: it is a regulatory duty or a fact the "
                "town must hear of (the rule packs' deadlines, notices and violations), "
                "whatever work is under way. Record what was done instead.",
            )
    reason = form.get("reason", "").strip()
    if not reason:
        raise Refused(400, "Say why alerts are silenced (e.g. “trap cleaned out”).")
    try:
        hours = float(form.get("hours", ""))
    except ValueError:
        raise Refused(400, "hours: expected how long the silence lasts, in hours") from None
    if not 0 < hours <= MAX_DAYS * 24:
        raise Refused(400, f"hours must be more than 0 and at most {MAX_DAYS * 24}")
    start = _start_ms(form.get("start", ""), site, now_ms)
    return Silence(
        id=0,
        site=site.site.id,
        scope=scope.value,
        target=target,
        kind=kind,
        subjects=subjects,
        reason=reason[:REASON_MAX],
        by=by,
        created_ms=now_ms,
        start_ms=start,
        end_ms=start + round(hours * MS_PER_H),
    )


async def create_silence(request: Request) -> Response:
    user, site = _silencer(request)
    form = await posted_form(request, user, site=site.site.id)
    console = console_of(request)
    fields = {k: field_text(form, k, REASON_MAX) for k in ("target", "kind", "reason", "hours")}
    fields["start"] = field_text(form, "start", 40)
    try:
        silence = parse_silence(fields, site, user.name, console.now_ms())
    except Refused as exc:
        return _page(request, user, site, Banner.error(exc.message), exc.status)
    console.book.add_silence(silence)
    return RedirectResponse(f"/sites/{site.site.id}/silences?done=created", status_code=303)


async def end_silence(request: Request) -> Response:
    user, site = _silencer(request)
    await posted_form(request, user, site=site.site.id)
    console = console_of(request)
    try:
        ident = int(str(request.path_params["silence_id"]))
    except ValueError:
        raise Refused(404, "There is no such silence.") from None
    ended = console.book.end_silence(site.site.id, ident, user.name, console.now_ms())
    if ended is None:
        return _page(request, user, site, Banner.error("That silence has already ended."), 409)
    return RedirectResponse(f"/sites/{site.site.id}/silences?done=ended", status_code=303)
