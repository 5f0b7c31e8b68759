"""The typed vocabulary of siltwatch's outputs: duty reasons, site-log events, severity.

A consumer that switches on one of these (routing, messages, dashboards) names a
member, and a typo is an ``AttributeError`` at import time, not a branch that
silently never matches. Alert and duty *kinds* are not here: each is declared
once, by the description of the detection that raises it (``kind`` of its
:class:`~siltwatch.detections.base.AlertSpec` or
:class:`~siltwatch.detections.base.DutySpec`, e.g.
``siltwatch.detections.drain.DRAIN_TIME.kind``), and the registry
(siltwatch/detections/) lists them all.

The members are ``StrEnum``: each *is* its string (``DutyReason.STORM ==
"storm"``, ``str()``/``format()`` give the value, JSON carries the value), so
the wire format and the replay contract (docs/replay-contract.md) are
unchanged. The wire models keep ``kind`` and ``reason`` as plain strings: the
contract leaves both open ("or more"), and a consumer must accept a kind from a
newer engine.

Severity is ordered ``info < warning < critical``; :func:`severity_rank` is the
one place that order is written.
"""

from __future__ import annotations

from enum import StrEnum


class DutyReason(StrEnum):
    """Why a duty exists (``reason`` in DUTIES.jsonl)."""

    STORM = "storm"  # after a qualifying storm
    ROUTINE = "routine"  # the routine cadence (weekly, or twice weekly on large sites)
    QUARTERLY = "quarterly"  # the quarterly inspection
    PHASE = "phase"  # after a phase of the plan (Lake Lure 96.05(B)(17)(c)(i)-(v))


class SiteEvent(StrEnum):
    """What a site-log row records (``event`` in the site log; docs/replay-contract.md).

    The cover, stabilization, phase-inspection and notice duties hang on these:
    what people do on the site, in event time like readings.
    """

    DISTURBED = "disturbed"  # ground in the area was opened (cleared, stripped, stockpiled)
    CLEARED = "cleared"  # clearing of the area substantially completed
    GRADED = "graded"  # a phase of grading of slopes or fills in the area completed
    ACTIVE = "active"  # substantial construction activity in the area that day
    INACTIVE = "inactive"  # work in the area stopped; the time is the last substantial activity
    TEMPORARY_COVER = "temporary_cover"  # protective cover or temporary stabilization
    COMPLETED = "completed"  # clearing and construction in the area substantially completed
    SEEDED = "seeded"  # seeded (temporary or permanent, with mulch) or replanted
    PERMANENT_COVER = "permanent_cover"  # permanent ground cover sufficient to restrain erosion
    # Extra erosion measures taken in the area for its revegetation after cold-season
    # earthwork (screen mesh, netting, extra mulch, silt fence: Lake George
    # §148-11 I(3)(e)[3][e]); detail: what, optional.
    EXTRA_MEASURES = "extra_measures"
    MILESTONE = "milestone"  # a phase of the plan was reached (detail: a Milestone)
    NOTICE = "notice"  # the town was notified of a coming milestone (detail: a Milestone)
    CERTIFICATION = "certification"  # a contractor signed the SWPPP certification (detail: who)
    PLAN_ON_SITE = "plan_on_site"  # a copy of the SWPPP or approved plan is kept at the site
    PLAN_APPROVED = "plan_approved"  # the plan was approved or renewed (detail: expires DATE)
    FELLED_INTO_WATER = "felled_into_water"  # vegetation fell into a water body (detail: where)
    FELLED_REMOVED = "felled_removed"  # the felled vegetation was removed from the water
    CORRECTIVE_ACTION = "corrective_action"  # what was done about an alert (detail: id, text)
    # The applicant, developer or their representative on site that day (detail: who;
    # Lake George §148-10 A, Big Flats 17.37.100 A: "on site at all times when
    # construction or grading activity takes place").
    ON_SITE = "on_site"
    APPROVAL_DISPLAYED = "approval_displayed"  # the plan approval is displayed at the site
    # The officer required a preconstruction conference (Lake Lure 96.05(B)(12)), and
    # the conference was held.
    CONFERENCE_REQUIRED = "conference_required"
    CONFERENCE_HELD = "conference_held"
    PLAN_CHANGED = "plan_changed"  # the work departed from the approved plan (detail: what)
    AS_BUILT = "as_built"  # as-built plans of the stormwater practices submitted to the town
    # A practice's maintenance schedule (detail: "<practice> every <N> days", or
    # "<practice> removed"), and its maintenance done (detail: "<practice> ...").
    MAINTENANCE_SCHEDULED = "maintenance_scheduled"
    MAINTAINED = "maintained"
    # The town served a notice of violation or a stop-work order (area optional; detail:
    # the violation id, optionally "remedy by YYYY-MM-DD", then free text).
    VIOLATION = "violation"
    VIOLATION_CORRECTED = "violation_corrected"  # the town accepted the correction (detail: id)

    @property
    def needs_area(self) -> bool:
        """Area events name the area; milestones, notices and actions are site-wide; a
        violation may name the area it was found in."""
        return self not in _SITE_WIDE and self not in _AREA_OPTIONAL

    @property
    def takes_area(self) -> bool:
        """Whether the event may name an area at all (site-wide events name none)."""
        return self not in _SITE_WIDE


