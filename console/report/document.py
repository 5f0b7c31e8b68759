"""The inspector's report: one self-contained, printable HTML page, and its PDF.

What a town's inspector or a state auditor asks a site to show, for a range of
the site's local days, from the store (the truth, ingest/store/sqlite.py) and what
people recorded about the alerts (console/notes.py):

* the daily rain log, every day of the period (NCG01 Part III §A item 1: the
  rain gauge read and recorded daily), from the engine's own rain accounting
  (analytics/rain.py through ingest/recordings/replay.py: the stored gauge readings
  replayed, as ``siltwatch records`` does), so the report and the duties it
  explains count the same rain;
* the storms, and whether each created an inspection duty;
* the inspections with the fields the record must hold (Lake Lure
  96.05(B)(17)(b); Big Flats 17.37.100 A);
* the duties met and missed, and by how much;
* the alerts with their citations, escalations, acknowledgements, comments
  and corrective actions (the console's notes and the site log's
  ``corrective_action`` entries);
* the stations' last health reports, the certification and signature lines
  the site's law asks of an inspection record, and the plots (console/charts/plots.py).

A filing, not an appendix (console/report/parts.py): a one-line verdict first,
sections that flow on from each other, page numbers and a footer (site,
period, when generated) on every printed page, people's names for what an
alert or duty is about, each corrective action once, dates never wrapped.

Times are the site's local time with the zone's abbreviation
(siltwatch/timefmt.py). :func:`build_report` reads no wall clock: the caller
passes when the report was made. :func:`render_pdf` prints the page with a
headless Chromium (its own print to PDF), the renderer the browser tests use.
"""

from __future__ import annotations

import base64
import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta, tzinfo
from functools import cache
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from analytics.events import INSPECTION_RECORD_FIELDS, Inspection, RainDay, StationReport
from analytics.rain import RainDetector, StormRecord
from console.charts.draw import svg_text
from console.charts.plots import site_charts
from console.fieldviews import action_view, record_view
from console.notes import Note, NoteKind, NotesSource
from console.report.parts import (
    Verdict,
    certifications,
    css_string,
    same_text,
    subject_name,
    verdict,
)
from ingest.rain_lead_in import gauge_readings
from ingest.recordings.replay import replay_site
from ingest.store.queries import SqlStore
from siltwatch.config import SiteConfig
from siltwatch.detections import alert_spec, duty_spec
from siltwatch.rulepacks import load_pack, site_rules
from siltwatch.schema import Alert, Duty
from siltwatch.timefmt import duration, local_time
from siltwatch.vocabulary import SiteEvent

HERE = Path(__file__).resolve().parents[1]  # console/: its templates and static files
TEMPLATES = HERE / "templates"
STYLESHEET = HERE / "static" / "report.css"
RAIN_LOG_CITE = "NCG01 Part III §A item 1"
PDF_TIMEOUT_S = 120.0
REPORT_CHART = (340, 250)  # two charts side by side on a Letter page, text at 12 px (9 pt)


class ReportError(Exception):
    """The report could not be made; the message says why and what to do."""


# --- what the template shows ------------------------------------------------------------


@dataclass(frozen=True)
class Period:
    """The report's local days, ``start`` .. ``end`` inclusive, as event times."""

    start: date
    end: date
    start_ms: int  # local midnight starting ``start``
    end_ms: int  # local midnight ending ``end``

    @classmethod
    def of(cls, site: SiteConfig, start: date, end: date) -> Period:
        if end < start:
            raise ValueError(f"the period ends ({end}) before it starts ({start})")
        zone = site.site.zone
        first = datetime.combine(start, time(0), tzinfo=zone)
        after = datetime.combine(end + timedelta(days=1), time(0), tzinfo=zone)
        return cls(start, end, round(first.timestamp() * 1000), round(after.timestamp() * 1000))

    def days(self) -> list[date]:
        return [self.start + timedelta(days=i) for i in range((self.end - self.start).days + 1)]

    def overlaps(self, first_ms: int, last_ms: int | None) -> bool:
        """Whether [first, last] (last None: still going) meets the period."""
        return first_ms < self.end_ms and (last_ms is None or last_ms >= self.start_ms)


