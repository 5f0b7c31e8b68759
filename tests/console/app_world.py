"""The world the console's tests run in: the Lake George storm week in a real SQLite store.

The store is written the way ``siltwatch serve`` writes it — the example
week's readings, inspections and site log through the store's own API, then
the ingest service's catch-up and finish, which store the alert episodes and
duties the engine raises — plus two station statuses, so station health has
something to show. It is built once per test process and copied for each test
(the console writes its own tables into the file). Four people have accounts:
the site's operator and officer (its first two contacts), a qualified
inspector and a viewer.

``World`` wraps the app with a fake clock (2026-05-12 12:00 EDT, the day after
the week), a recording field desk, and a fake report renderer.
"""

from __future__ import annotations

import atexit
import json
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from datetime import date, datetime
from functools import cache
from pathlib import Path
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.testclient import TestClient

from analytics.events import StationReport
from console.app import make_app
from console.book import ConsoleBook
from console.desk import DeskError
from console.report.maker import ReportInputs
from console.web import Console
from ingest.recordings.formats import read_csv_readings, read_inspections, read_site_log
from ingest.service import IngestService
from ingest.store.from_url import open_store
from siltwatch.config import SiteConfig, load_site
from siltwatch.schema import Alert
from tests.alerts.helpers import FakeClock as BaseClock
from tests.servers import PostgresServer

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
SITE_FILE = EXAMPLES / "lake-george-site.toml"
SITE = load_site(SITE_FILE)
SID = SITE.site.id  # lg-route9n
T_AFTER_WEEK_S = 1778601600.0  # 2026-05-12T16:00:00Z = 12:00 EDT, the day after the week
PASSWORD = "silt-fence-holds-7"
OPERATOR, OFFICER, INSPECTOR, VIEWER = "Dana Ruiz", "Sam Okafor", "Quinn Hale", "Vic Viewer"
ROLES = {
    OPERATOR: "operator",
    OFFICER: "officer",
    INSPECTOR: "qualified_inspector",
    VIEWER: "viewer",
}
HEALTH_MS = 1778472000000  # 2026-05-11T04:00:00Z, the week's last reading


def fill_week(db: Path | str, site: SiteConfig = SITE, name: str = "lake-george") -> None:
    """The site's example week in ``db`` (a SQLite file or a PostgreSQL URL), judged by
    the engine as the service would."""
    sid = site.site.id
    store = open_store(db)
    try:
        readings = read_csv_readings(EXAMPLES / f"{name}-storm.csv", site.sensors())
        station = site.station_of()
        last = max(r.t for r in readings)
        store.add_readings(sid, [(station[r.sensor], r) for r in readings], received_at=last)
        for ins in read_inspections(EXAMPLES / f"{name}-inspections.csv"):
            store.add_inspection(sid, ins)
        for entry in read_site_log(EXAMPLES / f"{name}-site-log.csv", [a.id for a in site.areas]):
            store.add_site_log(sid, entry, 0)
        if name == "lake-george":
            store.add_status(
                sid,
                StationReport("basin-1", HEALTH_MS, "online", battery_v=12.43, disk_free_mb=8123.0,
                              backlog=17, clock_synced=True, clock_offset_s=0.4),
                HEALTH_MS,
            )  # fmt: skip
            store.add_status(
                sid, StationReport("down-1", HEALTH_MS, "offline", timed=False), HEALTH_MS
            )
        service = IngestService(site, store, say=lambda _line: None)
        service.finish(last)
    finally:
        store.close()


def _add_accounts(book: ConsoleBook) -> None:
    for person, role in ROLES.items():
        book.accounts.add(person, PASSWORD, 0)
        book.accounts.grant(person, SID, role)


@cache
def _base_store() -> Path:
    """The week's store with the four accounts, built once per test process."""
    work = Path(tempfile.mkdtemp(prefix="siltwatch-console-"))
    atexit.register(shutil.rmtree, work, True)
    db = work / "week.sqlite3"
    fill_week(db)
    book = ConsoleBook(db)
    try:
        _add_accounts(book)
        book.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        book.close()
    return db


_BASE_DATABASES: dict[int, str] = {}


def week_database(server: PostgresServer, name: str) -> str:
    """A fresh PostgreSQL database ``name`` holding the week and the four accounts: a copy
    (CREATE DATABASE … TEMPLATE) of one built once per server; its URL."""
    base = _BASE_DATABASES.get(id(server))
    if base is None:
        base = f"siltwatch_week_{id(server):x}"
        fill_week(server.create_database(base, icu_locale="en-US"))
        book = ConsoleBook(server.url(base))
        try:
            _add_accounts(book)
        finally:
            book.close()
        _BASE_DATABASES[id(server)] = base
    return server.create_database(name, template=base)


def week_store(folder: Path) -> Path:
    """A fresh copy of the week's store in ``folder``."""
    db = folder / "siltwatch.sqlite3"
    shutil.copy(_base_store(), db)
    return db


class FakeClock(BaseClock):
    """The tests' clock (tests/alerts/helpers.py), at the day after the week unless told."""

    def __init__(self, t: float = T_AFTER_WEEK_S) -> None:
        super().__init__(t)


