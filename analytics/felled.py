"""Vegetation felled into the water (kinds, citations and the reading of "immediately":
siltwatch/detections/felled.py).

The first ``felled_into_water`` row opens the alert and arms a timer
``felled.removal_h`` later; later ones while it is open add to it. A
``felled_removed`` row resolves it; the timer, if the alert is still open from
the same felling, escalates it to critical.
"""

from __future__ import annotations

from analytics.cited import Cited
from analytics.detector import Context, Detector
from analytics.events import SiteLogEntry
from analytics.timers import Tag
from analytics.timeutil import MS_PER_H, iso
from siltwatch.config import SiteConfig
from siltwatch.detections.felled import FELLED
from siltwatch.officials import officer_notified
from siltwatch.timefmt import local_time
from siltwatch.vocabulary import Severity, SiteEvent


class FelledDetector(Detector):
    """Whether vegetation felled into a water body is still there."""

    name = "felled"

    def __init__(self, site: SiteConfig, rule: Cited, removal: Cited) -> None:
        self.site_id = site.site.id
        self.site_name = site.site.name or site.site.id
        self.rule, self.removal = rule, removal
        self.felled_at: int | None = None  # the open alert's first felling
        self.where: list[str] = []

    def on_site_log(self, entry: SiteLogEntry, ctx: Context) -> None:
        if entry.event == SiteEvent.FELLED_INTO_WATER:
            self._felled(entry, ctx)
        elif entry.event == SiteEvent.FELLED_REMOVED and self.felled_at is not None:
            message = (
                f"Felled vegetation removed from the water at {self.site_name} on "
                f"{local_time(entry.t, ctx.zone)} (recorded by {entry.by}); {self.rule.cite}."
            )
            ctx.alerts.resolve(FELLED.kind, self.site_id, entry.t, message=message)
            self.felled_at, self.where = None, []

    def on_timer(self, at: int, tag: Tag, ctx: Context) -> None:
        if self.felled_at is None or tag != str(self.felled_at):
            return  # removed in time
        ctx.alerts.update(
            FELLED.kind,
            self.site_id,
            at,
            severity=Severity.CRITICAL,
            message=self._message(at, ctx, late=True),
        )

    def _felled(self, entry: SiteLogEntry, ctx: Context) -> None:
        self.where.append(entry.detail or "a water body")
        first = self.felled_at is None
        if first:
            self.felled_at = entry.t
            ctx.schedule(self, entry.t + round(self.removal.value * MS_PER_H), str(entry.t))
        assert self.felled_at is not None
        evidence = {
            "felled_at": iso(self.felled_at),
            "where": "; ".join(self.where),
            "removal_h": self.removal.value,
        }
        message = self._message(entry.t, ctx, late=False)
        if first:
            ctx.alerts.open(
                FELLED.kind,
                self.site_id,
                entry.t,
                Severity.WARNING,
                rule=self.rule.cite,
                message=message,
                evidence=evidence,
            )
        else:
            ctx.alerts.update(
                FELLED.kind, self.site_id, entry.t, message=message, evidence=evidence
            )

    def _message(self, now: int, ctx: Context, *, late: bool) -> str:
        assert self.felled_at is not None
        said = (
            f"It is still in the water at {local_time(now, ctx.zone)}, "
            f"{self.removal.value:g} h after ({self.removal.cite}). {officer_notified(ctx.rules)}"
            if late
            else "Remove it from the water now."
        )
        return (
            f"Vegetation felled into the water at {self.site_name} ({'; '.join(self.where)}) "
            f"since {local_time(self.felled_at, ctx.zone)}: under {self.rule.cite} it shall be "
            f"removed immediately. {said} Record felled_removed in the site log when it is out."
        )


def build(site: SiteConfig, ctx: Context) -> list[Detector]:
    """A detector when the site's packs ask for it, on a major project."""
    rule = Cited.of(ctx.rules.get("felled.remove_immediately"))
    removal = Cited.of(ctx.rules.get("felled.removal_h"))
    if rule is None or removal is None or site.site.project == "minor":
        return []
    return [FelledDetector(site, rule, removal)]