_SITE_WIDE = frozenset(
    {
        SiteEvent.MILESTONE,
        SiteEvent.NOTICE,
        SiteEvent.CERTIFICATION,
        SiteEvent.PLAN_ON_SITE,
        SiteEvent.PLAN_APPROVED,
        SiteEvent.FELLED_INTO_WATER,
        SiteEvent.FELLED_REMOVED,
        SiteEvent.CORRECTIVE_ACTION,
        SiteEvent.VIOLATION_CORRECTED,
        SiteEvent.ON_SITE,
        SiteEvent.APPROVAL_DISPLAYED,
        SiteEvent.CONFERENCE_REQUIRED,
        SiteEvent.CONFERENCE_HELD,
        SiteEvent.PLAN_CHANGED,
        SiteEvent.AS_BUILT,
        SiteEvent.MAINTENANCE_SCHEDULED,
        SiteEvent.MAINTAINED,
    }
)
_AREA_OPTIONAL = frozenset({SiteEvent.VIOLATION})
# Site-wide rows record paperwork, but for a milestone (a phase of the work reached) and
# vegetation felled into or removed from the water (work on site); a violation and the
# cold season's extra measures name an area, yet record paperwork.
_PAPERWORK = (
    _SITE_WIDE - {SiteEvent.MILESTONE, SiteEvent.FELLED_INTO_WATER, SiteEvent.FELLED_REMOVED}
) | {SiteEvent.VIOLATION, SiteEvent.EXTRA_MEASURES}


def is_paperwork(event: str) -> bool:
    """A site-log row of ``event`` records paperwork, not work on site: it starts no
    inspection clock (an event this release does not know counts as work)."""
    return event in _PAPERWORK


class Milestone(StrEnum):
    """The plan's phases a ``milestone`` or ``notice`` row names."""

    START_OF_DEVELOPMENT = "start_of_development"
    CONTROLS_INSTALLED = "controls_installed"
    CLEARING_COMPLETED = "clearing_completed"
    ROUGH_GRADING_COMPLETED = "rough_grading_completed"
    FINAL_GRADING_COMPLETED = "final_grading_completed"
    STORM_DRAINAGE_COMPLETED = "storm_drainage_completed"
    CONSTRUCTION_COMPLETED = "construction_completed"
    CONSTRUCTION_SEASON_CLOSED = "construction_season_closed"
    FINAL_LANDSCAPING_COMPLETED = "final_landscaping_completed"
    LANDSCAPING_ESTABLISHED = "landscaping_established"  # in public areas (§148-12 A(8))
    # The town's final acceptance of the project: the performance guarantee's years
    # count from it (Lake George §148-13 A; Big Flats 17.37.120 A).
    FINAL_ACCEPTANCE = "final_acceptance"
    # The maintenance agreement for the permanent facilities signed: its periodic
    # engineer inspections count from it (Big Flats Schedule B (4)).
    MAINTENANCE_AGREEMENT = "maintenance_agreement"

    @property
    def words(self) -> str:
        """What a person calls it: "clearing completed"."""
        return self.value.replace("_", " ")


def milestone_of(text: str) -> Milestone | None:
    """The milestone a person typed, in words or as its id ("Clearing completed",
    "clearing-completed", "clearing_completed"); None when it names none."""
    key = "_".join(text.replace("-", " ").replace("_", " ").lower().split())
    return Milestone(key) if key in Milestone._value2member_map_ else None


def milestone_problem(text: str | None) -> str:
    """Why ``text`` names no milestone, for a person: the phases in words."""
    phases = ", ".join(m.words for m in Milestone)
    given = f"{text[:60]!r} is not" if text else "none given; it names"
    return f"{given} one of the plan's phases: {phases}"


class Severity(StrEnum):
    """How bad an alert is. Declared in rising order: ``info < warning < critical``."""

    INFO = "info"
    WARNING = "warning"
    CRITICAL = "critical"


_RANK: dict[str, int] = {s.value: i for i, s in enumerate(Severity)}


def severity_rank(severity: str) -> int:
    """The order of severities: info 0 < warning 1 < critical 2; an unknown value is -1.

    Takes a plain string too (severities read back from an outbox, a store or an
    engine snapshot are plain strings), so the most severe of a mix is ``max(values, key=severity_rank)`` and the most
    severe first is ``sorted(values, key=severity_rank, reverse=True)``.
    """
    return _RANK.get(severity, -1)
