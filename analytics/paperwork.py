"""Paperwork before the first disturbance (kinds and citations: siltwatch/detections/paperwork.py).

The site log records the paperwork (a ``certification`` row per contractor, a
``plan_on_site`` row, a ``notice`` of ``start_of_development``, a
``plan_approved`` row) and the work. At
the first row of work, each requirement the site's packs set and the log does
not yet hold opens ``paperwork_missing``; the row that supplies it resolves the
alert. Rows come in event time, so a certification logged afterwards but
dated before the work counts (the log records what happened, not when it was
typed); one dated after the work resolves the alert as late.
"""

from __future__ import annotations

from dataclasses import dataclass

from analytics.detector import Context, Detector
from analytics.events import SiteLogEntry
from analytics.timeutil import iso
from siltwatch.applicability import SQ_FT_PER_ACRE
from siltwatch.config import SiteConfig
from siltwatch.detections.paperwork import PAPERWORK_MISSING, Requirement
from siltwatch.rulepacks import Rules
from siltwatch.timefmt import local_time
from siltwatch.vocabulary import Milestone, Severity, SiteEvent

WORK = frozenset({SiteEvent.DISTURBED, SiteEvent.CLEARED, SiteEvent.GRADED, SiteEvent.ACTIVE})


@dataclass(frozen=True)
class Words:
    """How one requirement is named, what the law says of it, and what to do."""

    missing: str  # "no contractor certification"
    law: str  # what the provision asks, in its words
    todo: str


WORDS: dict[str, Words] = {
    Requirement.CONTRACTOR_CERTIFICATION: Words(
        "no contractor's certification of the SWPPP",
        "each contractor signs the SWPPP certification before undertaking any land "
        "development activity",
        "Have each contractor sign the certification and record it in the site log "
        "(event certification, detail: the contractor's name and firm).",
    ),
    Requirement.PLAN_ON_SITE: Words(
        "no copy of the plan kept at the site",
        "a copy of the plan is retained at the site from the initiation of construction",
        "Keep a copy of the plan at the site and record it in the site log (event plan_on_site).",
    ),
    Requirement.PLAN_APPROVAL: Words(
        "no approval of the plan",
        "no land-disturbing activity is undertaken without first obtaining a plan approval",
        "Stop work until the plan is approved, and record the approval in the site log "
        "(event plan_approved).",
    ),
    Requirement.START_NOTICE: Words(
        "no notice to the town of the date work would begin",
        "no land-disturbing activity begins before the town is notified of its start date",
        "Notify the town of the start date and record it in the site log "
        "(event notice, detail start_of_development).",
    ),
    Requirement.APPROVAL_DISPLAYED: Words(
        "no plan approval displayed at the site",
        "the plan approval is prominently displayed until all construction is complete",
        "Display the plan approval at the site and record it in the site log "
        "(event approval_displayed).",
    ),
    Requirement.EROSION_CONTROLS: Words(
        "no installation of the temporary erosion controls",
        "temporary erosion controls are required to prevent siltation of water bodies "
        "during construction",
        "Install the erosion and sediment controls and record it in the site log "
        "(event milestone, detail controls_installed).",
    ),
    Requirement.PRECONSTRUCTION_CONFERENCE: Words(
        "no preconstruction conference, which the officer required,",
        "a preconstruction conference the officer deems necessary is held before construction",
        "Stop work until the conference is held, and record it in the site log "
        "(event conference_held).",
    ),
}

# Rows that open ground: the temporary erosion controls come before them (§148-11 I(2)(f)).
OPENING = frozenset({SiteEvent.DISTURBED, SiteEvent.CLEARED, SiteEvent.GRADED})
# Requirements checked at the first row that opens ground, not at the first work.
AT_OPENING = frozenset({Requirement.EROSION_CONTROLS})
# What a plan brings, where a pack says below which disturbance no plan is needed
# (Lake Lure 96.05(A)(1)(b),(c), (B)(1)): asked for once the site log passes it.
PLAN_PAPERS = frozenset(
    {Requirement.PLAN_APPROVAL, Requirement.PLAN_ON_SITE, Requirement.APPROVAL_DISPLAYED}
)


