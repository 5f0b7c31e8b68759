"""The rain gauges' readings a record of a date range needs: a bounded lead-in, not all.

The daily rain log (NCG01 Part III §A item 1: the gauge read and recorded
daily) and the storms in a report or in ``siltwatch records`` come from
replaying the stored gauge readings through the engine's rain detector
(console/report/document.py ``rain_record``, ingest/outputs/records.py ``daily_rain``), so
that they follow the live engine's quality policy, local days and storm
segmentation. Replaying a site's whole history for one week made a report's
cost grow with the site's age (a year of a 5-minute gauge is 105,120
readings replayed for any range).

What a range needs is only what could still reach into it. After a local
midnight ``M`` preceded by a *quiet* stretch — no rain at any gauge for at
least the longest storm gap (analytics/rain.py ``StormSegmenter``: a storm
ends after that much dry time) and at least the detector's 24-hour
windows — every storm of the range began at or after ``M``, every rolling
window is empty, and each local day from ``M`` on is counted from its own
readings. Replaying from the start of that quiet stretch (its dry readings
warm up the quality screen) then gives, for every day from ``M`` on and
every storm that rained after ``M``, what the whole history gives.
:func:`lead_in_start` finds the latest such midnight at or before the range
(tests/ingest/test_rain_lead_in.py holds the records to the whole-history
ones on generated rain). Where no quiet stretch is found within
:data:`MAX_LEAD_IN_MS`, the whole history is replayed, as before.
"""

from __future__ import annotations

from bisect import bisect_left
from datetime import datetime, time, timedelta

from analytics.events import SensorReading
from analytics.rain import DAY_MS, RainDetector
from analytics.timeutil import MS_PER_S
from ingest.store.queries import SqlStore
from siltwatch.config import SiteConfig

MAX_LEAD_IN_MS = 92 * DAY_MS  # beyond this without a quiet day boundary: the whole history
_SEARCH_STEP_MS = 31 * DAY_MS


def quiet_ms(site: SiteConfig) -> int:
    """How long without rain makes a day boundary a clean start: the longest storm gap
    (plus the gauge's interval, as the segmenter counts it), at least the 24-h windows."""
    from analytics.engine import Engine  # the rain detector as the engine builds it

    rain = Engine(site).detectors.get("rain")
    longest = DAY_MS
    if isinstance(rain, RainDetector):
        for g in rain.gauges.values():
            longest = max(longest, g.gap_ms + g.interval_ms, rain.window_ms)
    return longest


def _midnight_at_or_before(ms: int, site: SiteConfig) -> int:
    zone = site.site.zone
    day = datetime.fromtimestamp(ms / MS_PER_S, zone).date()
    return round(datetime.combine(day, time(), zone).timestamp() * MS_PER_S)


def _previous_midnight(midnight: int, site: SiteConfig) -> int:
    zone = site.site.zone
    day = datetime.fromtimestamp(midnight / MS_PER_S, zone).date() - timedelta(days=1)
    return round(datetime.combine(day, time(), zone).timestamp() * MS_PER_S)


def lead_in_start(site: SiteConfig, store: SqlStore, start_ms: int) -> int | None:
    """The event time from which the gauges' readings give every record from ``start_ms``
    on as the whole history does (None: only the whole history does)."""
    sid = site.site.id
    sensors = [g.sensor for g in site.rain_gauges]
    quiet = quiet_ms(site)
    midnight = _midnight_at_or_before(start_ms, site)
    lo = midnight
    while start_ms - lo < MAX_LEAD_IN_MS:
        lo = max(lo - _SEARCH_STEP_MS, start_ms - MAX_LEAD_IN_MS - quiet)
        wet = sorted(
            t
            for sensor in sensors
            for t, value, _flags in store.sensor_points(sid, sensor, lo, midnight - 1)
            if value != 0.0  # any rain, even a reading the screen would exclude
        )
        while midnight - quiet >= lo:
            first_wet = bisect_left(wet, midnight - quiet)
            if first_wet == len(wet) or wet[first_wet] >= midnight:
                return midnight - quiet
            midnight = _previous_midnight(midnight, site)
    return None


def lead_out_end(site: SiteConfig, store: SqlStore, end_ms: int) -> int | None:
    """The event time up to which the gauges' readings finish every storm still raining
    at ``end_ms``: the end of the first quiet stretch after it (None: no such stretch
    within :data:`MAX_LEAD_IN_MS`, read to the end of the record)."""
    sid = site.site.id
    quiet = quiet_ms(site)
    until = end_ms + quiet
    while until - end_ms <= MAX_LEAD_IN_MS:
        wet = [
            t
            for g in site.rain_gauges
            for t, value, _flags in store.sensor_points(sid, g.sensor, until - quiet + 1, until)
            if value != 0.0
        ]
        if not wet:
            return until
        until = max(wet) + quiet  # later than before: the window left out its first instant
    return None


def gauge_readings(
    site: SiteConfig, store: SqlStore, start_ms: int | None = None, end_ms: int | None = None
) -> list[SensorReading]:
    """The rain gauges' stored readings the records of [``start_ms``, ``end_ms``) need, in
    (time, sensor) order: from :func:`lead_in_start` to :func:`lead_out_end`, or from
    the first reading / to the last (a bound None, or no quiet stretch found)."""
    sid = site.site.id
    since = None if start_ms is None else lead_in_start(site, store, start_ms)
    until = None if end_ms is None else lead_out_end(site, store, end_ms)
    if since is None and until is None:
        readings = [r for g in site.rain_gauges for r in store.readings(sid, g.sensor)]
    else:
        lo = -(2**62) if since is None else since
        hi = 2**62 if until is None else until
        readings = [
            r for g in site.rain_gauges for r in store.readings_between_of(sid, g.sensor, lo, hi)
        ]
    readings.sort(key=lambda r: (r.t, r.sensor))
    return readings