@dataclass(frozen=True)
class RainRow:
    day: str
    cells: list[str]  # per gauge: the depth, or why there is none
    counts: list[str]  # per gauge: readings (and excluded ones)
    wet: bool


@dataclass(frozen=True)
class StormRow:
    gauge: str
    start: str
    end: str
    depth: str
    peak_24h: str
    duty: str


@dataclass(frozen=True)
class InspectionRow:
    time: str
    inspector: str
    duty: str
    fields: list[tuple[str, str]]  # (label, value) of the record fields, in the law's order


@dataclass(frozen=True)
class DutyRow:
    kind: str
    reason: str
    subject: str
    created: str
    due: str
    outcome: str
    state: str  # met | late | missed | open: the row's style
    rule: str


@dataclass(frozen=True)
class NoteRow:
    kind: str
    by: str
    at: str
    text: str
    via: str


@dataclass(frozen=True)
class AlertBlock:
    id: str
    label: str
    subject: str
    severity: str
    regulatory: bool
    opened: str
    resolved: str
    rule: str
    amount: str
    message: str
    escalations: list[str]
    notes: list[NoteRow] = field(default_factory=list)

    def acted(self) -> bool:
        """Whether a corrective action is recorded for it."""
        return any(n.kind == "corrective action" for n in self.notes)


@dataclass(frozen=True)
class StationRow:
    station: str
    state: str
    seen: str
    health: list[tuple[str, str]]


@dataclass(frozen=True)
class Figure:
    id: str
    title: str
    svg: Markup
    caption: str


# --- the report ---------------------------------------------------------------------------


def build_report(
    site: SiteConfig,
    store: SqlStore,
    notes: NotesSource | None,
    start: date,
    end: date,
    *,
    generated_at: datetime | None = None,
) -> str:
    """The report of the site's local days ``start`` .. ``end`` (inclusive) as one HTML page:
    inline CSS and inline SVG, no external asset, page breaks between sections.

    ``generated_at`` (aware) is printed in the header and is the "as of" of open
    duties when it falls inside the period; None leaves it out (the period's
    end is then the "as of").
    """
    period = Period.of(site, start, end)
    zone = site.site.zone
    sid = site.site.id
    as_of = period.end_ms
    if generated_at is not None:
        as_of = min(as_of, round(generated_at.timestamp() * 1000))
    rain_log, storms = rain_record(site, store, period.start_ms, period.end_ms)
    duties = store.duties(sid)
    alerts = [
        a for a in store.alerts(sid) if period.overlaps(_ms(a.opened_at), _opt_ms(a.resolved_at))
    ]
    inspections = [
        i for i in store.inspections_after(sid, period.start_ms - 1) if i.t < period.end_ms
    ]
    charts = site_charts(site, store, period.start_ms, period.end_ms)
    by_id = {d.id: d for d in duties}
    duty_list = duty_rows(site, duties, period, as_of)
    alert_list = [alert_block(site, a, notes, store, by_id) for a in alerts]
    site_name = site.site.name or site.site.id
    period_text = f"{_day(period.start)} – {_day(period.end)}"
    generated = local_time(generated_at, zone) if generated_at is not None else None
    footer = f"{site_name} · {period_text}" + (f" · generated {generated}" if generated else "")
    context = {
        "site": site.site,
        "zone_names": _zone_names(site, period),
        "packs": _packs(site),
        "period": period,
        "period_text": period_text,
        "generated": generated,
        "footer_css": Markup(css_string(footer)),
        "verdict": report_verdict(duty_list, alert_list),
        "certifications": certifications(site_rules(site).packs),
        "as_of": local_time(as_of, zone),
        "rain_cite": RAIN_LOG_CITE,
        "gauges": [f"{g.id} ({site.sensor(g.sensor).unit})" for g in site.rain_gauges],
        "rain_rows": rain_rows(site, rain_log, period),
        "rain_totals": rain_totals(site, rain_log, period),
        "storms": storm_rows(site, storms, duties, period),
        "inspections": [inspection_row(i, site) for i in inspections],
        **field_desk_part(site, store, period.start_ms, period.end_ms, as_of),
        "duties": duty_list,
        "alerts": alert_list,
        "stations": station_rows(site, store, period),
        "figures": [
            Figure(c.id, c.title, Markup(svg_text(c, *REPORT_CHART)), c.description) for c in charts
        ],
        "stylesheet": Markup(STYLESHEET.read_text(encoding="utf-8")),
    }
    return _template().render(context)


