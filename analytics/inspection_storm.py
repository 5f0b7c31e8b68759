"""Storm inspections (reason ``storm``, subject = the storm id ``<gauge>@<start of rain, UTC>``).

One duty per storm, however many hours it spends over the threshold. The storm
qualifies when the rain *of that storm* within any 24-h window reaches
``inspection.storm_threshold_in`` (CGP 2022 Part 4.2 "0.25 in in 24 h"; NCG01
Part III §A "a rain event >= 1.0 in in 24 h"). The permits count "within 24 h"
from the rain event, and NCG01 says "if the rain *ends* outside normal business
hours", so the clock starts when the rain ends (the end of the storm's last wet
interval). That end is only known once the dry gap (``rain.storm_gap_h``) has
passed: the rain detector then publishes :class:`~analytics.rain.StormEnded`,
and the duty is created with ``created_at`` = the end of the rain (the time the
permit's 24 h count from); a full inspection recorded between the end of the
rain and that moment completes it. An inspection while it is still raining does
not. A storm still raining when the record ends creates its duty at the end of
the run if it has qualified (the rain did reach the threshold; the end of rain
is provisionally its last wet reading). docs/storm-segmentation.md has it in full.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from analytics.episodes import DutyRecord
from analytics.inspection_desk import DutyDesk
from analytics.inspection_overdue import DutyNote, fmt_hours
from analytics.rain import NM_PER_IN, NM_PER_MM, StormRecord, depth_text
from analytics.timeutil import MS_PER_H, iso
from siltwatch.config import SiteConfig
from siltwatch.rulepacks import Rules
from siltwatch.vocabulary import DutyReason


@dataclass(frozen=True)
class StormRule:
    threshold_nm: int
    threshold_in: float
    window_ms: int
    due_ms: int
    next_business_day: bool
    resets_routine: bool
    cite: str
    due_cite: str
    business_cite: str
    reset_cite: str


def _cite(rules: Rules, key: str) -> str:
    value = rules.get(key)
    return "" if value is None else value.cite()


def storm_rule(rules: Rules) -> StormRule | None:
    """The storm-inspection rule of the site's packs, or None when they have none."""
    threshold = rules.get("inspection.storm_threshold_in")
    if threshold is None:
        return None
    window = rules.get("inspection.storm_window_h")
    due = rules.get("inspection.storm_due_h")
    nbd = rules.get("inspection.storm_due_next_business_day")
    resets = rules.get("inspection.storm_resets_routine")
    return StormRule(
        threshold_nm=round(float(threshold.value) * NM_PER_IN),
        threshold_in=float(threshold.value),
        window_ms=round(float(window.value if window else 24) * MS_PER_H),
        due_ms=round(float(due.value if due else 24) * MS_PER_H),
        next_business_day=bool(nbd.value) if nbd else False,
        resets_routine=bool(resets.value) if resets else False,
        cite=threshold.cite(),
        due_cite=_cite(rules, "inspection.storm_due_h") or threshold.cite(),
        business_cite=_cite(rules, "inspection.storm_due_next_business_day"),
        reset_cite=_cite(rules, "inspection.storm_resets_routine"),
    )


def storm_lookback_ms(site: SiteConfig, rules: Rules) -> int:
    """How long after the rain ends a storm can become known: the longest dry gap plus a reading."""
    return max(
        (
            round((g.storm_gap_h or rules.number("rain.storm_gap_h")) * MS_PER_H)
            + round(site.sensor(g.sensor).interval_s * 1000)
            for g in site.rain_gauges
        ),
        default=0,
    )


@dataclass(frozen=True, slots=True)
class Completion:
    """A storm duty found done by an inspection recorded before the storm was known to end."""

    rec: DutyRecord
    t: int
    inspector: str