@dataclass(frozen=True)
class PlanThreshold:
    """No plan below these square feet of land disturbed (near water: the smaller one)."""

    over_sq_ft: float
    near_over_sq_ft: float
    near_ft: float
    cite: str

    @classmethod
    def of(cls, rules: Rules) -> PlanThreshold | None:
        over = rules.get("paperwork.plan_required_over_sq_ft")
        near = rules.get("paperwork.plan_required_near_water_over_sq_ft")
        near_ft = rules.get("paperwork.plan_required_near_water_ft")
        if over is None or near is None or near_ft is None:
            return None
        cite = over.cite() if over.cite() == near.cite() else f"{near.cite()}; {over.cite()}"
        return cls(float(over.value), float(near.value), float(near_ft.value), cite)


def required(rules: Rules) -> dict[str, str]:
    """The requirements the site's packs set, each with its citation."""
    asked = {r: rules.get(r.rule_key) for r in Requirement}
    return {str(r): rule.cite() for r, rule in asked.items() if rule and rule.value is True}


def supplies(entry: SiteLogEntry) -> str | None:
    """The requirement a site-log row supplies, if any."""
    if entry.event == SiteEvent.CERTIFICATION:
        return Requirement.CONTRACTOR_CERTIFICATION
    if entry.event == SiteEvent.PLAN_ON_SITE:
        return Requirement.PLAN_ON_SITE
    if entry.event == SiteEvent.PLAN_APPROVED:
        return Requirement.PLAN_APPROVAL
    if entry.event == SiteEvent.NOTICE and entry.detail == Milestone.START_OF_DEVELOPMENT:
        return Requirement.START_NOTICE
    if entry.event == SiteEvent.APPROVAL_DISPLAYED:
        return Requirement.APPROVAL_DISPLAYED
    if entry.event == SiteEvent.MILESTONE and entry.detail == Milestone.CONTROLS_INSTALLED:
        return Requirement.EROSION_CONTROLS
    if entry.event == SiteEvent.CONFERENCE_HELD:
        return Requirement.PRECONSTRUCTION_CONFERENCE
    return None


def is_work(entry: SiteLogEntry, areas: set[str]) -> bool:
    if entry.event in WORK:
        return entry.area in areas
    return entry.event == SiteEvent.MILESTONE and entry.detail == Milestone.START_OF_DEVELOPMENT


