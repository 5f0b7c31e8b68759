"""The field desk's records to hand over: checklists, their photos, signatures, corrective actions.

``siltwatch records`` and ``siltwatch export`` write them next to the other
records (ingest/outputs/records.py), for the same range of local dates:

- ``field-inspections.csv``: one line a checklist, with who signed it, when,
  the SHA-256 of its content and whether the stored content still matches it;
- ``field-findings.csv``: one line a practice or area of each checklist
  (Lake Lure 96.05(B)(17)(a); Lake George §148-10 A), naming its photos' files;
- ``corrective-actions.csv``: every action opened by a checklist of the range,
  with its owner, due date, where the due date comes from, and its closure;
- ``field-records/<record id>.json``: the content exactly as it was signed, so
  anyone can hash it again (``sha256sum``) and compare;
- ``photos/<sha256>.<jpg|png|webp>``: every photo, named by its own hash (never
  by the name the phone gave it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ingest.outputs.records import write_csv
from ingest.store.fieldbook import FieldRecord
from ingest.store.queries import SqlStore
from siltwatch.checklist import Checklist
from siltwatch.config import SiteConfig
from siltwatch.timefmt import local_time

EXTENSIONS = {"image/jpeg": "jpg", "image/png": "png", "image/webp": "webp"}
RECORD_COLUMNS = (
    "record", "time", "inspector", "affiliation", "address", "phone", "account",
    "signed_at", "sha256", "intact", "amends", "practices", "areas", "photos", "notes",
)  # fmt: skip
FINDING_COLUMNS = (
    "record", "item", "kind", "installed", "functioning", "needs_maintenance", "deviates",
    "grading", "cover", "cover_pct", "note", "photos",
)  # fmt: skip
ACTION_COLUMNS = (
    "action", "record", "practice", "finding", "owner", "opened", "due", "due_rule",
    "closed", "closed_by", "closure_note", "closure_photo",
)  # fmt: skip


@dataclass(frozen=True)
class FieldWritten:
    records: int
    photos: int
    actions: int


def export_field_records(
    store: SqlStore, site: SiteConfig, out: Path, start_ms: int | None, end_ms: int | None
) -> FieldWritten:
    """Write the field desk's records of [``start_ms``, ``end_ms``) into ``out``."""
    sid, zone = site.site.id, site.site.zone
    records = store.field_records(sid, start_ms, end_ms)
    ids = {r.record_id for r in records}
    actions = [a for a in store.corrective_actions(sid) if a.record_id in ids]
    (out / "field-records").mkdir(parents=True, exist_ok=True)
    (out / "photos").mkdir(parents=True, exist_ok=True)
    names: dict[str, str] = {}

    def photo_file(photo_id: str) -> str:
        if photo_id not in names:
            photo = store.field_photo(sid, photo_id)
            if photo is None:
                return ""
            names[photo_id] = f"photos/{photo_id}.{EXTENSIONS.get(photo.content_type, 'bin')}"
            (out / names[photo_id]).write_bytes(photo.data)
        return names[photo_id]

    record_rows: list[list[object]] = []
    finding_rows: list[list[object]] = []
    for r in records:
        c = Checklist.model_validate_json(r.body)
        (out / "field-records" / f"{r.record_id}.json").write_text(r.body, encoding="utf-8")
        record_rows.append(_record_row(r, c, lambda t: local_time(t, zone)))
        for p in c.practices:
            finding_rows.append(
                [r.record_id, p.practice, "practice", _yes(p.installed), _yes(p.functioning),
                 _yes(p.needs_maintenance), _yes(p.deviates), "", "", "", p.note,
                 " ".join(photo_file(x) for x in p.photos)]
            )  # fmt: skip
        for a in c.areas:
            finding_rows.append(
                [r.record_id, a.area, "area", "", "", "", "", a.grading.value, a.cover.value,
                 a.cover_pct, a.note, " ".join(photo_file(x) for x in a.photos)]
            )  # fmt: skip
    action_rows = [
        [a.action_id, a.record_id, a.practice, a.finding, a.owner,
         local_time(a.created_at, zone), local_time(a.due_at, zone), a.rule,
         local_time(a.closed_at, zone) if a.closed_at else "", a.closed_by or "",
         a.closure_note or "", photo_file(a.closure_photo) if a.closure_photo else ""]
        for a in actions
    ]  # fmt: skip
    write_csv(out / "field-inspections.csv", RECORD_COLUMNS, record_rows)
    write_csv(out / "field-findings.csv", FINDING_COLUMNS, finding_rows)
    write_csv(out / "corrective-actions.csv", ACTION_COLUMNS, action_rows)
    return FieldWritten(len(records), len(names), len(actions))


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def _record_row(r: FieldRecord, c: Checklist, zone_time: Callable[[int], str]) -> list[object]:
    return [
        r.record_id, zone_time(r.t), c.inspector, c.affiliation, c.address, c.phone, r.account,
        zone_time(r.signed_at) if r.signed_at is not None else "", r.sha256,
        _yes(r.intact), r.amends or "", len(c.practices), len(c.areas), len(c.photo_ids()),
        c.notes,
    ]  # fmt: skip
