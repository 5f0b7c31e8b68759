"""Milestone notices from the site log (kinds and citations: siltwatch/detections/notices.py).

A ``notice`` row records that the town was told of a coming milestone; a
``milestone`` row that the milestone was reached. Reaching one of the
milestones the law lists (``notice.milestones``: Lake George §148-12 A(1)-(8),
Big Flats 17.37.110 A) with no notice of it at least
``notice.before_inspection_h`` (48 h) before raises ``notice_missing`` at the
milestone's time; a notice exactly 48 h before is in time ("at least"). A
milestone the list does not name needs no notice and raises nothing: a false
alert to the officer costs more than a missing one. The alert is opened and resolved at
once: the notice can no longer be given in time, so there is nothing to clear,
and the officer hears it once (``Officer.ONCE``). The rows come in event time,
so a notice logged after the fact but dated before the milestone counts (the
log is a record of what happened, not of when it was typed).
"""

from __future__ import annotations

from analytics.detector import Context, Detector
from analytics.events import SiteLogEntry
from analytics.timeutil import MS_PER_H, iso
from siltwatch.config import SiteConfig
from siltwatch.detections.notices import NOTICE_MISSING
from siltwatch.timefmt import duration, local_time
from siltwatch.vocabulary import Severity, SiteEvent


class NoticeDetector(Detector):
    """Every milestone's notice, checked when the milestone is reached."""

    name = "notices"

    def __init__(
        self, site: SiteConfig, before_h: float, cite: str, listed: frozenset[str]
    ) -> None:
        self.site_name = site.site.name or site.site.id
        self.before_ms = round(before_h * MS_PER_H)
        self.cite = cite
        self.listed = listed  # the milestones the law asks a notice of
        self.notices: dict[str, list[int]] = {}  # milestone -> times the town was told

    def on_site_log(self, entry: SiteLogEntry, ctx: Context) -> None:
        if entry.event == SiteEvent.NOTICE:
            self.notices.setdefault(entry.detail, []).append(entry.t)
        elif entry.event == SiteEvent.MILESTONE and entry.detail in self.listed:
            self._reached(entry, ctx)

    def _reached(self, entry: SiteLogEntry, ctx: Context) -> None:
        milestone, t = entry.detail, entry.t
        needed_by = t - self.before_ms
        told = [n for n in self.notices.get(milestone, []) if n <= t]
        if any(n <= needed_by for n in told):
            return
        latest = max(told) if told else None
        said = (
            f"the town was told only at {local_time(latest, ctx.zone)}, "
            f"{duration((t - latest) / 1000)} before"
            if latest is not None
            else "no notice of it is recorded"
        )
        hours = self.before_ms / MS_PER_H
        message = (
            f"Milestone {milestone.replace('_', ' ')} reached at {self.site_name} on "
            f"{local_time(t, ctx.zone)} (recorded by {entry.by}) without the town's "
            f"{hours:g}-hour notice ({self.cite}): {said}. Give notice at least {hours:g} hours "
            "before each coming milestone, and record it in the site log."
        )
        evidence = {
            "milestone": milestone,
            "reached_at": iso(t),
            "needed_by": iso(needed_by),
            "notice_at": None if latest is None else iso(latest),
            "by": entry.by,
        }
        kind = NOTICE_MISSING.kind
        ctx.alerts.open(
            kind, milestone, t, Severity.WARNING, rule=self.cite, message=message, evidence=evidence
        )
        ctx.alerts.resolve(kind, milestone, t, message=message, evidence=evidence)


def build(site: SiteConfig, ctx: Context) -> list[Detector]:
    """A detector when the site's packs require milestone notices (of the milestones
    ``notice.milestones`` lists; without that key, of none)."""
    rule = ctx.rules.get("notice.before_inspection_h")
    listed = ctx.rules.get("notice.milestones")
    if rule is None or listed is None:
        return []
    milestones = frozenset(str(m) for m in listed.value)
    return [NoticeDetector(site, float(rule.value), rule.cite(), milestones)]
