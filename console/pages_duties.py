"""Duties (due, overdue, done), and the forms that record inspections and site-log entries.

An inspection typed here is the same ``InspectionRecord`` a field tablet
publishes, with the fields an inspection record must hold besides who and when
(Lake Lure 96.05(B)(17)(a),(b): the inspector's affiliation, address and
telephone, the signature, significant deviations from the plan, corrective
actions taken), handed to the field desk (console/desk.py) on the site's
inspections topic. A site-log entry is a ``SiteLogRecord`` on the site's log
topic. Neither is written to the store by the console: the desk validates and
stores it, and the engine judges it in event time, as it does a message. What
the desk refuses is shown to the person as the desk said it.

Times are typed in the site's local time (``<input type=datetime-local>``).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from console import views
from console.auth import Permission, SessionUser
from console.desk import DeskError
from console.web import Banner, Console, console_of, field_text, page_site, render, site_form
from siltwatch.config import SiteConfig
from siltwatch.schema import InspectionRecord, SiteLogRecord, inspections_topic, site_log_topic
from siltwatch.timefmt import local_time
from siltwatch.vocabulary import Milestone, SiteEvent, milestone_of, milestone_problem

R = TypeVar("R", bound=BaseModel)

FUTURE_SLACK_MS = 5 * 60_000
DONE = {
    "inspection": "Inspection recorded. Duties it completes are marked done once the engine has judged it.",
    "site_log": "Site-log entry recorded.",
}
INSPECTION_TEXT_FIELDS = (
    "inspector",
    "affiliation",
    "address",
    "phone",
    "deviations",
    "corrective_actions",
    "notes",
)


class FormProblem(Exception):
    """What is wrong with a submitted form, for the person who typed it."""


def _page(
    request: Request,
    user: SessionUser,
    site: SiteConfig,
    *,
    banner: Banner,
    typed: dict[str, str] | None = None,
    status: int = 200,
) -> Response:
    console = console_of(request)
    sid = site.site.id
    now = console.now_ms()
    local_now = datetime.fromtimestamp(now / 1000, site.site.zone).strftime("%Y-%m-%dT%H:%M")
    context: dict[str, Any] = {
        "site": site,
        "duties": views.duty_rows(site, console.store, now),
        "inspection_duties": [
            views.duty_row(d, site, now) for d in views.open_inspection_duties(site, console.store)
        ],
        "may_record": user.may(sid, Permission.RECORD),
        "has_desk": console.desk is not None,
        "events": [e.value for e in SiteEvent if e is not SiteEvent.CORRECTIVE_ACTION],
        "milestones": list(Milestone),
        "typed": {"time": local_now, "inspector": user.name, **(typed or {})},
    }
    return render(request, "duties.html", context, user=user, status=status, banner=banner)


async def duties_page(request: Request) -> Response:
    user, site = page_site(request, Permission.READ)
    return _page(request, user, site, banner=Banner.done(request, DONE))


def local_instant(text: str, site: SiteConfig, now_ms: int) -> datetime:
    """``YYYY-MM-DDTHH:MM`` in the site's local time, as an aware UTC time; not in the future."""
    try:
        naive = datetime.fromisoformat(text)
    except ValueError:
        raise FormProblem(
            f"time {text[:30]!r}: expected a date and time such as 2026-05-05T14:30"
        ) from None
    here = naive.replace(tzinfo=site.site.zone) if naive.tzinfo is None else naive
    if here.timestamp() * 1000 > now_ms + FUTURE_SLACK_MS:
        raise FormProblem("the time is in the future: record what was done, when it was done")
    return here.astimezone(UTC)