class StormDuties:
    """One duty per qualifying storm; recent inspections are kept for storms known late."""

    def __init__(self, rule: StormRule, lookback_ms: int) -> None:
        self.rule = rule
        self.lookback_ms = lookback_ms
        self.duties: dict[str, str] = {}  # storm id -> its duty id
        self.recent: list[tuple[int, str, str | None]] = []  # (t, inspector, named duty)

    def wants(self, storm: StormRecord) -> bool:
        """Whether the storm qualified and has no duty yet."""
        return storm.qualified_at is not None and storm.id not in self.duties

    def resets_routine(self, rec: DutyRecord) -> bool:
        """NCG01 Part III §A: a rain-event inspection resets the 7-day clock."""
        return rec.reason == DutyReason.STORM and self.rule.resets_routine

    def remember(self, t: int, inspector: str, duty: str | None) -> None:
        """An inspection at ``t``: kept while a storm that ended before it may yet be announced."""
        self.recent.append((t, inspector, duty))
        horizon = t - self.lookback_ms
        self.recent = [x for x in self.recent if x[0] >= horizon]

    def on_storm_ended(self, storm: StormRecord, now: int, desk: DutyDesk) -> Completion | None:
        """Create the storm's duty at ``now``; the inspection that already did it, if any."""
        rule = self.rule
        end = storm.end
        due, why_due = self._due(end, desk)
        peak = depth_text(storm.peak_window_nm / NM_PER_MM, storm.unit)
        label = (
            f"storm inspection after {storm.id} ({peak} in {fmt_hours(rule.window_ms)}, "
            f"threshold {rule.threshold_in:g} in)"
        )
        note = DutyNote(label=label, cite=rule.cite, evidence=self._evidence(storm, why_due))
        rec = desk.create(DutyReason.STORM, storm.id, (end, due), note)
        self.duties[storm.id] = rec.id
        # The end of the rain is known only now (after the dry gap): a full inspection
        # recorded since the rain ended already did this duty.
        for t, inspector, named in self.recent:
            if named is None and end < t <= now and desk.complete(rec, t, inspector):
                return Completion(rec, t, inspector)
        desk.arm(rec, now)
        return None

    def _due(self, end: int, desk: DutyDesk) -> tuple[int, str]:
        """The deadline of the inspection after rain that ended at ``end``, and why."""
        rule = self.rule
        # CGP 2022 Part 4.2 / NCG01 Part III §A: inspect within 24 h of the rain event,
        # counted from the end of the rain.
        due = end + rule.due_ms
        why_due = f"{fmt_hours(rule.due_ms)} after the rain ended ({rule.due_cite})"
        cal = desk.calendar
        if rule.next_business_day and not cal.in_business_hours(end):
            # NCG01 Part III §A: "if the rain ends outside normal business hours, by the start
            # of the next business day". Read as a relaxation (inspections are required in
            # business hours): the later of end + 24 h and the opening of the first business
            # day after the day the rain ended — never less than the 24 h.
            opening = cal.start_of_next_business_day(end)
            if opening > due:
                due = opening
                why_due = (
                    "the rain ended outside business hours: by the start of the next "
                    f"business day ({rule.business_cite})"
                )
        return due, why_due

    def _evidence(self, storm: StormRecord, why_due: str) -> dict[str, Any]:
        assert storm.qualified_at is not None
        return {
            "storm": storm.id,
            "gauge": storm.gauge,
            "rain_start": iso(storm.start),
            "rain_end": iso(storm.end),
            "storm_ongoing_at_end_of_record": not storm.closed,
            "depth_mm": round(storm.depth_nm / NM_PER_MM, 2),
            "depth_in": round(storm.depth_nm / NM_PER_IN, 3),
            "max_24h_mm": round(storm.peak_window_nm / NM_PER_MM, 2),
            "max_24h_in": round(storm.peak_window_nm / NM_PER_IN, 3),
            "threshold_in": self.rule.threshold_in,
            "qualified_at": iso(storm.qualified_at),
            "due_rule": why_due,
        }
