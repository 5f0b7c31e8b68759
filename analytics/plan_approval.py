"""Plan approval expiry from the site log (kinds and citations:
siltwatch/detections/plan_approval.py).

Each ``plan_approved`` row replaces the approval before it. Its expiry is the
end of its last local day, held to ``plan.max_years`` after the approval (the
same calendar date that many years on; Feb 29 falls back to Feb 28); a timer
checks it then. The site's ``construction_completed`` milestone ends the need
for an approval.
"""

from __future__ import annotations

from datetime import date

from analytics.calendar import SiteCalendar, anniversary
from analytics.cited import Cited
from analytics.detector import Context, Detector
from analytics.events import SiteLogEntry
from analytics.timers import Tag
from analytics.timeutil import iso
from siltwatch.config import SiteConfig
from siltwatch.detections.plan_approval import PLAN_EXPIRED
from siltwatch.plans import parse_plan_approved
from siltwatch.timefmt import local_time
from siltwatch.vocabulary import Milestone, Severity, SiteEvent


class PlanApprovalDetector(Detector):
    """The site's current plan approval and whether it has expired."""

    name = "plan-approval"

    def __init__(self, site: SiteConfig, bound: Cited, calendar: SiteCalendar) -> None:
        self.site_id = site.site.id
        self.site_name = site.site.name or site.site.id
        self.bound = bound
        self.calendar = calendar
        self.approved_at: int | None = None  # the current approval
        self.last_day: date | None = None  # its last day (None: it does not expire)
        self.capped = False
        self.completed = False  # construction_completed was recorded
        self.expired = False  # plan_expired is open

    def on_site_log(self, entry: SiteLogEntry, ctx: Context) -> None:
        if entry.event == SiteEvent.PLAN_APPROVED:
            self._approved(entry, ctx)
        elif (
            entry.event == SiteEvent.MILESTONE and entry.detail == Milestone.CONSTRUCTION_COMPLETED
        ):
            self.completed = True
            self._close(entry.t, f"construction completed ({local_time(entry.t, ctx.zone)})", ctx)

    def on_timer(self, at: int, tag: Tag, ctx: Context) -> None:
        if tag != str(self.approved_at) or self.completed or self.expired:
            return  # a renewed approval, or nothing left to approve
        assert self.approved_at is not None and self.last_day is not None
        self.expired = True
        bound = (
            f" (the row gave a later date; {self.bound.cite} allows at most "
            f"{self.bound.count} years)"
            if self.capped
            else ""
        )
        message = (
            f"Plan approval expired at {self.site_name}: approved "
            f"{local_time(self.approved_at, ctx.zone)}, it held through {self.last_day}{bound}, "
            "and construction is not recorded as completed. Land disturbance without an "
            f"approved plan is a violation ({self.bound.cite}; 96.05(B)(16)). Stop work and "
            "have the plan renewed; record plan_approved in the site log."
        )
        evidence = {
            "approved_at": iso(self.approved_at),
            "expires_on": self.last_day.isoformat(),
            "capped": self.capped,
        }
        ctx.alerts.open(
            PLAN_EXPIRED.kind,
            self.site_id,
            at,
            Severity.CRITICAL,
            rule=self.bound.cite,
            message=message,
            evidence=evidence,
        )

    def _approved(self, entry: SiteLogEntry, ctx: Context) -> None:
        try:
            last = parse_plan_approved(entry.detail)
        except ValueError:
            return  # the site-log checks refuse such a row; a stray one changes nothing
        day = self.calendar.local_date(entry.t)
        limit = anniversary(day, self.bound.count)
        self.capped = last is not None and last > limit
        self.approved_at, self.last_day = entry.t, (limit if self.capped else last)
        self._close(entry.t, f"plan renewed ({local_time(entry.t, ctx.zone)})", ctx)
        if self.last_day is not None:
            ctx.schedule(self, self.calendar.end_of_day(self.last_day), str(entry.t))

    def _close(self, t: int, why: str, ctx: Context) -> None:
        if not self.expired:
            return
        self.expired = False
        message = f"Plan approval at {self.site_name} no longer expired: {why}."
        ctx.alerts.resolve(PLAN_EXPIRED.kind, self.site_id, t, message=message)


def build(site: SiteConfig, ctx: Context) -> list[Detector]:
    """A detector when the site's packs bound a plan approval's life."""
    bound = Cited.of(ctx.rules.get("plan.max_years"))
    if bound is None:
        return []
    return [PlanApprovalDetector(site, bound, SiteCalendar.from_site(site, ctx.rules))]
