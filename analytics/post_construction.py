"""The post-construction calendar (kinds, reasons and citations: siltwatch/detections/post_construction.py).

Three ``milestone`` rows of the site log start it, each the first of its
name (later ones change nothing). Each duty the site's packs ask for is a
``post_construction`` duty, subject the site, due at the end of a local day of
the site's calendar:

- ``annual_report`` (``post_construction.annual_report_years``, Lake George 1),
  from ``construction_completed``: the k-th report is due at the end of the
  k-th anniversary of the day construction was completed (a 29 February falls
  on 28 February), every year;
- ``guarantee_inspection`` (``post_construction.guarantee_inspection_years``:
  Lake George 2, Big Flats 1), from ``final_acceptance``: the guarantee stays
  "at least two [one] year(s) after final acceptance ... and until a two-year
  [one year] inspection has been conducted" (§148-13 A; 17.37.120 A), so the
  inspection is due at the end of that anniversary of the town's final
  acceptance, once; construction completed alone owes none (the town accepts
  later, and counting from completion would call it overdue before the law does);
- ``engineer_inspection`` (``post_construction.engineer_inspection_years``, Big
  Flats 5), from the first of ``maintenance_agreement`` and
  ``construction_completed``: Schedule B (4), the maintenance agreement, wants
  an inspection "not less than once in every five year period" and does not
  say of what; the period runs from the agreement, or from the completion of
  the facilities if that comes first (the earlier deadline: the reading that
  protects the water). Once one is done, the next is due at the same interval
  after the day of that inspection;
- ``engineer_report`` (``post_construction.engineer_report_days``, Big Flats
  30): created by the inspection that completes an engineer inspection, due at
  the end of the 30th local day after it;
- ``as_built`` (``post_construction.as_built``: Lake George §148-12 B, Big Flats
  17.37.110 B): "as-built plans for any stormwater management practices ...
  after final construction is completed" (Lake George: "if there were any
  changes from the approved plan", ``post_construction.as_built_if_changed``:
  only once a ``plan_changed`` row is in the log). Created at
  ``construction_completed`` (or at the first ``plan_changed`` row, if later),
  due at the end of the ``post_construction.as_built_days``-th local day after
  (siltwatch's cited default: the ordinances name no deadline), completed by an
  ``as_built`` row of the site log (the plans submitted).

A duty whose period is counted in years opens as a reminder 30 local days
before its deadline (``created_at``: the start of that local day), not at the
milestone; an inspection record naming the duty (``Inspection.duty``, the
``duty`` column of the inspections CSV) completes it, as in
analytics/inspections.py — an inspection dated before the duty exists cannot.
An inspection naming no duty (a routine site inspection) completes none of
them: each is a particular inspection (the town's, a Professional Engineer's)
or a report, which the record must name. A duty past its deadline raises
``post_construction_overdue`` (analytics/inspection_overdue.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta

from analytics.calendar import SiteCalendar, anniversary
from analytics.cited import Cited
from analytics.detector import Context, Detector
from analytics.events import Inspection, SiteLogEntry
from analytics.inspection_overdue import DutyNote, OverdueWatch, OverdueWords
from analytics.timers import DutyDue, Tag, TimerTag
from analytics.timeutil import iso
from siltwatch.config import SiteConfig
from siltwatch.detections.post_construction import POST_CONSTRUCTION, PostConstructionReason
from siltwatch.rulepacks import Rules
from siltwatch.vocabulary import Milestone, SiteEvent

Reason = PostConstructionReason
KIND = POST_CONSTRUCTION.kind
WORDS = OverdueWords(
    POST_CONSTRUCTION.overdue_kind,
    "Post-construction duty",
    "no inspection record names it",
    "Carry it out and record it in the inspections record, naming the duty id.",
    "Post-construction duty done",
)
AS_BUILT_WORDS = OverdueWords(
    POST_CONSTRUCTION.overdue_kind,
    "As-built plans",
    "no as_built row of the site log records them submitted",
    "Submit the certified as-built plans to the town and record it in the site log "
    "(event as_built).",
    "As-built plans submitted",
)


@dataclass(frozen=True, slots=True)
class ReminderOpens(TimerTag):
    """The ``n``-th duty of ``reason`` opens (30 local days before its deadline ``due``)."""

    word = "open"
    reason: Reason
    n: int
    due: int


@dataclass(frozen=True)
class CalendarRules:
    """The periods the site's packs set (None: that duty is not owed here)."""

    annual_report: Cited | None
    guarantee: Cited | None
    engineer: Cited | None
    engineer_report: Cited | None
    as_built: Cited | None = None  # the days after completion (None: not owed)
    as_built_if_changed: bool = False  # owed only when the plan was departed from

    def any(self) -> bool:
        periods = (self.annual_report, self.guarantee, self.engineer, self.as_built)
        return any(p is not None for p in periods)


