"""Violations from the site log (kinds, reasons and citations: siltwatch/detections/violations.py).

A ``violation`` row (the town served a notice of violation or a stop-work
order; detail ``<id> [remedy by YYYY-MM-DD] <text>``, parsed by
:func:`siltwatch.schema.parse_violation`) opens, where the site's packs set
``violation.notice``:

- the alert ``violation_open`` (subject: the violation id), critical, at the
  time of service. A timer every 7 days (the same local wall time, so a DST
  change does not shift the count) refreshes its message and evidence with the
  full weeks it has continued; where ``violation.weekly_count`` is set (Big
  Flats 17.37.130 D) they also count the separate violations so far: the first
  and one more for each full week;
- a ``remedy`` duty (reason ``notice_of_violation``) due at the end of the
  local remedy day, when the row gives one and the packs set
  ``violation.remedy_schedule`` (a remedy day before the day of service is read
  as the day of service); past it, ``remedy_overdue`` (analytics/inspection_overdue.py);
- an ``appeal`` duty due at the end of the ``violation.appeal_days``-th local day
  after service (Lake George: 15). It is a reminder to the operator: the
  correction completes it while the appeal window is still open (there is then
  nothing left to appeal); otherwise it stays open past its deadline — the right
  to appeal lapsed — and no alert is raised, since a missed appeal breaks no rule.

While any violation is open and the packs set ``violation.stabilization_only``,
each row of work (``active``, ``disturbed``, ``cleared``, ``graded``) raises
``work_during_violation`` for its area (one episode per area, refreshed by
further rows); cover rows are stabilization and change nothing. A
``violation_corrected`` row naming the violation resolves ``violation_open``
and completes its duties; the work alerts resolve when no violation is left
open. A second ``violation`` row with the id of an open one, a correction of
no open violation and a row whose detail does not parse (a capture replayed
without ingest's checks) are counted and change nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any, TypeVar

from analytics.calendar import SiteCalendar
from analytics.cited import Cited
from analytics.detector import Context, Detector
from analytics.events import SiteLogEntry
from analytics.inspection_overdue import DutyNote, OverdueWatch, OverdueWords
from analytics.timers import DutyDue, Tag, TimerTag
from analytics.timeutil import MS_PER_DAY, iso, to_ms
from siltwatch.config import SiteConfig
from siltwatch.detections.violations import (
    APPEAL,
    REMEDY,
    VIOLATION_OPEN,
    WORK_DURING_VIOLATION,
)
from siltwatch.detections.violations import ViolationReason as Reason
from siltwatch.schema import parse_violation, parse_violation_corrected
from siltwatch.timefmt import local_time
from siltwatch.vocabulary import Severity, SiteEvent

T = TypeVar("T")

WORDS = OverdueWords(
    REMEDY.overdue_kind,
    "Remedy",
    "the town's acceptance of the correction has not been recorded in the site log",
    "Complete the remedial measures the notice sets and record the town's acceptance "
    "(violation_corrected) in the site log.",
    "Remedy done",
)
WORK = frozenset({SiteEvent.ACTIVE, SiteEvent.DISTURBED, SiteEvent.CLEARED, SiteEvent.GRADED})
WEEK_DAYS = 7


@dataclass(frozen=True, slots=True)
class ViolationWeek(TimerTag):
    """Another week of the violation served at ``served_at`` (a separate violation each week)."""

    word = "week"
    violation: str
    served_at: int


@dataclass(frozen=True)
class ViolationRules:
    """What the site's packs say about violations (None: that rule does not apply here)."""

    notice: Cited | None
    remedy: Cited | None
    appeal: Cited | None
    weekly: Cited | None
    stabilization_only: Cited | None


@dataclass
class OpenViolation:
    """A violation served and not yet corrected."""

    id: str
    served_at: int
    by: str
    area: str | None
    text: str
    remedy_by: date | None
    remedy_duty: str | None = None
    appeal_duty: str | None = None


