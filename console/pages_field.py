"""The field desk: an inspection as a checklist on the inspector's phone.

``GET /sites/{site}/field`` shows a checklist generated from the site's
practices (siltwatch/practices.py) and areas; each practice gets installed /
functioning / needs maintenance / deviates from the plan, a note and photos
from the phone's camera; each area its phase of grading and its cover, type
and extent (Lake Lure 96.05(B)(17)(a); Lake George §148-10 A). The
inspector's name, affiliation, address and telephone are required where the
pack's ``inspection.record_fields`` lists them (96.05(B)(17)(b)).

``POST`` stores it, all or nothing, in this order:

1. the idempotency key (a hidden field; the phone's offline queue,
   console/static/field.js, sends the same key again until it hears back): a
   key already stored answers with the record stored under it;
2. every photo is checked (console/photos.py); one bad photo refuses the whole
   submission and nothing is stored;
3. the inspection goes to the engine as the ``InspectionRecord`` it always was
   (it completes the open inspection duties);
4. the checklist, its photos, its signature (the account, the time, the
   SHA-256 of its canonical content: siltwatch/checklist.py) and one
   corrective action per finding that needs work are stored in one commit
   (ingest/store/fieldbook.py).

A signed record cannot change (``POST .../records/{id}/edit`` is refused); an
amendment is a new checklist whose ``amends`` names it. The record page offers
"Amend this record": the checklist form filled in with the signed record's
content (``GET .../field?amends={id}``), so the inspector corrects what was
wrong instead of typing the inspection again. An amendment opens corrective
actions only for findings the amended record did not already have: those
are open already.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError
from starlette.datastructures import FormData, UploadFile
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response

from analytics.calendar import SiteCalendar
from analytics.cited import Cited
from analytics.corrective_actions import due_days
from analytics.timeutil import to_ms
from console.auth import Permission, SessionUser
from console.fieldviews import action_view, record_view
from console.pages_duties import (
    FormProblem,
    _problems,
    _submit,
    local_instant,
)
from console.photos import MAX_PHOTOS, PhotoProblem, check_photo
from console.views import open_inspection_duties
from console.web import Refused, console_of, field_text, page_site, render, site_form
from ingest.store.fieldbook import CorrectiveAction, FieldRecord, Photo, SignedRecord
from siltwatch.checklist import (
    ACTION_DAYS_KEY,
    RECORD_FIELDS_KEY,
    AreaCheck,
    Checklist,
    CoverType,
    GradingPhase,
    PracticeCheck,
    canonical_bytes,
)
from siltwatch.config import SiteConfig
from siltwatch.detections import corrective_actions
from siltwatch.practices import Practice, site_practices
from siltwatch.rulepacks import site_rules
from siltwatch.schema import Duty, InspectionRecord, inspections_topic

FIELD_LABELS = {
    "inspector": "the inspector's name",
    "affiliation": "the inspector's affiliation",
    "address": "the inspector's address",
    "phone": "the inspector's telephone number",
}


def required_fields(site: SiteConfig) -> list[str]:
    rule = site_rules(site).get(RECORD_FIELDS_KEY)
    return [str(v) for v in rule.value] if rule is not None else []


def action_due(site: SiteConfig, found_ms: int) -> tuple[int, str]:
    """When a corrective action is due, and why, as the engine reckons it (the end of the
    N-th local day: analytics/corrective_actions.py): the pack's days where a law or permit
    sets them, else the site's ``[field_desk] corrective_action_days``."""
    rules = site_rules(site)
    days = due_days(site, Cited.of(rules.get(ACTION_DAYS_KEY)))
    return SiteCalendar.from_site(site, rules).end_of_calendar_days(found_ms, days.count), days.cite


def _local_input(ms: int, site: SiteConfig) -> str:
    """A time as a ``datetime-local`` input's value, in the site's zone."""
    return datetime.fromtimestamp(ms / 1000, site.site.zone).strftime("%Y-%m-%dT%H:%M")


def _amending(site: SiteConfig, request: Request) -> dict[str, Any]:
    """The record ``?amends=`` names, as the form's defaults: its time, inspector, practices,
    areas and notes (photos stay with it); {} without one, FormProblem for a wrong id."""
    rid = request.query_params.get("amends", "")
    if not rid:
        return {}
    stored = console_of(request).store.field_record(site.site.id, rid[:80])
    if stored is None:
        raise FormProblem(f"there is no record {rid[:80]} to amend")
    c = Checklist.model_validate_json(stored.body)
    return {
        "amending": record_view(stored, site),
        "pre": c,
        "pre_p": {p.practice: p for p in c.practices},
        "pre_a": {a.area: a for a in c.areas},
        "now_local": _local_input(stored.t, site),
    }