@dataclass
class RecordingDesk:
    """A field desk that keeps what it is handed (and refuses with ``refuse`` when set)."""

    submitted: list[tuple[str, bytes]] = field(default_factory=list)
    refuse: str | None = None

    def submit(self, topic: str, payload: bytes) -> None:
        if self.refuse is not None:
            raise DeskError(self.refuse)
        self.submitted.append((topic, payload))


@dataclass
class FakeReports:
    """Stands in for console/report/document.py: says which days it was asked for."""

    asked: list[tuple[str, date, date]] = field(default_factory=list)

    def html(self, inputs: ReportInputs) -> str:
        sid, start, end = inputs.site.site.id, inputs.start, inputs.end
        self.asked.append((sid, start, end))
        return f"<html><body>report of {sid} {start} .. {end}</body></html>"

    def pdf(self, html: str, out_path: Path) -> None:
        out_path.write_bytes(b"%PDF-1.7 fake " + html.encode())


@dataclass
class ConsoleWorld:
    """The console app over a copy of the week, on the tests' clock, with a recording desk."""

    db: Path | str
    app: Starlette
    clock: FakeClock
    desk: RecordingDesk

    @property
    def console(self) -> Console:
        console: Console = self.app.state.console
        return console

    def plume(self) -> Alert:
        """The Lake George storm's plume: the turbidity contrast alert at outfall-a."""
        (plume,) = [
            a
            for a in self.console.store.alerts(SID)
            if a.kind == "turbidity_contrast" and a.subject == "outfall-a"
        ]
        return plume


@dataclass
class World(ConsoleWorld):
    reports: FakeReports

    @property
    def book(self) -> ConsoleBook:
        """The app's own book: what the delivery worker's AckLookup would read."""
        return self.console.book

    def client(self) -> TestClient:
        return TestClient(self.app, base_url="https://console.test", follow_redirects=False)

    def login(self, name: str = OPERATOR, password: str = PASSWORD) -> TestClient:
        client = self.client()
        response = log_in(client, name, password)
        assert response.status_code == 303, response.text
        return client

    def post_form(
        self, who: str, path: str, data: dict[str, str] | None = None, *, page: str | None = None
    ) -> httpx.Response:
        """Post ``data`` to ``path`` as ``who`` with the CSRF token of ``page`` (by default
        the page ``path`` is below), as a browser on that page would."""
        client = self.login(who)
        opened = client.get(page or path.rsplit("/", 1)[0])
        form = {"csrf": csrf_of(opened.text), **(data or {})}
        response: httpx.Response = client.post(path, data=form)
        return response

    def handed_to_desk(self, topic: str, kind: str) -> dict[str, Any]:
        """The one message handed to the field desk, checked to be a tablet's ``kind``
        record (version 1) of this site on its ``topic``: the rest of its fields."""
        ((sent_topic, payload),) = self.desk.submitted
        assert sent_topic == f"siltwatch/v1/{SID}/{topic}"
        record: dict[str, Any] = json.loads(payload)
        assert (record.pop("v"), record.pop("type"), record.pop("site")) == (1, kind, SID)
        return record

    def plume_id(self) -> str:
        return self.plume().id

    def actions(self, action: str | None = None) -> list[tuple[str, str, str, str]]:
        """(who, action, alert id, detail) of the audit log, oldest first."""
        entries = reversed(self.book.audit_log([SID, ""]))
        return [
            (e.who, e.action, e.alert_id, e.detail) for e in entries if action in (None, e.action)
        ]


def make_world(
    folder: Path,
    *,
    sites: dict[str, SiteConfig] | None = None,
    public_url: str | None = "https://console.test",
    twilio_token: str | None = None,
    real_reports: bool = False,
    db: str | None = None,
) -> World:
    """The app over a fresh copy of the week (in ``folder``, or the PostgreSQL database
    ``db`` already holding it: :func:`week_database`); ``real_reports`` serves
    console/report/document.py's report instead of the fake."""
    where: Path | str = week_store(folder) if db is None else db
    clock, desk, reports = FakeClock(), RecordingDesk(), FakeReports()
    app = make_app(
        sites or {SID: SITE},
        where,
        desk=desk,
        clock=clock,
        public_url=public_url,
        twilio_token=twilio_token,
        report_renderer=None if real_reports else reports,
    )
    return World(where, app, clock, desk, reports)


_CSRF = re.compile(r'name="csrf" value="([^"]*)"')


def csrf_of(html: str) -> str:
    """The CSRF token of the (first) form on a page."""
    match = _CSRF.search(html)
    assert match is not None, "the page has no form with a CSRF token"
    return match.group(1)


def inspection_form(inspector: str, csrf: str, when: datetime) -> dict[str, str]:
    """The duties page's inspection form, filled in and signed by ``inspector`` at ``when``
    (the site's local time), as a browser would post it."""
    return {
        "csrf": csrf,
        "time": when.strftime("%Y-%m-%dT%H:%M"),
        "inspector": inspector,
        "affiliation": "Whitaker Erosion Control",
        "address": "12 Canada St, Lake George NY",
        "phone": "+15185550102",
        "deviations": "none",
        "corrective_actions": "none needed",
        "signed": "yes",
    }


def log_in(client: TestClient, name: str, password: str = PASSWORD) -> httpx.Response:
    """Log ``name`` in through the login form (every account of the world has PASSWORD)."""
    page = client.get("/login")
    form = {"name": name, "password": password, "csrf": csrf_of(page.text), "next": "/"}
    response: httpx.Response = client.post("/login", data=form)
    return response
