"""Revegetation quality reminders (kinds, reasons, citations and the reading of the law:
siltwatch/detections/revegetation.py).

Each ``seeded`` or ``permanent_cover`` row of an area creates its two duties:
the cover-crop check due at the end of the ``revegetation.cover_check_days``-th
local day after the row, and the survival check due at the end of the first
anniversary of the row's local day (29 February falls on 28 February), opened
30 local days before. An inspection record naming a duty completes it.
"""

from __future__ import annotations

from dataclasses import dataclass

from analytics.calendar import SiteCalendar, anniversary
from analytics.cited import Cited
from analytics.detector import Context, Detector
from analytics.events import Inspection, SiteLogEntry
from analytics.inspection_overdue import DutyNote, OverdueWatch, OverdueWords
from analytics.timers import Tag, TimerTag
from analytics.timeutil import iso
from siltwatch.config import SiteConfig
from siltwatch.detections.revegetation import CHECK, SURVIVAL, RevegetationReason
from siltwatch.vocabulary import SiteEvent

# An area is revegetated by seeding (the ``seeded`` event of issue 21, part 1) or by
# permanent cover; the name is spelled here so this module works before and after it.
REVEGETATED = frozenset({"seeded", SiteEvent.PERMANENT_COVER})

SURVIVAL_WORDS = OverdueWords(
    SURVIVAL.overdue_kind,
    "Revegetation survival check",
    "no inspection record names it",
    "Inspect the area's cover crop (75 % survival) and record it, naming the duty id; "
    "where it fell short, revegetate again.",
    "Revegetation survival checked",
)
CHECK_WORDS = OverdueWords(
    CHECK.overdue_kind,
    "Cover-crop check",
    "no inspection record names it",
    "Check that the mulch stays until the cover crop covers 90 % of the seeded area, and "
    "record it, naming the duty id.",
    "Cover crop checked",
    officer=False,  # siltwatch's own date: the site's people only
)


@dataclass(frozen=True, slots=True)
class CheckDue(TimerTag):
    """The cover-crop check duty's deadline."""

    word = "check"
    duty_id: str


@dataclass(frozen=True, slots=True)
class SurvivalDue(TimerTag):
    """The survival check duty's deadline."""

    word = "survival"
    duty_id: str


@dataclass(frozen=True, slots=True)
class SurvivalOpens(TimerTag):
    """The survival check of ``area`` (revegetated at ``since``, due ``due``) opens."""

    word = "open"
    area: str
    since: int
    due: int


class RevegetationDetector(Detector):
    """The two reminders of each revegetation of an area."""

    name = "revegetation"

    def __init__(
        self, site: SiteConfig, survival: Cited, check: Cited, calendar: SiteCalendar
    ) -> None:
        site_name = site.site.name or site.site.id
        self.areas = {a.id for a in site.areas}
        self.survival, self.check = survival, check
        self.survival_watch = OverdueWatch(site_name, calendar, SURVIVAL_WORDS)
        self.check_watch = OverdueWatch(site_name, calendar, CHECK_WORDS)

    @property
    def calendar(self) -> SiteCalendar:
        return self.survival_watch.calendar

    def on_site_log(self, entry: SiteLogEntry, ctx: Context) -> None:
        if entry.event not in REVEGETATED or entry.area not in self.areas:
            return
        area, t, cal = entry.area, entry.t, self.calendar
        assert area is not None
        since = {"area": area, "revegetated_at": iso(t), "event": entry.event}
        check_note = DutyNote(
            label=f"cover-crop check of area {area}: mulch kept until the crop covers 90 % "
            "of the seeded area",
            cite=self.check.cite,
            evidence=since,
        )
        due = cal.end_of_calendar_days(t, self.check.count)
        rec = self.check_watch.create(
            ctx,
            CHECK.kind,
            RevegetationReason.COVER_CROP_90,
            area,
            (t, due),
            check_note,
        )
        ctx.schedule(self, due, CheckDue(rec.id))
        survival_due = cal.end_of_day(anniversary(cal.local_date(t), self.survival.count))
        opens = max(t, self.survival_watch.reminder_opens(survival_due))
        ctx.schedule(self, opens, SurvivalOpens(area, t, survival_due))

    def on_timer(self, at: int, tag: Tag, ctx: Context) -> None:
        if isinstance(tag, CheckDue):
            self.check_watch.check(tag.duty_id, at, ctx)
        elif isinstance(tag, SurvivalDue):
            self.survival_watch.check(tag.duty_id, at, ctx)
        elif isinstance(tag, SurvivalOpens):
            area, since, due = tag.area, tag.since, tag.due
            note = DutyNote(
                label=f"survival check of area {area}: at least 75 % of the cover crop alive "
                f"throughout the year since its revegetation on "
                f"{self.calendar.local_date(int(since)).isoformat()}",
                cite=self.survival.cite,
                evidence={"area": area, "revegetated_at": iso(int(since))},
            )
            rec = self.survival_watch.create(
                ctx,
                SURVIVAL.kind,
                RevegetationReason.SURVIVAL_75,
                area,
                (at, int(due)),
                note,
            )
            ctx.schedule(self, due, SurvivalDue(rec.id))

    def on_inspection(self, inspection: Inspection, ctx: Context) -> None:
        if inspection.duty is None:
            return  # a particular check: the record names the duty
        rec = ctx.duties.records.get(inspection.duty)
        if rec is None or rec.created_at > inspection.t:
            return
        if rec.kind == SURVIVAL.kind:
            self.survival_watch.complete(rec, inspection.t, inspection.inspector, ctx)
        elif rec.kind == CHECK.kind:
            self.check_watch.complete(rec, inspection.t, inspection.inspector, ctx)

    def on_finish(self, end: int, ctx: Context) -> None:
        self.survival_watch.refresh(end, ctx)
        self.check_watch.refresh(end, ctx)


def build(site: SiteConfig, ctx: Context) -> list[Detector]:
    """A detector when the site's packs ask for the checks, on a major project."""
    survival = Cited.of(ctx.rules.get("revegetation.survival_years"))
    check = Cited.of(ctx.rules.get("revegetation.cover_check_days"))
    if survival is None or check is None or site.site.project == "minor":
        return []
    calendar = SiteCalendar.from_site(site, ctx.rules)
    return [RevegetationDetector(site, survival, check, calendar)]