class PostConstructionDetector(Detector):
    """Plans, opens, completes and watches the post-construction duties."""

    name = "post-construction"

    def __init__(self, site: SiteConfig, rules: CalendarRules, calendar: SiteCalendar) -> None:
        self.site_id = site.site.id
        self.rules = rules
        self.watch = OverdueWatch(site.site.name or site.site.id, calendar, WORDS)
        self.plans_watch = OverdueWatch(site.site.name or site.site.id, calendar, AS_BUILT_WORDS)
        self.completed_at: int | None = None  # the construction_completed milestone
        self.completed_day: date | None = None  # its local day: anniversaries count from it
        self.accepted_at: int | None = None  # the final_acceptance milestone
        self.agreed_at: int | None = None  # the maintenance_agreement milestone
        self.engineer_from: tuple[str, int] | None = None  # what the engineer period counts from
        self.engineer_done = 0  # engineer inspections completed
        self.changed_at: int | None = None  # the first plan_changed row
        self.as_built_id: str | None = None  # the as-built duty, once created
        self.as_built_done = False

    @property
    def calendar(self) -> SiteCalendar:
        return self.watch.calendar

    # --- engine callbacks ----------------------------------------------------------

    def on_site_log(self, entry: SiteLogEntry, ctx: Context) -> None:
        if entry.event == SiteEvent.PLAN_CHANGED and self.changed_at is None:
            self.changed_at = entry.t
            self._as_built(entry.t, ctx)
        elif entry.event == SiteEvent.AS_BUILT:
            self._as_built_submitted(entry, ctx)
        if entry.event != SiteEvent.MILESTONE:
            return
        t, rules = entry.t, self.rules
        day = self.calendar.local_date(t)
        if entry.detail == Milestone.CONSTRUCTION_COMPLETED and self.completed_at is None:
            self.completed_at, self.completed_day = t, day  # the first completion counts
            if rules.annual_report is not None:
                self._plan(Reason.ANNUAL_REPORT, 1, self._after(day, rules.annual_report), t, ctx)
            self._engineer_from(Milestone.CONSTRUCTION_COMPLETED, t, ctx)
            self._as_built(t, ctx)
        elif entry.detail == Milestone.FINAL_ACCEPTANCE and self.accepted_at is None:
            self.accepted_at = t
            if rules.guarantee is not None:
                due = self._after(day, rules.guarantee)
                self._plan(Reason.GUARANTEE_INSPECTION, 1, due, t, ctx)
        elif entry.detail == Milestone.MAINTENANCE_AGREEMENT and self.agreed_at is None:
            self.agreed_at = t
            self._engineer_from(Milestone.MAINTENANCE_AGREEMENT, t, ctx)

    def _as_built(self, t: int, ctx: Context) -> None:
        """The as-built plans, owed once construction is completed (and, where the pack
        says so, the plan was changed): due ``as_built_days`` local days after ``t``."""
        rule = self.rules.as_built
        if rule is None or self.as_built_id is not None or self.as_built_done:
            return
        if self.completed_at is None:
            return
        if self.rules.as_built_if_changed and self.changed_at is None:
            return
        changed = "" if self.changed_at is None else ", the approved plan having been changed"
        label = (
            "as-built plans of the stormwater management practices, certified, submitted to "
            f"the town after final construction ({self._since(Reason.AS_BUILT)}{changed}), "
            f"due within {rule.count} days (siltwatch's default: the ordinance names none)"
        )
        due = self.calendar.end_of_calendar_days(t, rule.count)
        self.as_built_id = self._create(Reason.AS_BUILT, t, due, rule, label, ctx)

    def _as_built_submitted(self, entry: SiteLogEntry, ctx: Context) -> None:
        """An ``as_built`` row: the plans submitted (before the duty exists: nothing owed)."""
        self.as_built_done = True
        if self.as_built_id is None:
            return
        rec = ctx.duties.records.get(self.as_built_id)
        if rec is not None:
            self.plans_watch.complete(rec, entry.t, entry.by, ctx)

    def _engineer_from(self, milestone: Milestone, t: int, ctx: Context) -> None:
        """Schedule B (4): the first engineer inspection, from whichever of the
        agreement and the completion comes first (the later one changes nothing)."""
        engineer = self.rules.engineer
        if engineer is None or self.engineer_from is not None:
            return
        self.engineer_from = (milestone.value, t)
        due = self._after(self.calendar.local_date(t), engineer)
        self._plan(Reason.ENGINEER_INSPECTION, 1, due, t, ctx)

    def on_inspection(self, inspection: Inspection, ctx: Context) -> None:
        if inspection.duty is None:
            return  # a site inspection completes none of these (see the module docstring)
        t = inspection.t
        rec = ctx.duties.records.get(inspection.duty)
        if rec is None or rec.kind != KIND or rec.created_at > t or rec.reason == Reason.AS_BUILT:
            return  # the as-built plans are completed by the site log's as_built row
        if not self.watch.complete(rec, t, inspection.inspector, ctx):
            return
        engineer, report = self.rules.engineer, self.rules.engineer_report
        if rec.reason == Reason.ENGINEER_INSPECTION and engineer is not None:
            day = self.calendar.local_date(t)
            if report is not None:
                label = (
                    f"the engineer's written report of the inspection of {day.isoformat()} "
                    f"to the town within {report.count} days"
                )
                due = self.calendar.end_of_calendar_days(t, report.count)
                self._create(Reason.ENGINEER_REPORT, t, due, report, label, ctx)
            done = self.engineer_done = self.engineer_done + 1
            self._plan(Reason.ENGINEER_INSPECTION, done + 1, self._after(day, engineer), t, ctx)

    def on_timer(self, at: int, tag: Tag, ctx: Context) -> None:
        if isinstance(tag, DutyDue):  # a deadline: the tag names the duty
            rest = tag.duty_id
            watch = self.plans_watch if rest in self.plans_watch.notes else self.watch
            watch.check(rest, at, ctx)
        elif isinstance(tag, ReminderOpens):
            self._open(tag.reason, tag.n, tag.due, at, ctx)

    def on_finish(self, end: int, ctx: Context) -> None:
        self.watch.refresh(end, ctx)
        self.plans_watch.refresh(end, ctx)

    # --- planning ---------------------------------------------------------------------

    def _after(self, day: date, period: Cited) -> int:
        """The deadline ``period`` years after ``day``: the end of that anniversary."""
        return self.calendar.end_of_day(anniversary(day, period.count))

    def _plan(self, reason: Reason, n: int, due: int, after: int, ctx: Context) -> None:
        """Open the ``n``-th duty of ``reason`` 30 local days before its deadline (at
        ``after`` if that is later)."""
        opens = self.watch.reminder_opens(due)
        if opens <= after:
            self._open(reason, n, due, after, ctx)
        else:
            ctx.schedule(self, opens, ReminderOpens(reason, n, due))

    def _open(self, reason: Reason, n: int, due: int, at: int, ctx: Context) -> None:
        rules, since = self.rules, self._since(reason)
        if reason == Reason.ANNUAL_REPORT and rules.annual_report is not None:
            label = (
                f"annual report {n} to the town on the operation and maintenance of the "
                f"stormwater facilities in the year to {self._day_of(due)} ({since})"
            )
            self._create(reason, at, due, rules.annual_report, label, ctx)
            day = self.completed_day
            if day is not None:  # the report recurs every year, counted from the completion
                years = (n + 1) * rules.annual_report.count
                next_due = self.calendar.end_of_day(anniversary(day, years))
                self._plan(reason, n + 1, next_due, at, ctx)
        elif reason == Reason.GUARANTEE_INSPECTION and rules.guarantee is not None:
            label = (
                f"the {rules.guarantee.count}-year inspection of the stormwater facilities "
                f"before the town releases the performance guarantee ({since})"
            )
            self._create(reason, at, due, rules.guarantee, label, ctx)
        elif reason == Reason.ENGINEER_INSPECTION and rules.engineer is not None:
            label = (
                f"engineer inspection {n}: the stormwater control measures inspected by a "
                f"licensed Professional Engineer at least once in every "
                f"{rules.engineer.count}-year period ({since})"
            )
            self._create(reason, at, due, rules.engineer, label, ctx)

    def _create(
        self, reason: Reason, at: int, due: int, rule: Cited, label: str, ctx: Context
    ) -> str:
        completed = self.completed_at
        evidence: dict[str, str | None] = {
            "construction_completed": None if completed is None else iso(completed)
        }
        if reason == Reason.GUARANTEE_INSPECTION and self.accepted_at is not None:
            evidence["final_acceptance"] = iso(self.accepted_at)
        engineer = (Reason.ENGINEER_INSPECTION, Reason.ENGINEER_REPORT)
        if reason in engineer and self.agreed_at is not None:
            evidence["maintenance_agreement"] = iso(self.agreed_at)
        note = DutyNote(label=label, cite=rule.cite, evidence=evidence)
        if reason == Reason.AS_BUILT and self.changed_at is not None:
            evidence["plan_changed"] = iso(self.changed_at)
        watch = self.plans_watch if reason == Reason.AS_BUILT else self.watch
        rec = watch.create(ctx, KIND, reason, self.site_id, (at, due), note)
        ctx.schedule(self, due, DutyDue(rec.id))
        return rec.id

    # --- days ---------------------------------------------------------------------------

    def _day_of(self, due: int) -> str:
        """The local day a deadline ends (it is the midnight after that day)."""
        return (self.calendar.local_date(due) - timedelta(days=1)).isoformat()

    def _since(self, reason: Reason) -> str:
        """What the duty's years count from, in words."""
        cal = self.calendar
        if reason == Reason.GUARANTEE_INSPECTION and self.accepted_at is not None:
            return f"final acceptance by the town on {cal.local_date(self.accepted_at).isoformat()}"
        if reason == Reason.ENGINEER_INSPECTION and self.engineer_from is not None:
            what, at = self.engineer_from
            words = (
                "maintenance agreement signed"
                if what == Milestone.MAINTENANCE_AGREEMENT
                else ("construction completed")
            )
            return f"{words} on {cal.local_date(at).isoformat()}"
        day = self.completed_day
        return "construction completed" + ("" if day is None else f" on {day.isoformat()}")


def as_built_rule(rules: Rules) -> Cited | None:
    """The as-built duty's days, cited to the town's section and siltwatch's default."""
    owed, days = (
        rules.get("post_construction.as_built"),
        rules.get("post_construction.as_built_days"),
    )
    if owed is None or owed.value is not True or days is None:
        return None
    return Cited(float(days.value), f"{owed.cite()}; {days.cite()}")


def build(site: SiteConfig, ctx: Context) -> list[Detector]:
    """A detector when the site's packs set a post-construction duty."""
    rules = ctx.rules
    found = CalendarRules(
        annual_report=Cited.of(rules.get("post_construction.annual_report_years")),
        guarantee=Cited.of(rules.get("post_construction.guarantee_inspection_years")),
        engineer=Cited.of(rules.get("post_construction.engineer_inspection_years")),
        engineer_report=Cited.of(rules.get("post_construction.engineer_report_days")),
        as_built=as_built_rule(rules),
        as_built_if_changed=bool(
            (changed := rules.get("post_construction.as_built_if_changed")) is not None
            and changed.value is True
        ),
    )
    if not found.any():
        return []
    return [PostConstructionDetector(site, found, SiteCalendar.from_site(site, rules))]