class PaperworkDetector(Detector):
    """The paperwork each requirement asks for, checked at the first row of work."""

    name = "paperwork"

    def __init__(self, site: SiteConfig, cites: dict[str, str]) -> None:
        self.site_name = site.site.name or site.site.id
        self.areas = {a.id for a in site.areas}
        self.cites = cites  # requirement -> citation
        self.supplied: dict[str, int] = {}  # requirement -> first time it was recorded
        self.started: tuple[int, str] | None = None  # first work: time, what
        self.opened = False  # whether a row has opened ground yet
        self.conference_required = False  # a conference required and not yet held
        # Lake Lure 96.05(A)(1): the land disturbed so far decides whether a plan is needed
        self.threshold: PlanThreshold | None = None
        self.acres = {a.id: a.acres for a in site.areas}
        self.near = {a.id for a in site.areas}  # set by build(): areas near water
        self.disturbed: list[str] = []
        self.plan_needed = True
        self.passed = ""  # what the threshold said when the disturbance passed it
        self.missing: dict[str, dict[str, str | None]] = {}  # open alerts: evidence

    def on_site_log(self, entry: SiteLogEntry, ctx: Context) -> None:
        requirement = supplies(entry)
        conference = Requirement.PRECONSTRUCTION_CONFERENCE
        if requirement is not None and requirement in self.cites:
            self.supplied.setdefault(requirement, entry.t)
            if requirement == conference:
                self.conference_required = False
            if requirement in self.missing:
                self._late(requirement, entry, ctx)
            return
        if entry.event == SiteEvent.CONFERENCE_REQUIRED and conference in self.cites:
            self.conference_required = True
            return
        if not is_work(entry, self.areas):
            return
        what = entry.event if entry.area is None else f"{entry.event} {entry.area}"
        due: list[str] = []
        gated = self._plan_gate(entry)
        if self.started is None:
            self.started = (entry.t, what)
            due += [
                r
                for r in self.cites
                if r not in AT_OPENING
                and r != conference
                and (gated is None or r not in PLAN_PAPERS)
            ]
        if gated:  # the disturbance just passed the plan threshold
            due += [r for r in self.cites if r in PLAN_PAPERS]
        if not self.opened and entry.event in OPENING:
            self.opened = True
            due += [r for r in self.cites if r in AT_OPENING]
        if self.conference_required and conference in self.cites:
            due.append(conference)
        for requirement in due:
            owed = requirement not in self.supplied or requirement == conference
            if owed and requirement not in self.missing:
                self._open(requirement, entry, what, ctx)

    def _plan_gate(self, entry: SiteLogEntry) -> bool | None:
        """None where no threshold gates the plan's papers (they are due at the first
        work); otherwise whether this row makes the disturbance pass it (96.05(A)(1)(b):
        within 35 feet of water, more than 100 sq ft; (c): elsewhere more than 2,000)."""
        gate = self.threshold
        if gate is None:
            return None
        if self.plan_needed or entry.event not in OPENING or entry.area not in self.acres:
            return False
        if entry.area not in self.disturbed:
            self.disturbed.append(entry.area)
        sq_ft = sum(self.acres[a] for a in self.disturbed) * SQ_FT_PER_ACRE
        near = any(a in self.near for a in self.disturbed)
        limit = gate.near_over_sq_ft if near else gate.over_sq_ft
        self.plan_needed = sq_ft > limit
        if self.plan_needed:
            where = f" (within {gate.near_ft:g} ft of water)" if near else ""
            self.passed = (
                f" The land disturbed so far, {sq_ft:,.0f} sq ft{where}, exceeds the "
                f"{limit:,.0f} sq ft up to which no plan is needed ({gate.cite})."
            )
        return self.plan_needed

    def _open(self, requirement: str, entry: SiteLogEntry, what: str, ctx: Context) -> None:
        words, cite = WORDS[requirement], self.cites[requirement]
        evidence: dict[str, str | None] = {
            "requirement": requirement,
            "work_started_at": iso(entry.t),
            "work": what,
            "by": entry.by,
        }
        self.missing[requirement] = evidence
        message = (
            f"Work began at {self.site_name} on {local_time(entry.t, ctx.zone)} ({what}, "
            f"recorded by {entry.by}) with {words.missing} in the site log: under {cite} "
            f"{words.law}. {words.todo}" + (self.passed if requirement in PLAN_PAPERS else "")
        )
        ctx.alerts.open(
            PAPERWORK_MISSING.kind,
            requirement,
            entry.t,
            Severity.WARNING,
            rule=cite,
            message=message,
            evidence=evidence,
        )

    def _late(self, requirement: str, entry: SiteLogEntry, ctx: Context) -> None:
        evidence = self.missing.pop(requirement) | {"recorded_at": iso(entry.t)}
        words, cite = WORDS[requirement], self.cites[requirement]
        message = (
            f"Recorded at {self.site_name} on {local_time(entry.t, ctx.zone)} by {entry.by}, "
            f"after work began ({evidence['work']}, {evidence['work_started_at']}): "
            f"{words.missing.removeprefix('no ')} ({cite})."
        )
        ctx.alerts.resolve(
            PAPERWORK_MISSING.kind, requirement, entry.t, message=message, evidence=evidence
        )


def build(site: SiteConfig, ctx: Context) -> list[Detector]:
    """A detector when the site's packs ask for paperwork before the first work."""
    cites = required(ctx.rules)
    if not cites or not site.site.paperwork_in_site_log:
        # A log that does not keep the paperwork says nothing about it: no alert the law
        # does not ask for (the site's file says when its log keeps it).
        return []
    detector = PaperworkDetector(site, cites)
    gate = PlanThreshold.of(ctx.rules)
    if gate is not None:
        detector.threshold, detector.plan_needed = gate, False
        detector.near = {a.id for a in site.areas if a.distance_to_water_ft <= gate.near_ft}
    return [detector]
