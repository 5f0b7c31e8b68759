"""What the pages show, read from the store and the book and put in people's words.

Plain functions from (site, store, book, now) to small rows: open alerts with
their kind's label and "by how much" from the detection registry
(siltwatch/detections), duties with how long until (or since) they are due,
station health from the stations' last statuses, the last reading of each
sensor, an episode's timeline. Times are the site's local time
(siltwatch/timefmt.py). No HTML here: the templates lay the rows out.

"Now" is the console's clock (console/web.py ``Console.clock``: the wall clock
in the live service, the demo's own clock in the demo), passed in as
``now_ms``: a station silent for longer than :func:`stale_after_ms` is marked
stale with how long, whatever its last status said. A resolved episode keeps
its peak severity as history (``AlertRow.live`` False): the templates show it
grey, not as a live red badge. An episode a silence held from people carries
the silence in words (``AlertRow.silenced``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from alerts.acks import Acknowledgement
from alerts.silences import may_be_silenced
from analytics.events import SiteLogEntry
from console.book import ConsoleBook
from console.notes import NoteKind
from console.silences import Silence
from ingest.store.queries import SqlStore
from siltwatch.config import SiteConfig, Station
from siltwatch.detections import alert_spec, duty_spec
from siltwatch.detections.base import short_number
from siltwatch.detections.inspections import INSPECTION
from siltwatch.naming import alert_place, alert_thing, names_of, overdue_words, thing_name
from siltwatch.schema import Alert, Duty
from siltwatch.timefmt import duration, local_time
from siltwatch.vocabulary import Severity, SiteEvent, severity_rank

DUE_SOON_MS = 48 * 3_600_000
VIA_LABELS = {"console": "in the console", "link": "by link", "sms": "by SMS"}


def _ms(value: datetime) -> int:
    return round(value.timestamp() * 1000)


@dataclass(frozen=True)
class AlertRow:
    id: str
    kind: str
    label: str
    subject: str
    severity: str
    opened: str
    resolved: str | None
    amount: str
    regulatory: bool
    ack: Acknowledgement | None
    ack_text: str
    site: str = ""
    opened_ms: int = 0
    resolved_ms: int | None = None
    silenced: str = ""  # the silence that held it from people, in words

    @property
    def live(self) -> bool:
        """Still open: its severity is the present one, not its peak."""
        return self.resolved is None

    subject_name: str = ""  # what people call the subject (siltwatch/naming.py)
    subject_place: str = ""  # "at <subject_name>", or "after <it>" for an inspection after an event


def kind_label(kind: str) -> str:
    spec = alert_spec(kind)
    return spec.label if spec is not None else kind.replace("_", " ")


def ack_words(ack: Acknowledgement | None, site: SiteConfig) -> str:
    if ack is None:
        return ""
    how = VIA_LABELS.get(ack.via, ack.via)
    return f"Acknowledged by {ack.by} {how} at {local_time(ack.at_ms, site.site.zone)}"


def silence_of(alert: Alert, silences: Sequence[Silence]) -> str:
    """The silence that held ``alert`` from people (at its opening), in words, or ''."""
    if not silences or not may_be_silenced(alert.kind):
        return ""
    opened = _ms(alert.opened_at)
    for s in silences:
        if s.covers(alert.subject, alert.kind, opened):
            return f"by {s.by}: {s.reason}"
    return ""


def live_amount(alert: Alert, site: SiteConfig, now_ms: int) -> str | None:
    """How overdue a still-open missed deadline is *now* (its evidence says how overdue
    it was when it opened: "0 h overdue"), or None for any other alert."""
    due = alert.evidence.get("due_at")
    if alert.resolved_at is not None or not alert.kind.endswith("_overdue"):
        return None
    if not isinstance(due, str) or duty_spec(alert.kind.removesuffix("_overdue")) is None:
        return None
    try:
        due_ms = _ms(datetime.fromisoformat(due.replace("Z", "+00:00")))
    except ValueError:
        return None
    late = duration(max(0, now_ms - due_ms) / 1000)
    return f"overdue by {late} (due {local_time(due, site.site.zone, short=True)})"


def alert_row(
    alert: Alert,
    site: SiteConfig,
    book: ConsoleBook,
    silences: Sequence[Silence] | None = None,
    now_ms: int | None = None,
    acks: Mapping[tuple[str, str], Acknowledgement] | None = None,
) -> AlertRow:
    """The alert in people's words; with ``now_ms`` an open missed deadline says how
    overdue it is now (:func:`live_amount`)."""
    spec = alert_spec(alert.kind)
    zone = site.site.zone
    sid = site.site.id
    ack = book.acknowledged(sid, alert.id) if acks is None else acks.get((sid, alert.id))
    if silences is None:
        silences = book.silences(site.site.id)
    late = "" if now_ms is None else overdue_words(alert, _at(now_ms), zone)
    return AlertRow(
        id=alert.id,
        kind=alert.kind,
        label=kind_label(alert.kind),
        subject=alert.subject,
        severity=str(alert.severity),
        opened=local_time(alert.opened_at, zone),
        resolved=None if alert.resolved_at is None else local_time(alert.resolved_at, zone),
        amount=late or (spec.how_much(alert.evidence, zone) if spec is not None else ""),
        regulatory=bool(spec and spec.regulatory),
        ack=ack,
        ack_text=ack_words(ack, site),
        site=site.site.id,
        opened_ms=_ms(alert.opened_at),
        resolved_ms=None if alert.resolved_at is None else _ms(alert.resolved_at),
        silenced=silence_of(alert, silences),
        subject_name=alert_thing(alert, names_of(site), zone),
        subject_place=alert_place(alert, names_of(site), zone),
    )


def _at(now_ms: int) -> datetime:
    return datetime.fromtimestamp(now_ms / 1000, tz=UTC)


def open_alerts(
    site: SiteConfig, store: SqlStore, book: ConsoleBook, now_ms: int | None = None
) -> list[AlertRow]:
    """The site's unresolved episodes, most severe first, then oldest first."""
    alerts = [a for a in store.alerts(site.site.id) if a.resolved_at is None]
    alerts.sort(key=lambda a: (-severity_rank(a.severity), a.opened_at))
    silences = book.silences(site.site.id)
    acks = book.acknowledgements([site.site.id])
    return [alert_row(a, site, book, silences, now_ms, acks) for a in alerts]