def _context(site: SiteConfig, request: Request, user: SessionUser) -> dict[str, Any]:
    console = console_of(request)
    sid, now = site.site.id, console.now_ms()
    records = console.store.field_records(sid)
    return {
        "site": site,
        "practices": site_practices(site),
        "grading": list(GradingPhase),
        "covers": list(CoverType),
        "required": required_fields(site),
        "labels": FIELD_LABELS,
        "duties": open_inspection_duties(site, console.store),
        "records": [record_view(r, site) for r in reversed(records)],
        "actions": [action_view(a, site, now) for a in console.store.corrective_actions(sid)],
        "may_record": user.may(sid, Permission.RECORD),
        "has_desk": console.desk is not None,
        "idem": secrets.token_urlsafe(18),
        "now_local": _local_input(now, site),
        "inspector": user.name,
        "account": user.name,
        "amending": None,
        "pre": None,
        "pre_p": {},
        "pre_a": {},
    }


async def field_page(request: Request) -> Response:
    user, site = page_site(request, Permission.READ)
    context = _context(site, request, user)
    context["message"] = request.query_params.get("done", "") and "Inspection recorded and signed."
    context["message_kind"] = "info"
    try:
        context.update(_amending(site, request))
    except FormProblem as exc:
        context.update(message=f"Cannot amend: {exc}", message_kind="error")
        return render(request, "field.html", context, user=user, status=404)
    return render(request, "field.html", context, user=user)


async def _photos(
    form: FormData, name: str, label: str, keep: bool, into: dict[str, Photo]
) -> list[str]:
    """Check the photos posted under ``name``; their ids (PhotoProblem for a bad one)."""
    files = [f for f in form.getlist(name) if isinstance(f, UploadFile) and f.filename]
    if len(files) > MAX_PHOTOS:
        raise PhotoProblem(f"{label}: at most {MAX_PHOTOS} photos")
    ids = []
    for n, upload in enumerate(files, 1):
        data = await upload.read()
        photo = check_photo(data, f"photo {n} of {label}", keep_metadata=keep)
        into[photo.photo_id] = photo
        ids.append(photo.photo_id)
    return ids


def _flag(form: FormData, name: str) -> bool:
    return form.get(name) == "yes"


async def _checklist(
    form: FormData, site: SiteConfig, user: SessionUser, now_ms: int, photos: dict[str, Photo]
) -> Checklist:
    keep = site.field_desk.keep_photo_location
    practices = []
    for p in site_practices(site):
        key = f"p.{p.id}"
        practices.append(
            PracticeCheck(
                practice=p.id,
                installed=_flag(form, f"{key}.installed"),
                functioning=_flag(form, f"{key}.functioning"),
                needs_maintenance=_flag(form, f"{key}.maintenance"),
                deviates=_flag(form, f"{key}.deviates"),
                note=field_text(form, f"{key}.note", 2000),
                photos=await _photos(form, f"{key}.photos", _name(p), keep, photos),
            )
        )
    areas = []
    for a in site.areas:
        key = f"a.{a.id}"
        extent = field_text(form, f"{key}.cover_pct", 4) or "0"
        if not extent.isdigit():
            raise FormProblem(f"cover of {a.name or a.id}: a percentage from 0 to 100")
        areas.append(
            AreaCheck(
                area=a.id,
                grading=GradingPhase(field_text(form, f"{key}.grading", 40) or "not_started"),
                cover=CoverType(field_text(form, f"{key}.cover", 40) or "none"),
                cover_pct=int(extent),
                note=field_text(form, f"{key}.note", 2000),
                photos=await _photos(form, f"{key}.photos", f"area {a.name or a.id}", keep, photos),
            )
        )
    return Checklist(
        site=site.site.id,
        time=local_instant(field_text(form, "time", 40), site, now_ms),
        inspector=field_text(form, "inspector", 200) or user.name,
        account=user.name,
        affiliation=field_text(form, "affiliation", 200),
        address=field_text(form, "address", 400),
        phone=field_text(form, "phone", 40),
        duty=field_text(form, "duty", 100) or None,
        practices=practices,
        areas=areas,
        notes=field_text(form, "notes", 2000),
        amends=field_text(form, "amends", 80) or None,
    )


def _name(p: Practice) -> str:
    return f"{p.type.replace('_', ' ')} {p.name}" if p.name != p.id else f"{p.type} {p.id}"