class ViolationDetector(Detector):
    """Keeps the open violations, their weeks, duties and the stabilization-only rule."""

    name = "violations"

    def __init__(self, site: SiteConfig, rules: ViolationRules, calendar: SiteCalendar) -> None:
        self.site_name = site.site.name or site.site.id
        self.rules = rules
        self.areas = {a.id for a in site.areas}
        self.watch = OverdueWatch(self.site_name, calendar, WORDS)
        self.open: dict[str, OpenViolation] = {}  # violation id -> it, in order of service
        self.work_areas: list[str] = []  # areas with an open work_during_violation
        self.ignored = 0  # rows that changed nothing (see the module docstring)

    @property
    def calendar(self) -> SiteCalendar:
        return self.watch.calendar

    # --- engine callbacks ----------------------------------------------------------

    def on_site_log(self, entry: SiteLogEntry, ctx: Context) -> None:
        if entry.event == SiteEvent.VIOLATION:
            self._served(entry, ctx)
        elif entry.event == SiteEvent.VIOLATION_CORRECTED:
            self._corrected(entry, ctx)
        elif entry.event in WORK and self.open and self.rules.stabilization_only is not None:
            self._work(entry, ctx)

    def on_timer(self, at: int, tag: Tag, ctx: Context) -> None:
        if isinstance(tag, DutyDue):  # a remedy deadline: the tag names the duty
            self.watch.check(tag.duty_id, at, ctx)
        elif isinstance(tag, ViolationWeek):
            v = self.open.get(tag.violation)
            if v is not None and v.served_at == tag.served_at:
                self._week(v, at, ctx)

    def on_finish(self, end: int, ctx: Context) -> None:
        self.watch.refresh(end, ctx)

    # --- service and correction ----------------------------------------------------

    def _parsed(self, parse: Callable[[str], T], entry: SiteLogEntry) -> T | None:
        """The row's detail as ``parse`` reads it; None, and the row counted as
        ignored, when it does not read (a malformed row changes nothing)."""
        try:
            return parse(entry.detail)
        except ValueError:
            self.ignored += 1
            return None

    def _served(self, entry: SiteLogEntry, ctx: Context) -> None:
        notice = self._parsed(parse_violation, entry)
        if notice is None:
            return
        if notice.id in self.open:
            self.ignored += 1  # served again while open: the first service binds
            return
        t = entry.t
        area = entry.area if entry.area in self.areas else None
        v = OpenViolation(notice.id, t, entry.by, area, notice.text, notice.remedy_by)
        self.open[v.id] = v
        if notice.remedy_by is not None and self.rules.remedy is not None:
            v.remedy_duty = self._remedy(v, notice.remedy_by, self.rules.remedy, ctx)
        if self.rules.appeal is not None:
            days = int(self.rules.appeal.value)
            due = self.calendar.end_of_calendar_days(t, days)
            rec = ctx.duties.create(
                kind=APPEAL.kind,
                reason=Reason.NOTICE_OF_VIOLATION,
                subject=v.id,
                created_at=t,
                due_at=due,
                rule=self.rules.appeal.cite,
            )
            v.appeal_duty = rec.id
        ctx.alerts.open(
            VIOLATION_OPEN.kind,
            v.id,
            t,
            Severity.CRITICAL,
            rule=self._open_cite(),
            message=self._open_message(v, t, ctx),
            evidence=self._open_evidence(v, t, ctx),
        )
        ctx.schedule(self, self._week_mark(t, 1), ViolationWeek(v.id, t))

    def _remedy(self, v: OpenViolation, day: date, rule: Cited, ctx: Context) -> str:
        cal = self.calendar
        due = cal.end_of_day(max(day, cal.local_date(v.served_at)))
        note = DutyNote(
            label=f"the remedy of violation {v.id} by {day.isoformat()}",
            cite=rule.cite,
            evidence={"violation": v.id, "served_at": iso(v.served_at)},
        )
        span = (v.served_at, due)
        rec = self.watch.create(ctx, REMEDY.kind, Reason.NOTICE_OF_VIOLATION, v.id, span, note)
        ctx.schedule(self, due, DutyDue(rec.id))
        return rec.id

    def _corrected(self, entry: SiteLogEntry, ctx: Context) -> None:
        vid = self._parsed(parse_violation_corrected, entry)
        if vid is None:
            return
        v = self.open.pop(vid, None)
        if v is None:
            self.ignored += 1
            return
        t = entry.t
        weeks = self._weeks(v.served_at, t)
        counted = self._counted(weeks)
        message = (
            f"Violation {v.id} at {self.site_name} corrected: the town accepted the correction "
            f"on {self._local(t)} (recorded by {entry.by}), {self._weeks_words(weeks)} after "
            f"its service on {self._local(v.served_at)}{counted}."
        )
        evidence = self._open_evidence(v, t, ctx) | {
            "corrected_at": iso(t),
            "corrected_by": entry.by,
        }
        ctx.alerts.resolve(VIOLATION_OPEN.kind, v.id, t, message=message, evidence=evidence)
        if v.remedy_duty is not None:
            rec = ctx.duties.records.get(v.remedy_duty)
            if rec is not None:
                self.watch.complete(rec, t, f"the town's acceptance recorded by {entry.by}", ctx)
        if v.appeal_duty is not None:
            rec = ctx.duties.records.get(v.appeal_duty)
            if rec is not None and t <= rec.due_at:  # after its deadline the right lapsed
                ctx.duties.complete(rec.id, t, entry.by)
        if not self.open:
            self._work_ends(v, t, entry.by, ctx)

    # --- weeks ------------------------------------------------------------------------

    def _week(self, v: OpenViolation, at: int, ctx: Context) -> None:
        weeks = self._weeks(v.served_at, at)
        ctx.alerts.update(
            VIOLATION_OPEN.kind,
            v.id,
            at,
            message=self._open_message(v, at, ctx),
            evidence=self._open_evidence(v, at, ctx),
        )
        ctx.schedule(
            self, self._week_mark(v.served_at, weeks + 1), ViolationWeek(v.id, v.served_at)
        )

    def _week_mark(self, served: int, n: int) -> int:
        """The instant ``n`` weeks after ``served``, at the same local wall time."""
        return to_ms(self.calendar.local(served) + timedelta(days=WEEK_DAYS * n))

    def _weeks(self, served: int, now: int) -> int:
        """Full weeks from ``served`` to ``now`` (local wall time)."""
        n = max(0, (now - served) // (WEEK_DAYS * MS_PER_DAY))
        while self._week_mark(served, n + 1) <= now:
            n += 1
        while n > 0 and self._week_mark(served, n) > now:
            n -= 1
        return n

    def _counted(self, weeks: int) -> str:
        """The separate violations so far, where each week's continuation is one."""
        weekly = self.rules.weekly
        if weekly is None:
            return ""
        return (
            f"; {weeks + 1} separate violation(s) under {weekly.cite} (each week's continued "
            "violation is a separate additional violation)"
        )

    @staticmethod
    def _weeks_words(weeks: int) -> str:
        return "less than a week" if weeks == 0 else f"{weeks} full week(s)"

    # --- the alert's words ------------------------------------------------------------

    def _open_cite(self) -> str:
        cites = [r.cite for r in (self.rules.notice, self.rules.weekly) if r is not None]
        return "; ".join(dict.fromkeys(cites))

    def _open_message(self, v: OpenViolation, now: int, ctx: Context) -> str:
        rules = self.rules
        where = f" (area {v.area})" if v.area else ""
        what = f": {v.text}" if v.text else ""
        weeks = self._weeks(v.served_at, now)
        parts = [
            f"Violation {v.id} served at {self.site_name} on {self._local(v.served_at)} "
            f"(recorded by {v.by}){where}{what}.",
            f"As of {self._local(now)} it has continued {self._weeks_words(weeks)}"
            f"{self._counted(weeks)}.",
        ]
        if rules.stabilization_only is not None:
            parts.append(
                "No further work may be done except site stabilization until the town accepts "
                f"the correction ({rules.stabilization_only.cite})."
            )
        remedy = ctx.duties.records.get(v.remedy_duty or "")
        if remedy is not None:
            parts.append(f"The remedy is due by {self._local(remedy.due_at)} ({remedy.rule}).")
        appeal = ctx.duties.records.get(v.appeal_duty or "")
        if appeal is not None and rules.appeal is not None:
            parts.append(
                f"An appeal may be filed within {rules.appeal.value:g} days of service, by "
                f"{self._local(appeal.due_at)} ({appeal.rule})."
            )
        parts.append("Record the town's acceptance of the correction in the site log.")
        return " ".join(parts)

    def _open_evidence(self, v: OpenViolation, now: int, ctx: Context) -> dict[str, Any]:
        weeks = self._weeks(v.served_at, now)
        remedy = ctx.duties.records.get(v.remedy_duty or "")
        appeal = ctx.duties.records.get(v.appeal_duty or "")
        return {
            "violation": v.id,
            "served_at": iso(v.served_at),
            "weeks": weeks,
            "violations": None if self.rules.weekly is None else weeks + 1,
            "as_of": iso(now),
            "area": v.area,
            "detail": v.text,
            "by": v.by,
            "remedy_due_at": None if remedy is None else iso(remedy.due_at),
            "appeal_due_at": None if appeal is None else iso(appeal.due_at),
        }

    # --- stabilization only -------------------------------------------------------------

    def _work(self, entry: SiteLogEntry, ctx: Context) -> None:
        rule = self.rules.stabilization_only
        area = entry.area
        if rule is None or area is None:
            return
        t, ids = entry.t, list(self.open)
        episode = ctx.alerts.get_open(WORK_DURING_VIOLATION.kind, area)
        rows = 1 if episode is None else int(episode.evidence.get("rows", 0)) + 1
        evidence = {
            "area": area,
            "event": entry.event,
            "at": iso(t),
            "by": entry.by,
            "violations": ids,
            "rows": rows,
            "first_at": iso(t) if episode is None else episode.evidence.get("first_at"),
        }
        message = (
            f"Work recorded at {self.site_name} while violation {', '.join(ids)} is open: "
            f"{entry.event} in area {area} on {self._local(t)} (recorded by {entry.by})"
            + (f"; {rows} rows of work during the violation so far" if rows > 1 else "")
            + f". Under {rule.cite} no further work may be done except site stabilization "
            "until the town accepts the correction. Stop the work, stabilize the site, and "
            "record the town's acceptance in the site log."
        )
        if episode is None:
            ctx.alerts.open(
                WORK_DURING_VIOLATION.kind,
                area,
                t,
                Severity.CRITICAL,
                rule=rule.cite,
                message=message,
                evidence=evidence,
            )
            self.work_areas.append(area)
        else:
            ctx.alerts.update(
                WORK_DURING_VIOLATION.kind, area, t, message=message, evidence=evidence
            )

    def _work_ends(self, last: OpenViolation, t: int, by: str, ctx: Context) -> None:
        """No violation is open any more: work is allowed again."""
        for area in self.work_areas:
            episode = ctx.alerts.get_open(WORK_DURING_VIOLATION.kind, area)
            if episode is None:
                continue
            message = (
                f"Work at {self.site_name} is allowed again: the town accepted the correction "
                f"of violation {last.id} on {self._local(t)} (recorded by {by}), and no "
                f"violation is open. Work in area {area} had been recorded during it."
            )
            evidence = episode.evidence | {"corrected_at": iso(t)}
            ctx.alerts.resolve(
                WORK_DURING_VIOLATION.kind, area, t, message=message, evidence=evidence
            )
        self.work_areas = []

    def _local(self, t: int) -> str:
        return local_time(t, self.calendar.zone, weekday=True)


def build(site: SiteConfig, ctx: Context) -> list[Detector]:
    """A detector when the site's packs say the town serves notices of violation."""
    rules = ctx.rules
    found = ViolationRules(
        notice=Cited.of(rules.get("violation.notice")),
        remedy=Cited.of(rules.get("violation.remedy_schedule")),
        appeal=Cited.of(rules.get("violation.appeal_days")),
        weekly=Cited.of(rules.get("violation.weekly_count")),
        stabilization_only=Cited.of(rules.get("violation.stabilization_only")),
    )
    if found.notice is None:
        return []
    return [ViolationDetector(site, found, SiteCalendar.from_site(site, rules))]