def all_alerts(
    site: SiteConfig,
    store: SqlStore,
    book: ConsoleBook,
    now_ms: int | None = None,
    acks: Mapping[tuple[str, str], Acknowledgement] | None = None,
) -> list[AlertRow]:
    """Every episode, newest first (resolved ones included: they may need an action).
    ``acks``: the acknowledgements already read for a page of several sites."""
    alerts = sorted(store.alerts(site.site.id), key=lambda a: a.opened_at, reverse=True)
    silences = book.silences(site.site.id)
    if acks is None:
        acks = book.acknowledgements([site.site.id])
    return [alert_row(a, site, book, silences, now_ms, acks) for a in alerts]


def severity_counts(rows: list[AlertRow]) -> list[tuple[str, int]]:
    return [(s.value, sum(r.severity == s.value for r in rows)) for s in reversed(Severity)]


# --- duties ------------------------------------------------------------------------------


@dataclass(frozen=True)
class DutyRow:
    id: str
    kind: str
    label: str
    reason: str
    subject: str
    created: str
    due: str
    completed: str | None
    state: str  # overdue | due_soon | open | done
    when: str  # "due in 5 h 10 min", "overdue by 2.5 days", "done"
    rule: str
    subject_name: str = ""  # what people call the subject (siltwatch/naming.py)