def field_desk_part(
    site: SiteConfig, store: SqlStore, start_ms: int, end_ms: int, as_of: int
) -> dict[str, Any]:
    """The field desk's checklists of the period with their photos inline (the report has no
    external asset) and the corrective actions opened in it or still open at its start."""
    sid = site.site.id

    def photo_src(photo_id: str) -> str:
        photo = store.field_photo(sid, photo_id)
        if photo is None:
            return ""
        return f"data:{photo.content_type};base64,{base64.b64encode(photo.data).decode()}"

    actions = [
        a
        for a in store.corrective_actions(sid)
        if a.created_at < end_ms and (a.closed_at is None or a.closed_at >= start_ms)
    ]
    return {
        "field_records": [record_view(r, site) for r in store.field_records(sid, start_ms, end_ms)],
        "field_actions": [action_view(a, site, as_of) for a in actions],
        "photo_src": photo_src,
    }


def report_verdict(duties: Sequence[DutyRow], alerts: Sequence[AlertBlock]) -> Verdict:
    """The report's first line (console/report/parts.py ``verdict``)."""
    return verdict(
        [d.state for d in duties], [(a.regulatory, not a.resolved, a.acted()) for a in alerts]
    )


@cache
def _template() -> jinja2.Template:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,  # every value is escaped; the SVG charts and the CSS are marked safe
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    return env.get_template("report.html")


def _ms(value: datetime) -> int:
    return round(value.timestamp() * 1000)


def _opt_ms(value: datetime | None) -> int | None:
    return None if value is None else _ms(value)


def _day(d: date) -> str:
    return d.strftime("%a %Y-%m-%d")


def _zone_names(site: SiteConfig, period: Period) -> str:
    zone = site.site.zone
    names = []
    for ms in (period.start_ms, period.end_ms - 1):
        name = datetime.fromtimestamp(ms / 1000, tz=zone).tzname() or site.site.timezone
        if name not in names:
            names.append(name)
    return f"{site.site.timezone} ({'/'.join(names)})"


def _packs(site: SiteConfig) -> list[tuple[str, str]]:
    """(pack id, title) of the site's rule packs, and of the packs they stack on."""
    chain = site_rules(site).packs
    return [(pack_id, load_pack(pack_id).pack.title) for pack_id in chain]


# --- rain ---------------------------------------------------------------------------------


def rain_record(
    site: SiteConfig, store: SqlStore, start_ms: int | None = None, end_ms: int | None = None
) -> tuple[list[RainDay], list[StormRecord]]:
    """The daily rain log and the storms of every gauge, by the engine's rain detector.

    The stored gauge readings replayed (ingest/recordings/replay.py), as ``siltwatch
    records`` derives the log (ingest/outputs/records.py ``daily_rain``): the same
    quality policy, local days and storm segmentation the live engine applies.
    The record is replayed from a lead-in before ``start_ms`` to a lead-out after
    ``end_ms`` that hold every storm reaching into the period whole
    (ingest/rain_lead_in.py; None: from the first / to the last reading): the days
    and storms of the period are the whole record's.
    """
    readings = gauge_readings(site, store, start_ms, end_ms)
    if not readings:
        return [], []
    result = replay_site(site, readings, keep_engine=True)
    engine = result.engine
    rain = engine.detectors.get("rain") if engine is not None else None
    storms: list[StormRecord] = []
    if isinstance(rain, RainDetector):
        storms = [s for g in site.rain_gauges for s in rain.storms(g.id)]
    return result.rain_log, storms