def engine_record(c: Checklist, signed: bool) -> InspectionRecord:
    """The inspection as the engine hears it: who, when, which duty, the record fields,
    and the findings that need work in words (completes duties; flags a missing field)."""
    work = [f"{p.practice}: {p.finding()}" for p in c.practices if p.needs_work]
    return InspectionRecord(
        site=c.site,
        time=c.time,
        inspector=c.inspector,
        duty=c.duty,
        notes=c.notes or None,
        affiliation=c.affiliation,
        address=c.address,
        phone=c.phone,
        signed=signed,
        deviations="; ".join(work)[:4000] or None,
        findings=[p.practice for p in c.practices if p.needs_work] or None,
        corrective_actions=(
            f"{len(work)} corrective action(s) opened in the field desk" if work else None
        ),
    )


async def submit_checklist(request: Request) -> Response:
    user, site, form = await site_form(request, Permission.RECORD)
    console = console_of(request)
    sid, now = site.site.id, console.now_ms()
    wants_json = "application/json" in request.headers.get("accept", "")
    idem = field_text(form, "idem", 80)
    try:
        if len(idem) < 16:
            raise FormProblem("this form has no submission key: reload the page")
        earlier = console.store.record_id_for_key(sid, idem)
        if earlier is None:
            record_id = await _store_checklist(request, form, site, user, idem, now)
        else:
            record_id = earlier
    except (FormProblem, PhotoProblem) as exc:
        console.book.audit(now, user.name, "field_inspection_refused", site=sid, detail=str(exc))
        if wants_json:
            return JSONResponse({"error": f"Not recorded: {exc}"}, status_code=400)
        context = _context(site, request, user)
        context.update(message=f"Not recorded: {exc}", message_kind="error")
        return render(request, "field.html", context, user=user, status=400)
    if wants_json:
        return JSONResponse({"record": record_id, "url": f"/sites/{sid}/field/records/{record_id}"})
    return RedirectResponse(f"/sites/{sid}/field/records/{record_id}", status_code=303)


async def _store_checklist(
    request: Request, form: FormData, site: SiteConfig, user: SessionUser, idem: str, now: int
) -> str:
    console = console_of(request)
    sid = site.site.id
    photos: dict[str, Photo] = {}
    try:
        checklist = await _checklist(form, site, user, now, photos)
    except ValidationError as exc:
        raise FormProblem(_problems(exc)) from None
    except ValueError as exc:  # a grading or cover value outside the lists
        raise FormProblem(f"choose from the lists ({exc})") from None
    duties = {d.id for d in open_inspection_duties(site, console.store)}
    if checklist.duty and checklist.duty not in duties:
        raise FormProblem(f"duty {checklist.duty!r} is not an open inspection duty of {sid}")
    known: set[str] = set()  # findings the amended record has (their actions are open)
    if checklist.amends:
        amended = console.store.field_record(sid, checklist.amends)
        if amended is None:
            raise FormProblem(f"there is no record {checklist.amends} to amend")
        before = Checklist.model_validate_json(amended.body)
        known = {p.practice for p in before.practices if p.needs_work}
    required = required_fields(site)
    missing = [FIELD_LABELS[f] for f in checklist.missing_fields(required)]
    if missing:
        raise FormProblem("the record must give " + ", ".join(missing) + " (96.05(B)(17)(b))")
    signed = form.get("sign") == "yes"
    if "signed" in required and not signed:
        raise FormProblem("the inspector must sign the record (96.05(B)(17)(b))")
    body = canonical_bytes(checklist)
    record_id = "fr-" + hashlib.sha256(f"{sid}\n{idem}".encode()).hexdigest()[:16]
    await _submit(console, inspections_topic(sid), engine_record(checklist, signed))
    t = to_ms(checklist.time)
    actions = []
    for p in checklist.practices:
        if p.needs_work and p.practice not in known:
            due, rule = action_due(site, t)
            actions.append(
                CorrectiveAction(
                    site=sid,
                    action_id=f"{record_id}-{p.practice}",
                    record_id=record_id,
                    practice=p.practice,
                    finding=p.finding(),
                    owner=field_text(form, f"p.{p.practice}.owner", 200) or checklist.inspector,
                    created_at=t,
                    due_at=due,
                    rule=rule,
                )
            )
    stored = FieldRecord(
        site=sid,
        record_id=record_id,
        t=t,
        account=user.name,
        body=body.decode(),
        sha256=hashlib.sha256(body).hexdigest(),
        signed_at=now if signed else None,
        amends=checklist.amends,
        received_at=now,
    )
    kept = console.store.add_field_record(stored, idem, list(photos.values()), actions)
    console.book.audit(
        now,
        user.name,
        "field_inspection",
        site=sid,
        detail=f"{kept} by {checklist.inspector}, {len(photos)} photo(s), {len(actions)} action(s)",
    )
    return kept


