"""Open ground against the disturbed-area limits, and cold-season earthwork (site log).

Kinds and citations: siltwatch/detections/site_limits.py. An area is open from
the first ``disturbed``/``cleared``/``graded`` row until a cover row; the open
acres are the sum of the open areas' ``acres`` (the site file's). One episode
per limit: it opens when the open acres pass the limit, is refreshed while
they stay over, and resolves when cover brings them back under. Cold-season
earthwork is a reminder per area, resolved by its cover.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from analytics.calendar import SiteCalendar
from analytics.detector import Context, Detector
from analytics.events import SiteLogEntry
from analytics.timeutil import iso
from siltwatch.config import SiteConfig
from siltwatch.detections.site_limits import COLD_MEASURES, COLD_SEASON, DISTURBED_AREA
from siltwatch.rulepacks import Rules
from siltwatch.timefmt import local_time
from siltwatch.vocabulary import Severity, SiteEvent

OPENING = frozenset({SiteEvent.DISTURBED, SiteEvent.CLEARED, SiteEvent.GRADED})
COVERING = frozenset({SiteEvent.TEMPORARY_COVER, SiteEvent.PERMANENT_COVER})


@dataclass(frozen=True)
class AcreLimit:
    subject: str  # "site" | "hqw"
    acres: float
    cite: str
    hqw_only: bool


class SiteLimitsDetector(Detector):
    name = "site-limits"

    def __init__(
        self,
        site: SiteConfig,
        limits: list[AcreLimit],
        cold: tuple[str, str, str] | None,
        calendar: SiteCalendar,
    ) -> None:
        self.site_name = site.site.name or site.site.id
        self.acres = {a.id: a.acres for a in site.areas}
        self.hqw = {a.id for a in site.areas if a.hqw_zone}
        self.limits = limits
        self.cold = cold  # (from "MM-DD", to "MM-DD", citation)
        self.calendar = calendar
        self.open_areas: set[str] = set()
        self.cold_areas: set[str] = set()  # cleared or graded in the cold season
        self.measured: set[str] = set()  # with extra measures recorded since

    def on_site_log(self, entry: SiteLogEntry, ctx: Context) -> None:
        area = entry.area
        if area is None or area not in self.acres:
            return
        if entry.event == SiteEvent.EXTRA_MEASURES:
            self.measured.add(area)
            if ctx.alerts.is_open(COLD_MEASURES.kind, area):
                ctx.alerts.resolve(
                    COLD_MEASURES.kind,
                    area,
                    entry.t,
                    message=f"Extra measures recorded for area {area} at {self.site_name} on "
                    f"{local_time(entry.t, ctx.zone)} by {entry.by}: {entry.detail or '-'}.",
                )
            return
        if entry.event in (SiteEvent.SEEDED, SiteEvent.PERMANENT_COVER):
            self._revegetated(entry, area, ctx)
        if entry.event in OPENING:
            self.open_areas.add(area)
            self._cold_season(entry, area, ctx)
        elif entry.event in COVERING:
            self.open_areas.discard(area)
            if ctx.alerts.is_open(COLD_SEASON.kind, area):
                ctx.alerts.resolve(COLD_SEASON.kind, area, entry.t)
        else:
            return
        for limit in self.limits:
            self._check(limit, entry.t, ctx)

    def _check(self, limit: AcreLimit, t: int, ctx: Context) -> None:
        areas = sorted(a for a in self.open_areas if not limit.hqw_only or a in self.hqw)
        acres = round(sum(self.acres[a] for a in areas), 4)
        evidence = {"open_acres": acres, "limit_acres": limit.acres, "areas": areas, "at": iso(t)}
        where = "in High Quality Water zones " if limit.hqw_only else ""
        message = (
            f"{acres:g} acres {where}are open at {self.site_name} as of "
            f"{local_time(t, ctx.zone)} ({', '.join(areas) or 'none'}), over the "
            f"{limit.acres:g}-acre limit of {limit.cite}. Cover open areas before opening more."
        )
        is_open = ctx.alerts.is_open(DISTURBED_AREA.kind, limit.subject)
        if acres > limit.acres:
            if is_open:
                ctx.alerts.update(
                    DISTURBED_AREA.kind, limit.subject, t, message=message, evidence=evidence
                )
            else:
                ctx.alerts.open(
                    DISTURBED_AREA.kind,
                    limit.subject,
                    t,
                    Severity.CRITICAL,
                    rule=limit.cite,
                    message=message,
                    evidence=evidence,
                )
        elif is_open:
            ctx.alerts.resolve(
                DISTURBED_AREA.kind,
                limit.subject,
                t,
                message=f"Back within the {limit.acres:g}-acre limit of {limit.cite}: "
                f"{acres:g} acres {where}open at {local_time(t, ctx.zone)}.",
                evidence=evidence,
            )

    def _revegetated(self, entry: SiteLogEntry, area: str, ctx: Context) -> None:
        """§148-11 I(3)(e)[3][e]: the revegetation of an area cleared or graded in the cold
        season incorporates extra measures; none recorded by then is an alert."""
        if self.cold is None or area not in self.cold_areas or area in self.measured:
            return
        if ctx.alerts.is_open(COLD_MEASURES.kind, area):
            return
        cite = self.cold[2]
        ctx.alerts.open(
            COLD_MEASURES.kind,
            area,
            entry.t,
            Severity.WARNING,
            rule=cite,
            message=(
                f"Area {area} at {self.site_name}, cleared or graded between October 15 and "
                f"April 15, was revegetated ({entry.event}, {local_time(entry.t, ctx.zone)}, "
                f"recorded by {entry.by}) with no extra measures recorded: under {cite} its "
                "revegetation incorporates extra measures (screen mesh, netting, extra mulch, "
                "siltation fences). Record them in the site log (event extra_measures, "
                f"area {area})."
            ),
            evidence={"area": area, "event": entry.event, "at": iso(entry.t)},
        )

    def _cold_season(self, entry: SiteLogEntry, area: str, ctx: Context) -> None:
        if self.cold is None:
            return
        start, end, cite = self.cold
        day = self.calendar.local_date(entry.t)
        if not in_season(day, start, end):
            return
        self.cold_areas.add(area)
        if ctx.alerts.is_open(COLD_SEASON.kind, area):
            return
        ctx.alerts.open(
            COLD_SEASON.kind,
            area,
            entry.t,
            Severity.INFO,
            rule=cite,
            message=(
                f"Area {area} at {self.site_name} was {entry.event} on "
                f"{local_time(entry.t, ctx.zone)}, between {start} and {end} (month-day): "
                f"{cite} requires extra measures during revegetation (erosion-control "
                "matting or netting, extra mulch, additional silt fence). Record them; the "
                "reminder closes when the area is covered."
            ),
            evidence={"area": area, "event": entry.event, "at": iso(entry.t)},
        )


def in_season(day: date, start: str, end: str) -> bool:
    """``day`` (month-day) falls in the window from ``start`` to ``end``, which may wrap
    the new year (10-15 to 04-15)."""
    md = day.strftime("%m-%d")
    return start <= md or md <= end if start > end else start <= md <= end


def _limits(rules: Rules) -> list[AcreLimit]:
    site_wide = rules.get("area.max_disturbed_acres")
    hqw = rules.get("area.max_uncovered_acres_hqw")
    return [
        AcreLimit(subject, float(rule.value), rule.cite(), hqw_only)
        for subject, rule, hqw_only in (("site", site_wide, False), ("hqw", hqw, True))
        if rule is not None
    ]


def build(site: SiteConfig, ctx: Context) -> list[Detector]:
    limits = _limits(ctx.rules)
    season = ctx.rules.get("cover.cold_season")
    cold = None if season is None else (str(season.value[0]), str(season.value[1]), season.cite())
    if not site.areas or (not limits and cold is None):
        return []
    return [SiteLimitsDetector(site, limits, cold, SiteCalendar.from_site(site, ctx.rules))]
