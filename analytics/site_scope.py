"""The permit and the project class from the land the site log shows disturbed (kinds and
citations: siltwatch/detections/site_scope.py)."""

from __future__ import annotations

from analytics.cited import Cited
from analytics.detector import Context, Detector
from analytics.events import SiteLogEntry
from analytics.timeutil import iso
from siltwatch.applicability import SQ_FT_PER_ACRE
from siltwatch.config import SiteConfig
from siltwatch.detections.site_scope import CLASS_EXCEEDED, PERMIT_MISSING
from siltwatch.timefmt import local_time
from siltwatch.vocabulary import Severity, SiteEvent

OPENING = frozenset({SiteEvent.DISTURBED, SiteEvent.CLEARED, SiteEvent.GRADED})


class SiteScopeDetector(Detector):
    """Land disturbed so far, against the permit threshold and the minor class."""

    name = "site-scope"

    def __init__(self, site: SiteConfig, permit: Cited | None, minor: Cited | None) -> None:
        self.site_id = site.site.id
        self.site_name = site.site.name or site.site.id
        self.acres = {a.id: a.acres for a in site.areas}
        self.permit, self.minor = permit, minor
        self.disturbed: list[str] = []  # areas disturbed so far, in order
        self.permitted = False  # a plan_approved row (the permit) is in the log
        self.permit_open: dict[str, str | float | None] | None = None
        self.class_raised = False

    def sq_ft(self) -> float:
        return round(sum(self.acres[a] for a in self.disturbed) * SQ_FT_PER_ACRE, 1)

    def on_site_log(self, entry: SiteLogEntry, ctx: Context) -> None:
        if entry.event == SiteEvent.PLAN_APPROVED:
            self.permitted = True
            if self.permit_open is not None:
                self._permit_recorded(entry, ctx)
            return
        if entry.event not in OPENING or entry.area not in self.acres:
            return
        if entry.area in self.disturbed:
            return
        self.disturbed.append(entry.area)
        sq_ft = self.sq_ft()
        permit, minor = self.permit, self.minor
        owed = permit is not None and not self.permitted and self.permit_open is None
        if owed and permit is not None and sq_ft > permit.value:
            self._permit_missing(entry, sq_ft, permit, ctx)
        if minor is not None and not self.class_raised and sq_ft >= minor.value:
            self._class_exceeded(entry, sq_ft, minor, ctx)

    def _evidence(self, sq_ft: float, rule: Cited) -> dict[str, str | float | None]:
        return {
            "disturbed_sq_ft": sq_ft,
            "threshold_sq_ft": rule.value,
            "areas": ", ".join(self.disturbed),
        }

    def _permit_missing(self, entry: SiteLogEntry, sq_ft: float, rule: Cited, ctx: Context) -> None:
        evidence = self._evidence(sq_ft, rule)
        self.permit_open = evidence
        message = (
            f"Land disturbance at {self.site_name} reached {sq_ft:,.0f} sq ft on "
            f"{local_time(entry.t, ctx.zone)} ({entry.event} {entry.area}; areas "
            f"{evidence['areas']}) and no permit is recorded: under {rule.cite} no land "
            f"disturbance greater than {rule.value:,.0f} square feet without first having "
            "received a stormwater management permit. Stop disturbing land until it is "
            "issued, and record it in the site log (event plan_approved)."
        )
        self._open(PERMIT_MISSING.kind, entry, rule, message, evidence, ctx)

    def _permit_recorded(self, entry: SiteLogEntry, ctx: Context) -> None:
        assert self.permit_open is not None and self.permit is not None
        evidence = self.permit_open | {"recorded_at": iso(entry.t)}
        self.permit_open = None
        message = (
            f"Permit recorded at {self.site_name} on {local_time(entry.t, ctx.zone)} by "
            f"{entry.by}, after {evidence['disturbed_sq_ft']:,.0f} sq ft had been disturbed "
            f"({self.permit.cite})."
        )
        ctx.alerts.resolve(
            PERMIT_MISSING.kind, self.site_id, entry.t, message=message, evidence=evidence
        )

    def _class_exceeded(self, entry: SiteLogEntry, sq_ft: float, rule: Cited, ctx: Context) -> None:
        self.class_raised = True
        evidence = self._evidence(sq_ft, rule)
        message = (
            f"{self.site_name} is a minor project in its site file, but the site log shows "
            f"{sq_ft:,.0f} sq ft of land disturbed by {local_time(entry.t, ctx.zone)} ("
            f"areas {evidence['areas']}): under {rule.cite} the minor class ends below "
            f"{rule.value:,.0f} square feet, so this is a major project and its duties (and "
            'plan) are those of a major one. Set project = "major" in the site file.'
        )
        self._open(CLASS_EXCEEDED.kind, entry, rule, message, evidence, ctx)

    def _open(
        self,
        kind: str,
        entry: SiteLogEntry,
        rule: Cited,
        message: str,
        evidence: dict[str, str | float | None],
        ctx: Context,
    ) -> None:
        """Both alerts are the site's, critical (the officer hears them), from the entry that
        crossed the threshold, under the threshold's rule."""
        ctx.alerts.open(
            kind,
            self.site_id,
            entry.t,
            Severity.CRITICAL,
            rule=rule.cite,
            message=message,
            evidence=evidence,
        )


def build(site: SiteConfig, ctx: Context) -> list[Detector]:
    """A detector when the site's packs set a threshold and the site has areas."""
    permit = Cited.of(ctx.rules.get("permit.required_over_sq_ft"))
    minor = Cited.of(ctx.rules.get("project.minor_under_sq_ft"))
    if not site.site.paperwork_in_site_log:
        permit = None  # the permit is a plan_approved row: a log without paperwork cannot say
    if site.site.project != "minor":
        minor = None  # a major project (or one treated as major) has nothing to outgrow
    if not site.areas or (permit is None and minor is None):
        return []
    return [SiteScopeDetector(site, permit, minor)]