def duty_row(duty: Duty, site: SiteConfig, now_ms: int) -> DutyRow:
    zone = site.site.zone
    due = _ms(duty.due_at)
    if duty.completed_at is not None:
        state, words = "done", "done " + local_time(duty.completed_at, zone)
    elif due <= now_ms:
        state, words = "overdue", f"overdue by {duration((now_ms - due) / 1000)}"
    else:
        state = "due_soon" if due - now_ms <= DUE_SOON_MS else "open"
        words = f"due in {duration((due - now_ms) / 1000)}"
    spec = duty_spec(duty.kind)
    return DutyRow(
        id=duty.id,
        kind=duty.kind,
        label=spec.label if spec is not None else duty.kind.replace("_", " "),
        reason=duty.reason.replace("_", " "),
        subject=duty.subject,
        created=local_time(duty.created_at, zone),
        due=local_time(duty.due_at, zone),
        completed=None if duty.completed_at is None else local_time(duty.completed_at, zone),
        state=state,
        when=words,
        rule=duty.rule,
        subject_name=thing_name(duty.subject, names_of(site), zone),
    )


def duty_rows(site: SiteConfig, store: SqlStore, now_ms: int) -> list[DutyRow]:
    """Every duty: overdue first, then by due time; done ones last, newest first."""
    rows = [(d, duty_row(d, site, now_ms)) for d in store.duties(site.site.id)]
    pending = sorted((r for r in rows if r[1].state != "done"), key=lambda r: r[0].due_at)
    done = sorted(
        (r for r in rows if r[1].state == "done"), key=lambda r: r[0].due_at, reverse=True
    )
    return [r for _, r in pending] + [r for _, r in done]


def pressing(rows: list[DutyRow]) -> list[DutyRow]:
    """Duties overdue or due within 48 hours."""
    return [r for r in rows if r.state in ("overdue", "due_soon")]


def open_inspection_duties(site: SiteConfig, store: SqlStore) -> list[Duty]:
    """What an inspection record may name as its duty (others are closed by the site log)."""
    return [
        d
        for d in store.duties(site.site.id)
        if d.kind == INSPECTION.kind and d.completed_at is None
    ]


# --- stations and sensors --------------------------------------------------------------


@dataclass(frozen=True)
class StationRow:
    id: str
    name: str
    state: str  # online | offline | unknown
    battery: str
    disk: str
    backlog: str
    clock: str
    last_status: str
    last_reading: str
    lost: str = "—"  # readings recorded as lost for good (data_gaps, ingest/gaps.py)
    complete: str = "—"  # readings received of those its seqs say it sent (ingest/gaps.py)
    stale: str = ""  # "silent for 3 h 10 min" when no reading came for too long


STALE_FLOOR_MS = 15 * 60_000


def stale_after_ms(station: Station) -> int:
    """How long a station may stay silent: three of its slowest sensor's intervals,
    and never less than 15 minutes (a reading or two may be late on a busy link)."""
    slowest = max((s.interval_s for s in station.sensors), default=0.0)
    return max(STALE_FLOOR_MS, round(3 * slowest * 1000))


def _silent_for(station: Station, newest_ms: int | None, now_ms: int | None) -> str:
    if now_ms is None:
        return ""
    if newest_ms is None:
        return "no reading yet" if station.sensors else ""
    if now_ms - newest_ms <= stale_after_ms(station):
        return ""
    return f"silent for {duration((now_ms - newest_ms) / 1000)}"


def _number(value: float | int | None, unit: str, digits: int = 2) -> str:
    text = short_number(None if value is None else float(value), digits)
    return "—" if text is None else f"{text} {unit}".strip()


def _lost(gaps: int, readings: int) -> str:
    if not gaps:
        return "—"
    return f"{readings:,} lost ({gaps:,} gap{'s' if gaps != 1 else ''})"


def _complete(received: int, expected: int) -> str:
    """Received of expected, as '99.8 % (4,990 of 5,000)': floored, so 100 % is every reading."""
    if expected <= 0:
        return "—"
    tenths = received * 1000 // expected
    return f"{tenths // 10}.{tenths % 10} % ({received:,} of {expected:,})"


