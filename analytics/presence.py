"""The applicant or a representative on site during construction or grading (kinds and
citations: siltwatch/detections/presence.py).

Days are the site's local days. The detector remembers the last local day
someone was recorded on site and the open episode of each day; rows come in
event time, so an ``on_site`` row dated before the work counts even if it was
typed afterwards.

A site log that has never recorded anyone on site says nothing about presence:
it is a log that does not keep that record, not evidence that nobody was there.
So the check starts with the log's first ``on_site`` row; before it, work rows
raise nothing (no alert the law does not ask for: an officer told "nobody on
site" on the strength of a missing record would stop trusting the rest).
"""

from __future__ import annotations

from datetime import date, timedelta

from analytics.calendar import SiteCalendar
from analytics.detector import Context, Detector
from analytics.events import SiteLogEntry
from analytics.timers import Tag
from analytics.timeutil import iso
from siltwatch.config import SiteConfig
from siltwatch.detections.presence import REPRESENTATIVE_ABSENT
from siltwatch.officials import officer_notified
from siltwatch.timefmt import local_time
from siltwatch.vocabulary import Severity, SiteEvent

# Construction or grading activity, as the site log records it.
WORK = frozenset({SiteEvent.DISTURBED, SiteEvent.CLEARED, SiteEvent.GRADED, SiteEvent.ACTIVE})


class PresenceDetector(Detector):
    """Whether someone of the applicant's is recorded on site on each day of work."""

    name = "presence"

    def __init__(self, site: SiteConfig, cite: str, calendar: SiteCalendar) -> None:
        self.site_name = site.site.name or site.site.id
        self.areas = {a.id for a in site.areas}
        self.cite = cite
        self.calendar = calendar
        self.present_on: date | None = None  # the last local day someone was on site
        self.records_presence = False  # the log has recorded someone on site at least once
        self.open: dict[str, dict[str, str | None]] = {}  # day -> its open episode's evidence
        self.work_at: dict[str, int] = {}  # day -> the time of its first unattended work

    def on_site_log(self, entry: SiteLogEntry, ctx: Context) -> None:
        day = self.calendar.local_date(entry.t)
        key = day.isoformat()
        if entry.event == SiteEvent.ON_SITE:
            self.present_on, self.records_presence = day, True
            if key in self.open:
                self._late(key, entry, ctx)
        elif (
            entry.event in WORK
            and self.records_presence
            and entry.area in self.areas
            and self.present_on != day
            and key not in self.open
        ):
            self._open(key, day, entry, ctx)

    def on_timer(self, at: int, tag: Tag, ctx: Context) -> None:
        if not isinstance(tag, str):
            return
        evidence = self.open.pop(tag, None)  # the tag is the day's key
        if evidence is None:
            return  # resolved by a late on_site row
        work_t = self.work_at.pop(tag)
        message = (
            f"{self.site_name}: the day {tag} ended with nobody of the applicant's recorded "
            f"on site while work took place ({evidence['work']} at "
            f"{local_time(work_t, ctx.zone)}); {self.cite}."
        )
        ctx.alerts.resolve(REPRESENTATIVE_ABSENT.kind, tag, at, message=message, evidence=evidence)

    def _open(self, key: str, day: date, entry: SiteLogEntry, ctx: Context) -> None:
        what = f"{entry.event} {entry.area}"
        evidence: dict[str, str | None] = {
            "day": key,
            "work_at": iso(entry.t),
            "work": what,
            "by": entry.by,
        }
        self.open[key], self.work_at[key] = evidence, entry.t
        ctx.schedule(self, self.calendar.start_of_day(day + timedelta(days=1)), key)
        message = (
            f"Work at {self.site_name} on {local_time(entry.t, ctx.zone)} ({what}, recorded by "
            f"{entry.by}) with nobody of the applicant's recorded on site that day: under "
            f"{self.cite} the applicant or developer or a representative is on site at all "
            "times when construction or grading activity takes place. Record who is on site "
            f"(site log event on_site, detail: the name). {officer_notified(ctx.rules)}"
        )
        ctx.alerts.open(
            REPRESENTATIVE_ABSENT.kind,
            key,
            entry.t,
            Severity.WARNING,
            rule=self.cite,
            message=message,
            evidence=evidence,
        )

    def _late(self, key: str, entry: SiteLogEntry, ctx: Context) -> None:
        work_t = self.work_at.pop(key)
        evidence = self.open.pop(key) | {"on_site_at": iso(entry.t)}
        message = (
            f"{entry.detail} recorded on site at {self.site_name} on "
            f"{local_time(entry.t, ctx.zone)} (by {entry.by}), after work began that day "
            f"({evidence['work']} at {local_time(work_t, ctx.zone)}); {self.cite}."
        )
        ctx.alerts.resolve(
            REPRESENTATIVE_ABSENT.kind, key, entry.t, message=message, evidence=evidence
        )


def build(site: SiteConfig, ctx: Context) -> list[Detector]:
    """A detector when the site's packs ask for the representative on site."""
    rule = ctx.rules.get("presence.representative_on_site")
    if rule is None or rule.value is not True or not site.areas:
        return []
    return [PresenceDetector(site, rule.cite(), SiteCalendar.from_site(site, ctx.rules))]
