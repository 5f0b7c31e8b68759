"""The field desk over HTTP: the checklist, its photos, signature, corrective actions.

Against the real app over a real store of the Lake Lure week, a SQLite file and a
PostgreSQL database: Lake Lure 96.05(B)(17)(a),(b)
and Lake George §148-10 A as the record the inspector signs.
"""

from __future__ import annotations

import html
import io
import json
import secrets
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path

import pytest
from PIL import Image
from starlette.testclient import TestClient

from analytics.timeutil import to_ms
from console.photos import MAX_PHOTO_BYTES
from siltwatch.checklist import Checklist, content_hash
from siltwatch.detections import alert_spec
from tests.console.app_world import INSPECTOR, World, csrf_of
from tests.console.field_world import LURE_ID, checklist_form, gps_exif, jpeg, lure_world

FIELD = f"/sites/{LURE_ID}/field"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.integration)])
def lure(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[World]:
    """The Lake Lure week in a SQLite file, or in a PostgreSQL database of the session's
    server (tests/servers.py): the field desk's tables and queries on both."""
    if request.param == "sqlite":
        yield lure_world(tmp_path)
        return
    server = request.getfixturevalue("postgres")
    name = f"siltwatch_field_{secrets.token_hex(4)}"
    world = lure_world(tmp_path, server.create_database(name, icu_locale="en-US"))
    try:
        yield world
    finally:
        world.console.close()
        server.drop_database(name)


def _post(world: World, form: dict[str, str], files: list[tuple[str, tuple[str, bytes, str]]]):  # type: ignore[no-untyped-def]
    client = world.login(INSPECTOR)
    page = client.get(FIELD)
    assert page.status_code == 200, page.text
    form = {**form, "csrf": csrf_of(page.text)}
    return client, client.post(FIELD, data=form, files=files)


def _stored(world: World) -> tuple[int, int, int]:
    store = world.console.store
    records = store.field_records(LURE_ID)
    photos = sum(len(store.field_photo_ids(LURE_ID, r.record_id)) for r in records)
    return len(records), photos, len(store.corrective_actions(LURE_ID))


def test_a_checklist_with_two_photos_is_stored_signed_and_intact(lure: World) -> None:
    form = checklist_form("key-" + "a" * 20, "", **{"p.sf-lot1.maintenance": "yes",
                          "p.sf-lot1.note": "undercut at the low point"})  # fmt: skip
    files = [
        ("p.sf-lot1.photos", ("../../etc/passwd.jpg", jpeg(color="brown"), "image/jpeg")),
        ("a.drive.photos", ("IMG_0001.JPG", jpeg(color="green", exif=gps_exif()), "image/jpeg")),
    ]
    client, response = _post(lure, form, files)
    assert response.status_code == 303, response.text
    (record,) = lure.console.store.field_records(LURE_ID)
    assert response.headers["location"] == f"{FIELD}/records/{record.record_id}"
    checklist = Checklist.model_validate_json(record.body)
    assert [p.practice for p in checklist.practices] == [
        "sf-lot1", "ce-main", "ip-cove", "basin-s", "trench-1"]  # fmt: skip
    assert record.signed_at == lure.console.now_ms() and record.account == INSPECTOR
    assert record.sha256 == content_hash(checklist) and record.intact
    ids = checklist.photo_ids()
    assert len(ids) == 2 and lure.console.store.field_photo_ids(LURE_ID, record.record_id) == ids
    # The GPS position and the camera serial are gone; the pixels are there.
    kept = lure.console.store.field_photo(LURE_ID, ids[1])
    assert kept is not None and kept.content_type == "image/jpeg"
    assert b"SERIAL-12345" not in kept.data and b"GPS" not in kept.data
    with Image.open(io.BytesIO(kept.data)) as image:
        assert image.size == (64, 48) and not image.getexif()
    # The engine heard the inspection; the finding became a corrective action.
    sent = json.loads(lure.desk.submitted[0][1])
    assert sent["signed"] is True and "sf-lot1: needs maintenance" in sent["deviations"]
    (action,) = lure.console.store.corrective_actions(LURE_ID)
    assert (action.practice, action.owner) == ("sf-lot1", "Quinn Hale")
    assert action.due_at == 1779249600000  # the end of 2026-05-19 EDT: the site's 7 days
    # The record page shows both photos and the signature block.
    page = client.get(response.headers["location"])
    assert page.text.count('class="field-photo"') == 2
    assert f"Signed by <strong>{INSPECTOR}</strong>" in page.text and "intact" in page.text
    served = client.get(f"{FIELD}/photos/{ids[0]}")
    assert served.status_code == 200 and served.headers["content-type"] == "image/jpeg"


def test_the_same_submission_key_twice_makes_one_record(lure: World) -> None:
    form = checklist_form("key-" + "b" * 20, "")
    client, first = _post(lure, form, [])
    again = client.post(FIELD, data={**form, "csrf": csrf_of(client.get(FIELD).text)},
                        headers={"accept": "application/json"})  # fmt: skip
    assert first.status_code == 303 and again.status_code == 200
    (record,) = lure.console.store.field_records(LURE_ID)
    assert again.json()["record"] == record.record_id
    assert len(lure.desk.submitted) == 1


def test_a_signed_record_is_refused_an_edit(lure: World) -> None:
    client, response = _post(lure, checklist_form("key-" + "c" * 20, ""), [])
    where = response.headers["location"]
    page = client.get(where)
    edit = client.post(where + "/edit", data={"csrf": csrf_of(page.text), "notes": "changed"})
    assert edit.status_code == 409
    assert "a signed record cannot change: record an amendment instead" in html.unescape(edit.text)
    (record,) = lure.console.store.field_records(LURE_ID)
    assert "changed" not in record.body and record.intact


def test_lake_lure_requires_the_inspector_fields_and_the_signature(lure: World) -> None:
    form = checklist_form("key-" + "d" * 20, "", phone="", affiliation="")
    _, response = _post(lure, form, [])
    assert response.status_code == 400
    assert ("the record must give the inspector's affiliation, the inspector's telephone "
            "number (96.05(B)(17)(b))") in html.unescape(response.text)  # fmt: skip
    unsigned = checklist_form("key-" + "e" * 20, "")
    del unsigned["sign"]
    _, response = _post(lure, unsigned, [])
    assert "the inspector must sign the record" in html.unescape(response.text)
    assert _stored(lure) == (0, 0, 0) and lure.desk.submitted == []


def _bomb() -> bytes:
    """A PNG of 20,000 x 20,000 pixels (400 million) that compresses to a few hundred kB."""
    out = io.BytesIO()
    Image.new("1", (20_000, 20_000)).save(out, "PNG", optimize=True)
    return out.getvalue()


@pytest.mark.parametrize(
    ("name", "data", "says"),
    [
        ("huge.jpg", b"\xff\xd8\xff\xe0" + b"\0" * (50 * 1024 * 1024), "is 50.0 MB; a photo may be at most 12 MB"),
        ("notes.jpg", b"#!/bin/sh\nrm -rf /\n" * 50, "is not a photo (JPEG, PNG or WebP), whatever its name says"),
        ("bomb.png", None, "claims more than 50 million pixels; refused"),
        ("../../../../tmp/evil.jpg", b"\xff\xd8\xff\xe0 truncated", "is not a readable JPEG image"),
    ],
)  # fmt: skip
def test_hostile_uploads_are_refused_and_nothing_is_stored(
    lure: World, name: str, data: bytes | None, says: str, tmp_path: Path
) -> None:
    body = _bomb() if data is None else data
    assert len(body) < MAX_PHOTO_BYTES or name == "huge.jpg"
    files = [
        ("p.ce-main.photos", ("fine.jpg", jpeg(), "image/jpeg")),
        ("p.ce-main.photos", (name, body, "image/jpeg")),
    ]
    _, response = _post(lure, checklist_form("key-" + "f" * 20, ""), files)
    assert response.status_code == 400
    assert (
        f"Not recorded: photo 2 of construction entrance Gravel construction entrance {says}"
        in html.unescape(response.text)
    )
    assert _stored(lure) == (0, 0, 0) and lure.desk.submitted == []
    assert (
        not list(Path(str(lure.db)).parent.glob("**/evil.jpg"))
        and not Path("/tmp/evil.jpg").exists()
    )


def _close_overdue(world: World, action_id: str, note: str) -> TestClient:
    """Log in again (days have passed), see the action overdue, close it with a photo."""
    client = world.login(INSPECTOR)
    page = client.get(FIELD)
    assert "Overdue." in page.text
    closing = client.post(
        f"{FIELD}/actions/{action_id}/close",
        data={"csrf": csrf_of(page.text), "note": note},
        files=[("photo", ("after.jpg", jpeg(color="gray"), "image/jpeg"))],
    )
    assert closing.status_code == 303, closing.text
    return client


def test_a_corrective_action_goes_overdue_and_closes_with_a_photo(lure: World) -> None:
    form = checklist_form(
        "key-" + "g" * 20, "", **{"p.ip-cove.functioning": "", "p.ip-cove.owner": "Dana Ruiz"}
    )
    client, _ = _post(lure, form, [])
    (action,) = lure.console.store.corrective_actions(LURE_ID)
    assert action.finding == "not functioning" and action.owner == "Dana Ruiz"
    lure.clock.t += 8 * 86_400  # past the 7 days (the session has ended meanwhile)
    client = _close_overdue(lure, action.action_id, "sediment cleared, fabric replaced")
    (closed,) = lure.console.store.corrective_actions(LURE_ID)
    assert closed.closed_at == lure.console.now_ms() and closed.closure_photo
    assert lure.console.store.field_photo(LURE_ID, closed.closure_photo) is not None
    assert "Closed" in client.get(FIELD).text


def test_a_finding_is_an_engine_duty_that_goes_overdue_alerts_and_closes(tmp_path: Path) -> None:
    """With the real ingest service behind the desk: the checklist's finding opens a
    corrective_action duty; past its due date the engine raises corrective_action_overdue
    (stored as every alert is, for routing); the closure (note + photo) completes the duty
    and resolves the alert."""
    world = lure_world(tmp_path, engine=True)
    service = world.desk.service  # type: ignore[attr-defined]
    form = checklist_form("key-" + "h" * 20, "", **{"p.ip-cove.functioning": ""})
    _, response = _post(world, form, [])
    assert response.status_code == 303, response.text
    store = world.console.store
    (duty,) = [d for d in store.duties(LURE_ID) if d.kind == "corrective_action"]
    (action,) = store.corrective_actions(LURE_ID)
    assert (duty.subject, duty.reason) == ("ip-cove", "finding")
    assert int(duty.due_at.timestamp() * 1000) == action.due_at  # the console and the engine agree
    assert "site default, 7 days" in duty.rule
    assert not [a for a in store.alerts(LURE_ID) if a.kind == "corrective_action_overdue"]

    world.clock.t += 8 * 86_400  # past the end of the 7th local day
    service.tick(int(world.clock() * 1000))
    (overdue,) = [a for a in store.alerts(LURE_ID) if a.kind == "corrective_action_overdue"]
    assert overdue.subject == duty.id and overdue.resolved_at is None
    spec = alert_spec(overdue.kind)
    assert spec is not None and spec.regulatory is False  # the site's people: no legal deadline
    assert "Inspection at Lake Lure" not in overdue.message and "ip-cove" in overdue.message

    _close_overdue(world, action.action_id, "inlet filter bag replaced")
    # The engine judges the closure once its clock has passed it by the allowed lateness.
    service.tick(int(world.clock() * 1000) + 16 * 60_000)
    (done,) = [d for d in store.duties(LURE_ID) if d.kind == "corrective_action"]
    assert done.completed_at is not None
    (resolved,) = [a for a in store.alerts(LURE_ID) if a.kind == "corrective_action_overdue"]
    assert resolved.resolved_at is not None and "Corrective action closed" in resolved.message
    # The closure is not an inspection: it does not flag inspection_record_incomplete.
    assert not [a for a in store.alerts(LURE_ID) if a.kind == "inspection_record_incomplete"
                and a.resolved_at is None and to_ms(a.opened_at) >= action.created_at]  # fmt: skip


class _FormFields(HTMLParser):
    """What a browser would submit from the page's checklist form, as it stands."""

    def __init__(self) -> None:
        super().__init__()
        self.fields: dict[str, str] = {}
        self._in_form = False
        self._select: str | None = None
        self._textarea: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "form":
            self._in_form = a.get("id") == "checklist-form"
        if not self._in_form:
            return
        name = a.get("name", "")
        if tag == "input" and a.get("type") not in ("file", "submit") and name:
            if a.get("type") != "checkbox" or "checked" in a:
                self.fields[name] = a.get("value", "")
        elif tag == "select":
            self._select = name
        elif (
            tag == "option"
            and self._select
            and ("selected" in a or self._select not in self.fields)
        ):
            self.fields[self._select] = a.get("value", "")
        elif tag == "textarea":
            self._textarea = name
            self.fields[name] = ""

    def handle_data(self, data: str) -> None:
        if self._textarea:
            self.fields[self._textarea] += data

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self._in_form = False
        elif tag == "select":
            self._select = None
        elif tag == "textarea":
            self._textarea = None


def _form_of(page: str) -> dict[str, str]:
    parser = _FormFields()
    parser.feed(page)
    return parser.fields


def test_a_signed_record_is_amended_from_its_page_with_its_content_filled_in(
    lure: World,
) -> None:
    """Lake Lure 96.05(B)(17)(b): the signed record stays; the amendment refers to it.
    The form comes filled in with the record, so submitting it unchanged records the same
    inspection, and a finding already open gets no second corrective action."""
    form = checklist_form("key-" + "g" * 20, "", **{"p.sf-lot1.maintenance": "yes",
                          "p.sf-lot1.note": "undercut at the low point", "notes": "wet"})  # fmt: skip
    client, response = _post(lure, form, [])
    first = response.headers["location"]
    record = client.get(first)
    assert 'id="amend-record"' in record.text and 'id="edit-record"' not in record.text
    (original,) = lure.console.store.field_records(LURE_ID)
    amend = client.get(f"{FIELD}?amends={original.record_id}")
    assert amend.status_code == 200 and 'id="amending"' in amend.text
    filled = _form_of(amend.text)
    assert filled["amends"] == original.record_id and filled["time"] == "2026-05-12T09:30"
    assert filled["p.sf-lot1.maintenance"] == "yes" and filled["notes"] == "wet"
    assert filled["p.sf-lot1.note"] == "undercut at the low point"
    assert filled["a.drive.cover"] == "erosion_blanket" and filled["a.lot-1.cover_pct"] == "80"
    # The inspector adds what the record missed: the entrance deviates from the plan.
    filled.update({"p.ce-main.deviates": "yes", "p.ce-main.note": "moved 10 m east", "sign": "yes"})
    again = client.post(FIELD, data=filled)
    assert again.status_code == 303, again.text
    first_again, amendment = lure.console.store.field_records(LURE_ID)
    assert first_again == original and amendment.amends == original.record_id
    before = Checklist.model_validate_json(original.body)
    after = Checklist.model_validate_json(amendment.body)
    assert after.model_copy(update={"amends": None, "practices": before.practices}) == before
    assert [p.practice for p in after.practices if p.needs_work] == ["sf-lot1", "ce-main"]
    # One action per finding: the fence's from the record, the entrance's from the amendment.
    actions = sorted(
        (a.practice, a.record_id) for a in lure.console.store.corrective_actions(LURE_ID)
    )
    assert actions == [("ce-main", amendment.record_id), ("sf-lot1", original.record_id)]
    assert f"/field/records/{amendment.record_id}" in client.get(first).text
    missing = client.get(f"{FIELD}?amends=fr-nosuchrecord")
    assert missing.status_code == 404 and "there is no record fr-nosuchrecord" in missing.text
