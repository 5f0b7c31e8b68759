"""The Lake Lure storm week as the field desk's tests see it.

The Lake Lure example site with three practices of its plan appended
(tests/fixtures/lake-lure-practices.toml: a silt fence, a construction
entrance, an inlet protection; its sensed trap and trench are practices too),
its example week judged by the engine in a fresh store (SQLite, or a
PostgreSQL database), and the console's four accounts granted on it.
"""

from __future__ import annotations

import io
from datetime import UTC, datetime
from pathlib import Path

from PIL import Image

from console.app import make_app
from console.book import ConsoleBook
from console.desk import ServiceDesk
from ingest.service import IngestService
from ingest.store.fieldbook import CorrectiveAction, FieldRecord, Photo
from ingest.store.from_url import open_store
from ingest.store.queries import SqlStore
from siltwatch import checklist as cl
from siltwatch.config import SiteConfig, load_site
from tests.console.app_world import (
    EXAMPLES,
    PASSWORD,
    ROLES,
    FakeClock,
    FakeReports,
    RecordingDesk,
    World,
    fill_week,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
LURE_ID = "ll-boulevard"
# 2026-05-12T16:00:00Z = 12:00 EDT, the day after the week
T_AFTER_LURE_WEEK_S = 1778601600.0


def lure_site(folder: Path) -> tuple[Path, SiteConfig]:
    """The Lake Lure example plus its practices, as a site file in ``folder``."""
    text = (EXAMPLES / "lake-lure-site.toml").read_text()
    text += (FIXTURES / "lake-lure-practices.toml").read_text()
    path = folder / "lake-lure-field.toml"
    path.write_text(text)
    return path, load_site(path)


def lure_world(
    folder: Path, db: str | None = None, *, real_reports: bool = False, engine: bool = False
) -> World:
    """The console over the Lake Lure week (in ``folder``, or the empty PostgreSQL
    database ``db``), with a recording field desk and the fake clock; ``engine``: the
    field desk of a real ingest service over the same store (``world.desk`` is then the
    ServiceDesk, its service at ``world.desk.service``)."""
    _, site = lure_site(folder)
    where: Path | str = db if db is not None else folder / "lure.sqlite3"
    fill_week(where, site, "lake-lure")
    book = ConsoleBook(where)
    try:
        for person, role in ROLES.items():
            book.accounts.add(person, PASSWORD, 0)
            book.accounts.grant(person, LURE_ID, role)
    finally:
        book.close()
    clock, desk, reports = FakeClock(T_AFTER_LURE_WEEK_S), RecordingDesk(), FakeReports()
    if engine:
        service = IngestService(site, open_store(where), say=lambda _line: None)
        desk = ServiceDesk(service, lambda: int(clock() * 1000))  # type: ignore[assignment]
    app = make_app(
        {LURE_ID: site},
        where,
        desk=desk,
        clock=clock,
        public_url="https://console.test",
        report_renderer=None if real_reports else reports,
    )
    return World(where, app, clock, desk, reports)


def jpeg(width: int = 64, height: int = 48, color: str = "sienna", exif: bytes = b"") -> bytes:
    """A small real JPEG (with ``exif`` bytes when given)."""
    out = io.BytesIO()
    Image.new("RGB", (width, height), color).save(out, "JPEG", exif=exif)
    return out.getvalue()


def gps_exif() -> bytes:
    """EXIF holding a GPS position (35.43 N, 82.20 W: Lake Lure) and a camera serial."""
    exif = Image.Exif()
    exif[0xA431] = "SERIAL-12345"  # BodySerialNumber
    gps = {1: "N", 2: (35.0, 25.0, 48.0), 3: "W", 4: (82.0, 12.0, 0.0)}
    exif[0x8825] = gps
    return exif.tobytes()


def checklist_form(idem: str, csrf: str, **extra: str) -> dict[str, str]:
    """The Lake Lure checklist, everything in order, signed by the qualified inspector."""
    form = {
        "csrf": csrf,
        "idem": idem,
        "time": "2026-05-12T09:30",
        "inspector": "Quinn Hale",
        "affiliation": "Blue Ridge Erosion Control LLC",
        "address": "412 Memorial Hwy, Lake Lure NC 28746",
        "phone": "+1 828 555 0142",
        "sign": "yes",
        "a.lot-1.grading": "final_grading",
        "a.lot-1.cover": "mulch",
        "a.lot-1.cover_pct": "80",
        "a.drive.grading": "grading_complete",
        "a.drive.cover": "erosion_blanket",
        "a.drive.cover_pct": "100",
    }
    for p in ("sf-lot1", "ce-main", "ip-cove", "basin-s", "trench-1"):
        form[f"p.{p}.installed"] = "yes"
        form[f"p.{p}.functioning"] = "yes"
    form.update(extra)
    return form


def store_a_checklist(store: SqlStore, t_ms: int = 1778592600000) -> str:
    """A signed Lake Lure checklist (2026-05-12 09:30 EDT) with two photos and one finding,
    written with the store's own API as the field desk writes it; its record id."""
    fence, drive = (
        Photo(jpeg(color="brown"), "image/jpeg", 64, 48),
        Photo(jpeg(color="green"), "image/jpeg", 64, 48),
    )
    checks = [
        cl.PracticeCheck(practice=p, installed=True, functioning=True, needs_maintenance=p == "sf-lot1",
                      deviates=False, photos=[fence.photo_id] if p == "sf-lot1" else [])
        for p in ("sf-lot1", "ce-main", "ip-cove", "basin-s", "trench-1")
    ]  # fmt: skip
    areas = [
        cl.AreaCheck(area="drive", grading=cl.GradingPhase.GRADING_COMPLETE,
                  cover=cl.CoverType.EROSION_BLANKET, cover_pct=100, photos=[drive.photo_id])
    ]  # fmt: skip
    checklist = cl.Checklist(
        site=LURE_ID, time=datetime.fromtimestamp(t_ms / 1000, UTC), inspector="Quinn Hale",
        account="Quinn Hale", affiliation="Blue Ridge Erosion Control LLC",
        address="412 Memorial Hwy, Lake Lure NC 28746", phone="+1 828 555 0142",
        practices=checks, areas=areas,
    )  # fmt: skip
    body = cl.canonical_bytes(checklist)
    record = FieldRecord(LURE_ID, "fr-stored", t_ms, "Quinn Hale", body.decode(),
                         cl.content_hash(checklist), t_ms, None, t_ms)  # fmt: skip
    action = CorrectiveAction(LURE_ID, "fr-stored-sf-lot1", "fr-stored", "sf-lot1",
                              "needs maintenance", "Dana Ruiz", t_ms, t_ms + 7 * 86_400_000,
                              "site default: 7 days ([field_desk])")  # fmt: skip
    return store.add_field_record(record, "stored-key-0123456789", [fence, drive], [action])
