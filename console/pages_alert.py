"""One alert episode: its timeline, evidence, citation and message; acknowledge, comment, act.

An acknowledgement is recorded once per episode (the first stands; the
delivery worker reads it through ``ConsoleBook.acknowledged`` and stops the
repeats and the escalation chain). A corrective action is a note in the book
*and* a site-log ``corrective_action`` entry handed to the field desk
(detail ``"<alert id>: <what was done>"``, siltwatch/schema.py SiteLogRecord),
so the engine and the inspector's report see it as they see one typed on a
field tablet (the alerts ask to "record the corrective action in the site log").

The page also shows who was told and when (the delivery audit:
console/deliveries.py), the silence that held it from people if any, and the
episode's plot (console/charts/plots.py, the same chart as the email's).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from markupsafe import Markup
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from console import views
from console.auth import Permission, SessionUser
from console.charts.draw import EPISODE_WIDE, chart_html
from console.charts.email import alert_chart
from console.deliveries import delivery_lines
from console.desk import DeskError
from console.notes import NoteKind
from console.web import (
    Banner,
    Console,
    Refused,
    console_of,
    field_text,
    page_site,
    render,
    site_form,
)
from siltwatch.config import SiteConfig
from siltwatch.schema import SITE_LOG_DETAIL_MAX, Alert, SiteLogRecord, site_log_topic
from siltwatch.vocabulary import SiteEvent

NOTE_MAX = 2000
DONE = {
    "acknowledged": "Acknowledged. Repeats and escalation of this alert stop.",
    "already": "This alert was already acknowledged; the first acknowledgement stands.",
    "comment": "Comment saved.",
    "action": "Corrective action recorded and entered in the site log.",
}


def _alert(request: Request, site: SiteConfig) -> Alert:
    alert_id = str(request.path_params["alert_id"])
    stored = console_of(request).store.stored_alert(site.site.id, alert_id)
    if stored is None or stored.withdrawn:
        raise Refused(404, f"No alert {alert_id!r} at {site.site.id}.")
    return stored.alert


def _page(
    request: Request,
    user: SessionUser,
    site: SiteConfig,
    alert: Alert,
    banner: Banner,
) -> Response:
    console = console_of(request)
    sid = site.site.id
    context: dict[str, Any] = {
        "site": site,
        "alert": alert,
        "row": views.alert_row(alert, site, console.book, now_ms=console.now_ms()),
        "deliveries": delivery_lines(console.outboxes.get(sid), site, alert.id),
        "chart": _episode_chart(site, console, alert),
        "evidence": views.evidence_view(alert, site),
        "timeline": views.timeline(alert, site, console.book),
        "may_act": user.may(sid, Permission.ACKNOWLEDGE),
        "note_max": NOTE_MAX,
    }
    return render(request, "alert.html", context, user=user, banner=banner)


def _episode_chart(site: SiteConfig, console: Console, alert: Alert) -> Markup | None:
    """The episode's plot, the email's chart (console/charts/email.py: six hours before it
    opened to an hour after its last change, the episode shaded), if any: a wide and a
    phone-width drawing, as on the site page, so its text stays readable."""
    chart = alert_chart(site, console.store, alert)
    if chart is None or not chart.has_data():
        return None
    return Markup(chart_html(chart, EPISODE_WIDE))


async def alert_page(request: Request) -> Response:
    user, site = page_site(request, Permission.READ)
    alert = _alert(request, site)
    return _page(request, user, site, alert, Banner.done(request, DONE))


def _back(site: SiteConfig, alert: Alert, done: str) -> Response:
    return RedirectResponse(f"/sites/{site.site.id}/alerts/{alert.id}?done={done}", status_code=303)


async def acknowledge(request: Request) -> Response:
    user, site, _ = await site_form(request, Permission.ACKNOWLEDGE)
    alert = _alert(request, site)
    console = console_of(request)
    now = console.now_ms()
    _ack, new = console.book.acknowledge(site.site.id, alert.id, user.name, now, "console")
    if new:
        console.book.audit(
            now,
            user.name,
            "acknowledged",
            site=site.site.id,
            alert_id=alert.id,
            detail="via console",
        )
    return _back(site, alert, "acknowledged" if new else "already")


async def _posted_note(request: Request) -> tuple[SessionUser, SiteConfig, Alert, str]:
    """Who posts a note on which alert, and its text (checked for rights and CSRF)."""
    user, site, form = await site_form(request, Permission.ACKNOWLEDGE)
    alert = _alert(request, site)
    return user, site, alert, field_text(form, "text", NOTE_MAX)


async def comment(request: Request) -> Response:
    user, site, alert, text = await _posted_note(request)
    if not text:
        return _page(
            request, user, site, alert, Banner.error("Write the comment before saving it.")
        )
    console = console_of(request)
    now = console.now_ms()
    console.book.add_note(site.site.id, alert.id, NoteKind.COMMENT, user.name, now, text, "console")
    console.book.audit(now, user.name, "comment", site=site.site.id, alert_id=alert.id, detail=text)
    return _back(site, alert, "comment")


def action_limit(alert: Alert) -> int:
    """How long the text may be: the site-log detail holds ``"<alert id>: "`` first."""
    return min(NOTE_MAX, SITE_LOG_DETAIL_MAX - len(alert.id) - 2)


async def corrective_action(request: Request) -> Response:
    user, site, alert, text = await _posted_note(request)
    if not text:
        return _page(
            request, user, site, alert, Banner.error("Say what was done before recording it.")
        )
    if len(text) > action_limit(alert):
        return _page(
            request, user, site, alert,
            Banner.error(
                f"Keep the corrective action under {action_limit(alert)} characters "
                "(it goes into the site log)."
            ),
        )  # fmt: skip
    console = console_of(request)
    sid, now = site.site.id, console.now_ms()
    console.book.add_note(
        sid, alert.id, NoteKind.CORRECTIVE_ACTION, user.name, now, text, "console"
    )
    console.book.audit(
        now, user.name, "corrective_action", site=sid, alert_id=alert.id, detail=text
    )
    problem = await _to_site_log(request, site, alert, user, text, now)
    if problem:
        console.book.audit(
            now, user.name, "site_log_refused", site=sid, alert_id=alert.id, detail=problem
        )
        return _page(
            request, user, site, alert, Banner.error(f"Corrective action saved here, but {problem}")
        )
    return _back(site, alert, "action")


async def _to_site_log(
    request: Request, site: SiteConfig, alert: Alert, user: SessionUser, text: str, now_ms: int
) -> str:
    """Hand the action to the field desk as a site-log entry; '' or why it was not taken.

    The desk runs in a worker thread (see console/pages_duties.py ``_submit``)."""
    desk = console_of(request).desk
    if desk is None:
        return "this console has no field desk, so it is not in the site log."
    try:
        record = SiteLogRecord(
            site=site.site.id,
            time=datetime.fromtimestamp(now_ms / 1000, UTC),
            event=SiteEvent.CORRECTIVE_ACTION,
            by=user.name,
            detail=f"{alert.id}: {text}",
        )
        payload = record.model_dump_json(exclude_none=True).encode()
        await run_in_threadpool(desk.submit, site_log_topic(site.site.id), payload)
    except ValidationError as exc:
        return "the site log refused it: " + "; ".join(e["msg"] for e in exc.errors())
    except DeskError as exc:
        return f"the site log did not take it: {exc}"
    return ""