def _depth(value: float, unit: str) -> str:
    return f"{value:.2f} {unit}" if unit == "in" else f"{value:.1f} {unit}"


def rain_rows(site: SiteConfig, log: Sequence[RainDay], period: Period) -> list[RainRow]:
    """One row per local day of the period, every day: a day without any reading says so
    (unknown is not dry)."""
    by_key = {(r.day, r.gauge): r for r in log}
    rows = []
    for day in period.days():
        cells, counts, wet = [], [], False
        for gauge in site.rain_gauges:
            r = by_key.get((day, gauge.id))
            if r is None:
                cells.append("no readings")
                counts.append("0")
                continue
            cells.append(_depth(r.depth, r.unit))
            counts.append(f"{r.readings}" + (f" ({r.excluded} excluded)" if r.excluded else ""))
            wet = wet or r.depth > 0
        rows.append(RainRow(_day(day), cells, counts, wet))
    return rows


def rain_totals(site: SiteConfig, log: Sequence[RainDay], period: Period) -> list[str]:
    """Each gauge's rain over the period (the sum of its daily records)."""
    days = set(period.days())
    out = []
    for gauge in site.rain_gauges:
        unit = site.sensor(gauge.sensor).unit
        total = sum(r.depth for r in log if r.gauge == gauge.id and r.day in days)
        out.append(_depth(total, unit))
    return out


def storm_rows(
    site: SiteConfig, storms: Iterable[StormRecord], duties: Sequence[Duty], period: Period
) -> list[StormRow]:
    """The storms that rained in the period, and the inspection duty each created (a duty
    names its storm as its subject: analytics/inspection_storm.py, design storms)."""
    zone = site.site.zone
    by_storm: dict[str, list[Duty]] = {}
    for duty in duties:
        by_storm.setdefault(duty.subject, []).append(duty)
    rows = []
    for s in storms:
        if not period.overlaps(s.start, s.end):
            continue
        made = by_storm.get(s.id, [])
        made_text = (
            "; ".join(f"yes: {d.id} ({d.reason}), due {local_time(d.due_at, zone)}" for d in made)
            if made
            else "no"
        )
        end = local_time(s.end, zone) + (
            "" if s.closed else " (still raining when the record ends)"
        )
        rows.append(
            StormRow(
                s.gauge,
                local_time(s.start, zone),
                end,
                _depth(s.depth(), s.unit),
                _depth(s.peak_window(), s.unit),
                made_text,
            )
        )
    return rows


# --- inspections and duties -----------------------------------------------------------------

_FIELD_LABELS = {
    "affiliation": "affiliation",
    "address": "address",
    "phone": "telephone",
    "signed": "signed",
    "deviations": "deviations from the plan",
    "corrective_actions": "corrective actions",
}


def inspection_row(ins: Inspection, site: SiteConfig) -> InspectionRow:
    """An inspection with every record field, "not recorded" where it is missing."""
    fields = []
    for name in INSPECTION_RECORD_FIELDS:
        value = getattr(ins, name)
        if value is None:
            shown = "not recorded"
        elif isinstance(value, bool):
            shown = "yes" if value else "no"
        else:
            shown = str(value)
        fields.append((_FIELD_LABELS.get(name, name.replace("_", " ")), shown))
    duty = ins.duty or "every open inspection duty"
    return InspectionRow(local_time(ins.t, site.site.zone), ins.inspector, duty, fields)