def engine_duty(duties: list[Duty], action: CorrectiveAction) -> Duty | None:
    """The engine's ``corrective_action`` duty for ``action``: same practice, same finding time."""
    for duty in duties:
        if (
            duty.kind == corrective_actions.ACTION.kind
            and duty.subject == action.practice
            and to_ms(duty.created_at) == action.created_at
        ):
            return duty
    return None


async def record_page(request: Request) -> Response:
    user, site = page_site(request, Permission.READ)
    console = console_of(request)
    stored = console.store.field_record(site.site.id, str(request.path_params["record_id"]))
    if stored is None:
        raise Refused(404, "There is no such inspection record.")
    context = {
        "site": site,
        "r": record_view(stored, site),
        "amended_by": _amendments(console.store.field_records(site.site.id), stored, site),
        "message": "",
        "message_kind": "info",
        "may_record": user.may(site.site.id, Permission.RECORD),
    }
    return render(request, "field_record.html", context, user=user)


def _amendments(
    records: list[FieldRecord], of: FieldRecord, site: SiteConfig
) -> list[dict[str, Any]]:
    """The records that amend ``of``, oldest first: its page links to what corrected it."""
    return [record_view(r, site) for r in records if r.amends == of.record_id]


async def edit_record(request: Request) -> Response:
    """Change the notes of an unsigned record; a signed one is refused (409)."""
    user, site, form = await site_form(request, Permission.RECORD)
    console = console_of(request)
    sid, rid = site.site.id, str(request.path_params["record_id"])
    stored = console.store.field_record(sid, rid)
    if stored is None:
        raise Refused(404, "There is no such inspection record.")
    changed = Checklist.model_validate_json(stored.body).model_copy(
        update={"notes": field_text(form, "notes", 2000)}
    )
    body = canonical_bytes(changed)
    try:
        console.store.replace_unsigned(
            sid, rid, body.decode(), hashlib.sha256(body).hexdigest(), None
        )
    except SignedRecord as exc:
        console.book.audit(console.now_ms(), user.name, "field_edit_refused", site=sid, detail=rid)
        context = {
            "site": site,
            "r": record_view(stored, site),
            "amended_by": _amendments(console.store.field_records(sid), stored, site),
            "message": f"Not changed: {exc}.",
            "message_kind": "error",
            "may_record": True,
        }
        return render(request, "field_record.html", context, user=user, status=409)
    return RedirectResponse(f"/sites/{sid}/field/records/{rid}", status_code=303)


async def photo(request: Request) -> Response:
    _, site = page_site(request, Permission.READ)
    found = console_of(request).store.field_photo(
        site.site.id, str(request.path_params["photo_id"])
    )
    if found is None:
        raise Refused(404, "There is no such photo.")
    return Response(found.data, media_type=found.content_type)


async def close_action(request: Request) -> Response:
    """Close a corrective action: what was done (a note) and a photo of it, both required."""
    user, site, form = await site_form(request, Permission.RECORD)
    console = console_of(request)
    sid, aid, now = site.site.id, str(request.path_params["action_id"]), console.now_ms()
    note = field_text(form, "note", 2000)
    try:
        if not note:
            raise FormProblem("say what was done to close the action")
        taken: dict[str, Photo] = {}
        ids = await _photos(form, "photo", "the repair", site.field_desk.keep_photo_location, taken)
        if not ids:
            raise FormProblem("add a photo of the repair")
        action = next(
            (a for a in console.store.corrective_actions(sid) if a.action_id == aid), None
        )
        if action is None or action.closed_at is not None:
            raise FormProblem(f"action {aid} is closed already or does not exist")
        duty = engine_duty(console.store.duties(sid), action)
        if duty is not None:  # the engine closes its duty (and the overdue alert) in event time
            closure = InspectionRecord(
                site=sid,
                time=datetime.fromtimestamp(now / 1000, UTC),
                inspector=user.name,
                duty=duty.id,
                notes=f"corrective action closed: {note}"[:4000],
            )
            await _submit(console, inspections_topic(sid), closure)
        if not console.store.close_action(sid, aid, now, user.name, note, taken[ids[0]]):
            raise FormProblem(f"action {aid} is closed already or does not exist")
    except (FormProblem, PhotoProblem) as exc:
        context = _context(site, request, user)
        context.update(message=f"Not closed: {exc}", message_kind="error")
        return render(request, "field.html", context, user=user, status=400)
    console.book.audit(now, user.name, "corrective_action_closed", site=sid, detail=aid)
    return RedirectResponse(f"/sites/{sid}/field#actions", status_code=303)