def station_rows(site: SiteConfig, store: SqlStore, now_ms: int | None = None) -> list[StationRow]:
    """Each station's last status (battery, disk, backlog, clock) and its newest reading;
    with ``now_ms``, stale when silent too long (:func:`stale_after_ms`)."""
    sid, zone = site.site.id, site.site.zone
    newest = {station: t for station, t, _arrival in store.station_clocks(sid)}
    gaps = store.data_gap_totals(sid)
    complete = store.completeness_totals(sid)
    rows = []
    for station in site.stations:
        report = store.latest_status(sid, station.id)
        clock = "—"
        if report is not None and report.clock_synced is False:
            clock = "not synced"
        elif report is not None and report.clock_offset_s is not None:
            clock = f"{report.clock_offset_s:+.1f} s"
        rows.append(
            StationRow(
                id=station.id,
                name=station.name or station.id,
                state=report.state if report is not None else "unknown",
                battery=_number(report.battery_v if report else None, "V"),
                disk=_number(report.disk_free_mb if report else None, "MB free", 0),
                backlog=_number(report.backlog if report else None, "waiting", 0),
                clock=clock,
                last_status=local_time(report.t, zone) if report is not None else "no status yet",
                last_reading=local_time(newest.get(station.id), zone),
                stale=_silent_for(station, newest.get(station.id), now_ms),
                lost=_lost(*gaps.get(station.id, (0, 0))),
                complete=_complete(*complete.get(station.id, (0, 0))),
            )
        )
    return rows


@dataclass(frozen=True)
class SensorRow:
    id: str
    kind: str
    station: str
    value: str
    at: str


def sensor_rows(site: SiteConfig, store: SqlStore) -> list[SensorRow]:
    rows = []
    for station in site.stations:
        for sensor in station.sensors:
            last = store.latest_reading(site.site.id, sensor.id)
            rows.append(
                SensorRow(
                    id=sensor.id,
                    kind=sensor.kind.replace("_", " "),
                    station=station.id,
                    value="—" if last is None else _number(last[1], sensor.unit, 3),
                    at="no reading yet" if last is None else local_time(last[0], site.site.zone),
                )
            )
    return rows


def newest_reading_ms(site: SiteConfig, store: SqlStore) -> int | None:
    clocks = store.station_clocks(site.site.id)
    return max((t for _s, t, _a in clocks), default=None)


# --- one episode ---------------------------------------------------------------------------


@dataclass(frozen=True)
class TimelineRow:
    at_ms: int
    at: str
    what: str
    detail: str
    kind: str  # opened | escalated | resolved | acknowledged | comment | corrective_action


def timeline(alert: Alert, site: SiteConfig, book: ConsoleBook) -> list[TimelineRow]:
    """Opened, escalations, what people recorded, resolved — in time order."""
    zone = site.site.zone
    rows: list[TimelineRow] = []
    for i, step in enumerate(alert.escalations):
        at = _ms(step.at)
        what = f"opened as {step.severity}" if i == 0 else f"escalated to {step.severity}"
        rows.append(
            TimelineRow(at, local_time(at, zone), what, "", "opened" if i == 0 else "escalated")
        )
    if not alert.escalations:
        at = _ms(alert.opened_at)
        rows.append(
            TimelineRow(at, local_time(at, zone), f"opened as {alert.severity}", "", "opened")
        )
    for note in book.notes(site.site.id, alert.id):
        how = VIA_LABELS.get(note.via, note.via)
        what = {
            NoteKind.ACKNOWLEDGED: f"acknowledged by {note.by} {how}",
            NoteKind.COMMENT: f"comment by {note.by}",
            NoteKind.CORRECTIVE_ACTION: f"corrective action by {note.by}",
        }[note.kind]
        rows.append(
            TimelineRow(note.at_ms, local_time(note.at_ms, zone), what, note.text, note.kind.value)
        )
    if alert.resolved_at is not None:
        at = _ms(alert.resolved_at)
        rows.append(TimelineRow(at, local_time(at, zone), "resolved", "", "resolved"))
    return sorted(rows, key=lambda r: r.at_ms)