def duty_rows(
    site: SiteConfig, duties: Iterable[Duty], period: Period, as_of: int
) -> list[DutyRow]:
    """Duties that were open during the period or fell due in it, with how each ended."""
    zone = site.site.zone
    rows = []
    for d in duties:
        created, due, done = _ms(d.created_at), _ms(d.due_at), _opt_ms(d.completed_at)
        if not (period.overlaps(created, done) or period.start_ms <= due < period.end_ms):
            continue
        state, outcome = duty_outcome(due, done, as_of, zone)
        spec = duty_spec(d.kind)
        rows.append(
            DutyRow(
                spec.label if spec is not None else d.kind,
                d.reason.replace("_", " "),
                subject_name(site, d.subject, {}, zone),
                local_time(d.created_at, zone),
                local_time(d.due_at, zone),
                outcome,
                state,
                d.rule,
            )
        )
    return rows


def duty_outcome(due: int, done: int | None, as_of: int, zone: tzinfo) -> tuple[str, str]:
    """(state, words): met on time, met late (by how much), missed (overdue by how much
    as of the report), or still open and not yet due."""
    if done is not None:
        if done <= due:
            return "met", f"met {local_time(done, zone)}"
        return (
            "late",
            f"met late {local_time(done, zone)}, {duration((done - due) / 1000)} after the deadline",
        )
    if due < as_of:
        return (
            "missed",
            f"missed: not done, {duration((as_of - due) / 1000)} overdue",
        )
    return "open", "open, not yet due"


# --- alerts -----------------------------------------------------------------------------------


def alert_block(
    site: SiteConfig,
    alert: Alert,
    notes: NotesSource | None,
    store: SqlStore,
    duties: Mapping[str, Duty] | None = None,
) -> AlertBlock:
    """An alert episode with its citation, escalations and what people recorded about it;
    its subject by people's name (a duty's alert: the area the duty is about)."""
    zone = site.site.zone
    spec = alert_spec(alert.kind)
    return AlertBlock(
        id=alert.id,
        label=spec.label if spec is not None else alert.kind.replace("_", " "),
        subject=subject_name(site, alert.subject, duties or {}, zone),
        severity=str(alert.severity),
        regulatory=bool(spec is not None and spec.regulatory),
        opened=local_time(alert.opened_at, zone),
        resolved=local_time(alert.resolved_at, zone) if alert.resolved_at else "",
        rule=alert.rule,
        amount=spec.how_much(alert.evidence, zone) if spec is not None else "",
        message=alert.message,
        escalations=[f"{local_time(e.at, zone)}: {e.severity}" for e in alert.escalations],
        notes=alert_notes(site, alert, notes, store),
    )


def alert_notes(
    site: SiteConfig, alert: Alert, notes: NotesSource | None, store: SqlStore
) -> list[NoteRow]:
    """The console's notes on the episode and the site log's corrective actions naming it
    (a ``corrective_action`` entry's detail starts with the alert id), oldest first."""
    zone = site.site.zone
    found: list[tuple[int, NoteRow]] = []
    recorded: list[Note] = notes.notes(site.site.id, alert.id) if notes is not None else []
    words = {
        NoteKind.ACKNOWLEDGED: "acknowledged",
        NoteKind.COMMENT: "comment",
        NoteKind.CORRECTIVE_ACTION: "corrective action",
    }
    for n in recorded:
        found.append(
            (
                n.at_ms,
                NoteRow(
                    words.get(n.kind, str(n.kind)), n.by, local_time(n.at_ms, zone), n.text, n.via
                ),
            )
        )
    for entry in store.site_log(site.site.id):
        if entry.event != SiteEvent.CORRECTIVE_ACTION or not entry.detail.startswith(alert.id):
            continue
        text = entry.detail[len(alert.id) :].lstrip(" :,;-–—")
        if any(row.kind == "corrective action" and same_text(row.text, text) for _, row in found):
            continue  # the same action recorded in the console and the site log: printed once
        row = NoteRow("corrective action", entry.by, local_time(entry.t, zone), text, "site log")
        found.append((entry.t, row))
    return [row for _, row in sorted(found, key=lambda item: item[0])]