def _problems(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"])
        msg = str(err["msg"]).removeprefix("Value error, ")  # pydantic's words, not ours
        parts.append(f"{where}: {msg}" if where else msg)
    return "; ".join(parts)


async def _submit(console: Console, topic: str, record: BaseModel) -> None:
    """Hand the record to the desk in a worker thread: a desk may wait seconds (the live
    service's lock, or a broker's PUBACK for ``siltwatch console``), and the event loop
    must go on answering other pages and /healthz meanwhile."""
    if console.desk is None:
        raise FormProblem("this console has no field desk: nothing can be recorded here")
    payload = record.model_dump_json(exclude_none=True).encode()
    try:
        await run_in_threadpool(console.desk.submit, topic, payload)
    except DeskError as exc:
        raise FormProblem(str(exc)) from None


def inspection_record(
    form: FormData, site: SiteConfig, now_ms: int, duties: set[str]
) -> InspectionRecord:
    """The InspectionRecord the form describes (FormProblem for what is wrong)."""
    duty = field_text(form, "duty", 100)
    if duty and duty not in duties:
        raise FormProblem(f"duty {duty!r} is not an open inspection duty of {site.site.id}")
    fields = {name: field_text(form, name) or None for name in INSPECTION_TEXT_FIELDS}
    try:
        return InspectionRecord(
            site=site.site.id,
            time=local_instant(field_text(form, "time", 40), site, now_ms),
            duty=duty or None,
            signed=form.get("signed") == "yes",
            **fields,
        )
    except ValidationError as exc:
        raise FormProblem(_problems(exc)) from None


async def _record(
    request: Request,
    kind: str,
    topic: Callable[[str], str],
    build: Callable[[Console, FormData, SiteConfig, SessionUser, int], R],
    describe: Callable[[R, SiteConfig], str],
    typed_prefix: str = "",
) -> Response:
    """Build a record from the posted form and hand it to the desk; say what was refused.

    ``kind`` names the audit entries (``kind`` and ``<kind>_refused``) and the
    ``done`` message; what was typed comes back under ``typed_prefix`` on a refusal.
    """
    user, site, form = await site_form(request, Permission.RECORD)
    console = console_of(request)
    sid, now = site.site.id, console.now_ms()
    try:
        record = build(console, form, site, user, now)
        await _submit(console, topic(sid), record)
    except FormProblem as exc:
        console.book.audit(now, user.name, f"{kind}_refused", site=sid, detail=str(exc))
        typed = {
            f"{typed_prefix}{k}": v for k, v in form.items() if isinstance(v, str) and k != "csrf"
        }
        return _page(
            request,
            user,
            site,
            banner=Banner.error(f"Not recorded: {exc}"),
            typed=typed,
            status=400,
        )
    console.book.audit(now, user.name, kind, site=sid, detail=describe(record, site))
    return RedirectResponse(f"/sites/{sid}/duties?done={kind}", status_code=303)


def _inspection_from_form(
    console: Console, form: FormData, site: SiteConfig, _user: SessionUser, now_ms: int
) -> InspectionRecord:
    open_ids = {d.id for d in views.open_inspection_duties(site, console.store)}
    return inspection_record(form, site, now_ms, open_ids)


async def record_inspection(request: Request) -> Response:
    return await _record(
        request,
        "inspection",
        inspections_topic,
        _inspection_from_form,
        # The audit log is read by people: the site's local time, not UTC.
        lambda r, site: (
            f"{r.inspector} at {local_time(r.time, site.site.zone)} duty {r.duty or 'all open'}"
        ),
    )


def site_log_record(
    form: FormData, site: SiteConfig, user: SessionUser, now_ms: int
) -> SiteLogRecord:
    event = field_text(form, "event", 40)
    if event not in {e.value for e in SiteEvent}:
        raise FormProblem(f"event {event[:40]!r}: choose one of the listed events")
    area = field_text(form, "area", 64)
    areas = [a.id for a in site.areas]
    if area and area not in areas:
        raise FormProblem(
            f"area {area!r} is not an area of {site.site.id} ({', '.join(areas) or 'none'})"
        )
    detail = field_text(form, "detail", 2000) or None
    if event in (SiteEvent.MILESTONE, SiteEvent.NOTICE):  # chosen from the list (or typed)
        detail = field_text(form, "milestone", 60) or detail
        milestone = milestone_of(detail or "")
        if milestone is None:
            raise FormProblem(f"detail: the {event} {milestone_problem(detail)}")
        detail = milestone.value
    try:
        return SiteLogRecord(
            site=site.site.id,
            time=local_instant(field_text(form, "time", 40), site, now_ms),
            event=SiteEvent(event),
            area=area or None,
            by=user.name,
            detail=detail,
        )
    except ValidationError as exc:
        raise FormProblem(_problems(exc)) from None


async def record_site_log(request: Request) -> Response:
    return await _record(
        request,
        "site_log",
        site_log_topic,
        lambda _console, form, site, user, now: site_log_record(form, site, user, now),
        lambda r, _site: " ".join(p for p in (r.event, r.area, r.detail) if p),
        typed_prefix="log_",
    )