@dataclass(frozen=True)
class EvidenceView:
    amount: str  # the registry's "by how much"
    told: list[tuple[str, str]]  # the typed evidence model's fields, in people's words
    detail: list[tuple[str, str]]  # further keys the detector wrote


def evidence_view(alert: Alert, site: SiteConfig) -> EvidenceView:
    zone = site.site.zone
    spec = alert_spec(alert.kind)
    declared: list[str] = []
    amount = ""
    if spec is not None and spec.read_evidence(alert.evidence) is not None:
        declared = [k for k in spec.evidence.model_fields if k in alert.evidence]
        amount = spec.how_much(alert.evidence, zone)
    unit = alert.evidence.get("unit")
    unit = unit if isinstance(unit, str) else ""
    told = [_entry(k, alert.evidence[k], unit, site) for k in declared]
    detail = [
        _entry(k, v, unit, site)
        for k, v in alert.evidence.items()
        if k not in declared and not isinstance(v, dict | list)
    ]
    return EvidenceView(amount, told, detail)


# Key endings that carry their unit: (ending, the unit shown after the value).
_SUFFIXES = (
    ("_m3", "m³"),
    ("_m", "m"),
    ("_mm", "mm"),
    ("_in", "in"),
    ("_ft", "ft"),
    ("_ntu", "NTU"),
    ("_h", "h"),
    ("_v", "V"),
    ("_mb", "MB"),
    ("_pct", "%"),
)
_IN_SITE_UNIT = ("level", "limit", "excess")  # turbidity and water levels, in the sensor's unit


def _entry(key: str, value: Any, unit: str, site: SiteConfig) -> tuple[str, str]:
    """One evidence key and value in people's words: units after numbers, times local,
    durations in hours and minutes, fractions as percent."""
    if key.endswith("_s") and isinstance(value, int | float) and not isinstance(value, bool):
        return key[:-2].replace("_", " "), duration(float(value))
    fraction = key.startswith("fraction") or key.endswith("_fraction")
    if fraction and isinstance(value, float):
        return key.replace("_", " "), f"{short_number(value * 100, 1)} %"
    for ending, shown_unit in _SUFFIXES:
        if key.endswith(ending) and isinstance(value, int | float) and not isinstance(value, bool):
            return key[: -len(ending)].replace("_", " "), f"{_shown(value, site)} {shown_unit}"
    text = _shown(value, site)
    if unit and isinstance(value, float) and any(w in key for w in _IN_SITE_UNIT):
        text = f"{text} {unit}"
    return key.replace("_", " "), text


def _shown(value: Any, site: SiteConfig) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return short_number(value, 3) or "0"
    if isinstance(value, str) and len(value) >= 17 and value[4:5] == "-" and value[10:11] == "T":
        return local_time(value, site.site.zone)
    return str(value)


def site_log_rows(entries: Sequence[SiteLogEntry], site: SiteConfig) -> list[dict[str, str]]:
    """Site-log rows as people read them: the area by its name, a milestone or notice by
    its words ("clearing completed", not ``clearing_completed``), times in the site's zone."""
    zone, names = site.site.zone, names_of(site)
    rows = []
    for e in entries:
        detail = e.detail or ""
        if e.event in (SiteEvent.MILESTONE, SiteEvent.NOTICE) and detail:
            detail = thing_name(detail, names, zone)
        rows.append(
            {
                "at": local_time(e.t, zone),
                "event": e.event.replace("_", " "),
                "area": thing_name(e.area, names, zone) if e.area else "—",
                "by": e.by,
                "detail": detail,
            }
        )
    return rows