# --- stations -----------------------------------------------------------------------------------

_HEALTH = (
    ("battery_v", "battery", "{:.2f} V"),
    ("disk_free_mb", "disk free", "{:,.0f} MB"),
    ("backlog", "backlog", "{:,} readings"),
    ("dropped", "dropped", "{:,}"),
    ("quarantined", "quarantined", "{:,}"),
    ("clock_synced", "clock synced", "{}"),
    ("clock_offset_s", "clock offset", "{:+.1f} s"),
    ("cpu_temp_c", "CPU", "{:.0f} °C"),
)


def station_rows(site: SiteConfig, store: SqlStore, period: Period) -> list[StationRow]:
    """Each station's last status report up to the period's end (its state and health)."""
    zone = site.site.zone
    last: dict[str, StationReport] = {}
    for _id, _arrival, report in store.statuses(site.site.id):
        seen = last.get(report.station)
        if report.t < period.end_ms and (seen is None or report.t >= seen.t):
            last[report.station] = report
    rows = []
    for station, report in sorted(last.items()):
        health = []
        values = report.health()
        for key, label, fmt in _HEALTH:
            if key in values:
                value = values[key]
                shown = ("yes" if value else "no") if isinstance(value, bool) else fmt.format(value)
                health.append((label, shown))
        rows.append(
            StationRow(
                station,
                report.state,
                local_time(report.t, zone),
                health,
            )
        )
    return rows


# --- PDF ------------------------------------------------------------------------------------------

_CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def find_chromium() -> str | None:
    """The Chromium to print with: ``SILTWATCH_CHROMIUM``, else the first on PATH."""
    named = os.environ.get("SILTWATCH_CHROMIUM")
    if named:
        return named if Path(named).exists() else None
    return next((found for name in _CHROMIUM_NAMES if (found := shutil.which(name))), None)


def render_pdf(html: str, out: Path, *, timeout_s: float = PDF_TIMEOUT_S) -> None:
    """Print the report to ``out`` as PDF with headless Chromium's own print to PDF.

    The page is written to a private folder with a fresh browser profile (so a
    running browser or another report is not disturbed); Chromium runs in its
    own process group, which is killed whole if it does not finish in time.
    """
    binary = find_chromium()
    if binary is None:
        raise ReportError(
            "no Chromium to print the PDF with: install chromium (apt-get install chromium) "
            "or write .html"
        )
    with tempfile.TemporaryDirectory(prefix="siltwatch-report-") as tmp:
        page, pdf = Path(tmp) / "report.html", Path(tmp) / "report.pdf"
        page.write_text(html, encoding="utf-8")
        command = [
            binary,
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--no-pdf-header-footer",
            "--no-first-run",
            "--disable-extensions",
            f"--user-data-dir={Path(tmp) / 'profile'}",
            f"--print-to-pdf={pdf}",
            page.as_uri(),
        ]
        _run(command, timeout_s)
        if not pdf.exists() or pdf.stat().st_size == 0:
            raise ReportError(f"{binary} made no PDF (command: {' '.join(command[:5])} ...)")
        out.parent.mkdir(parents=True, exist_ok=True)
        partial = out.with_name(out.name + ".part")
        shutil.copyfile(pdf, partial)
        partial.replace(out)


def _run(command: list[str], timeout_s: float) -> None:
    proc = subprocess.Popen(
        command,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its own process group: the renderer children die with it
    )
    try:
        _, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise ReportError(
            f"{command[0]} did not finish printing the PDF within {timeout_s:g} s"
        ) from None
    if proc.returncode != 0:
        tail = err.decode(errors="replace").strip().splitlines()[-3:]
        raise ReportError(
            f"{command[0]} failed printing the PDF (exit {proc.returncode}): {' | '.join(tail)}"
        )
