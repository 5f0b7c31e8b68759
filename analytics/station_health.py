"""Station health: what an edge station says about itself, turned into alerts.

The agent publishes a retained status every health interval (60 s by default)
with its battery voltage, free disk, outbox backlog and clock sync, and its
MQTT last will says ``offline`` when the link dies. One detector watches every
configured station (kinds and evidence: siltwatch/detections/station_health.py):

* **offline** — the last will (``timed`` False: the time is the arrival), or
  no status for ``station.status_silence_s`` of event time; resolved by the
  next ``online`` status;
* **battery low** — below ``station.battery_low_v``; clears 0.2 V above it, so
  a battery hovering at the level does not page on every status;
* **disk nearly full** — below ``station.disk_free_min_mb``; clears at 120 % of it;
* **backlog growing** — the outbox backlog has not fallen for
  ``station.backlog_growth_h`` and is larger than when that run began (the
  link cannot keep up); clears when the backlog falls;
* **clock not synced** — the agent says it is not synced, or its offset is
  beyond ``station.clock_offset_max_s``; clears when both are fine again.

siltwatch's own diagnostics (no ordinance names them): rules cite the
siltwatch default or the site's override. A report of a station the site
does not configure is counted and ignored: it is not this site's station.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from analytics.detector import Context, Detector
from analytics.events import StationReport
from analytics.timers import Tag
from analytics.timeutil import MS_PER_H, MS_PER_S, iso
from siltwatch.config import SiteConfig
from siltwatch.detections.station_health import (
    BACKLOG_GROWING,
    BATTERY_LOW,
    CLOCK_UNSYNCED,
    DISK_LOW,
    STATION_OFFLINE,
)
from siltwatch.rulepacks import RuleValue
from siltwatch.timefmt import duration, local_time
from siltwatch.vocabulary import Severity

NAME = "station_health"
BATTERY_CLEAR_V = 0.2  # clears this far above the low level
DISK_CLEAR_FACTOR = 1.2  # clears at 120 % of the minimum


@dataclass(slots=True)
class _Station:
    """What one station last said, as far as the alerts need it."""

    station: str
    last_online_at: int | None = None
    backlog: int | None = None
    backlog_run_at: int = 0  # when the backlog last fell (or was first seen)
    backlog_run_from: int = 0  # the backlog then


class StationHealthDetector(Detector):
    """Every configured station's offline, battery, disk, backlog and clock alerts."""

    name = NAME

    def __init__(self, site: SiteConfig, ctx: Context) -> None:
        rules = ctx.rules
        self.low_v = rules.number("station.battery_low_v")
        self.min_mb = rules.number("station.disk_free_min_mb")
        self.max_offset_s = rules.number("station.clock_offset_max_s")
        self.silence_ms = round(rules.number("station.status_silence_s") * MS_PER_S)
        self.growth_ms = round(rules.number("station.backlog_growth_h") * MS_PER_H)
        # The rule each alert cites (plain text: a snapshot holds analytics state only).
        self.rules = {
            what: _rule(what, rules.require(key))
            for what, key in (
                ("status silence", "station.status_silence_s"),
                ("battery", "station.battery_low_v"),
                ("disk", "station.disk_free_min_mb"),
                ("backlog", "station.backlog_growth_h"),
                ("clock", "station.clock_offset_max_s"),
            )
        }
        self.site_name = site.site.name or site.site.id
        self.stations = {st.id: _Station(st.id) for st in site.stations}
        self.ignored_reports = 0

    # --- inputs ---------------------------------------------------------------------

    def on_status(self, report: StationReport, ctx: Context) -> None:
        st = self.stations.get(report.station)
        if st is None:
            self.ignored_reports += 1
            return
        if report.state == "offline":
            why = "last will" if not report.timed else "the station said it goes offline"
            self._offline(st, report.t, why, ctx)
            return
        self._online(st, report, ctx)
        self._battery(st, report, ctx)
        self._disk(st, report, ctx)
        self._clock(st, report, ctx)
        self._backlog(st, report, ctx)

    def on_timer(self, at: int, tag: Tag, ctx: Context) -> None:
        """A silence deadline; only the one set by the station's latest status counts."""
        st = self.stations.get(tag) if isinstance(tag, str) else None  # the station id
        if st is None or st.last_online_at is None:
            return
        if at == st.last_online_at + self.silence_ms:
            self._offline(st, at, "silence", ctx)

    # --- offline --------------------------------------------------------------------------

    def _offline(self, st: _Station, t: int, why: str, ctx: Context) -> None:
        if ctx.alerts.is_open(STATION_OFFLINE.kind, st.station):
            return
        since = (
            f"no status since {local_time(st.last_online_at, ctx.zone)} "
            f"({duration((t - st.last_online_at) / 1000)}), "
            if why == "silence" and st.last_online_at is not None
            else f"its {why} at {local_time(t, ctx.zone)}, "
        )
        ctx.alerts.open(
            STATION_OFFLINE.kind,
            st.station,
            t,
            Severity.WARNING,
            rule=self.rules["status silence"] if why == "silence" else _WILL_RULE,
            message=(
                f"Station {st.station} ({self.site_name}) is offline: {since}"
                "so none of its sensors can be seen. Check its power, the LTE link and "
                "the agent (systemctl status siltwatch-edge); its outbox keeps the readings."
            ),
            evidence=self._evidence(
                st,
                t,
                why=why,
                last_online_at=None if st.last_online_at is None else iso(st.last_online_at),
            ),
        )

    def _online(self, st: _Station, report: StationReport, ctx: Context) -> None:
        t = report.t
        episode = ctx.alerts.get_open(STATION_OFFLINE.kind, st.station)
        if episode is not None:
            ctx.alerts.resolve(
                STATION_OFFLINE.kind,
                st.station,
                t,
                message=(
                    f"Station {st.station} ({self.site_name}) is back online at "
                    f"{local_time(t, ctx.zone)}; readings it kept will follow."
                ),
                evidence={**episode.evidence, "back_online_at": iso(t)},
            )
        st.last_online_at = t
        ctx.schedule(self, t + self.silence_ms, st.station)

    # --- battery, disk, clock -----------------------------------------------------------------

    def _battery(self, st: _Station, report: StationReport, ctx: Context) -> None:
        volts = report.battery_v
        if volts is None:
            return
        low = self.low_v
        self._level(
            BATTERY_LOW.kind,
            st,
            report.t,
            ctx,
            bad=volts < low,
            good=volts >= low + BATTERY_CLEAR_V,
            text=(
                f"battery at {volts:.2f} V, below {low:g} V: charge or replace it before "
                "the station browns out"
            ),
            rule=self.rules["battery"],
            evidence={"battery_v": volts, "low_v": low},
        )

    def _disk(self, st: _Station, report: StationReport, ctx: Context) -> None:
        free = report.disk_free_mb
        if free is None:
            return
        least = self.min_mb
        self._level(
            DISK_LOW.kind,
            st,
            report.t,
            ctx,
            bad=free < least,
            good=free >= least * DISK_CLEAR_FACTOR,
            text=(
                f"{free:,.0f} MB free on its disk, below {least:g} MB: the outbox that keeps "
                "readings through an outage is running out of room"
            ),
            rule=self.rules["disk"],
            evidence={"disk_free_mb": free, "min_mb": least},
        )

    def _clock(self, st: _Station, report: StationReport, ctx: Context) -> None:
        if report.clock_synced is None and report.clock_offset_s is None:
            return
        limit = self.max_offset_s
        off = report.clock_offset_s
        unsynced = report.clock_synced is False
        beyond = off is not None and abs(off) > limit
        text = (
            "its clock is not synced (NTP)"
            if unsynced
            else f"its clock is {off or 0.0:+.1f} s off, beyond {limit:g} s"
        )
        self._level(
            CLOCK_UNSYNCED.kind,
            st,
            report.t,
            ctx,
            bad=unsynced or beyond,
            good=not (unsynced or beyond),
            text=text + ": the times it stamps on readings cannot be trusted",
            rule=self.rules["clock"],
            evidence={
                "clock_synced": report.clock_synced,
                "clock_offset_s": off,
                "max_offset_s": limit,
            },
        )

    def _level(
        self,
        kind: str,
        st: _Station,
        t: int,
        ctx: Context,
        *,
        bad: bool,
        good: bool,
        text: str,
        rule: str,
        evidence: dict[str, Any],
    ) -> None:
        """Open (or refresh) ``kind`` while ``bad``; resolve it once ``good`` (hysteresis)."""
        message = f"Station {st.station} ({self.site_name}): {text}."
        full = self._evidence(st, t, **evidence)
        if bad:
            if ctx.alerts.is_open(kind, st.station):
                ctx.alerts.update(kind, st.station, t, message=message, evidence=full)
            else:
                ctx.alerts.open(
                    kind, st.station, t, Severity.WARNING, rule=rule, message=message, evidence=full
                )
        elif good and (episode := ctx.alerts.get_open(kind, st.station)) is not None:
            ctx.alerts.resolve(
                kind,
                st.station,
                t,
                message=f"{episode.message} Resolved at {local_time(t, ctx.zone)}: "
                f"{_cleared(kind)}.",
                evidence=full,
            )

    # --- backlog ------------------------------------------------------------------------------

    def _backlog(self, st: _Station, report: StationReport, ctx: Context) -> None:
        backlog, t = report.backlog, report.t
        if backlog is None:
            return
        fell = st.backlog is None or backlog < st.backlog
        st.backlog = backlog
        if fell:
            if ctx.alerts.is_open(BACKLOG_GROWING.kind, st.station):
                ctx.alerts.resolve(
                    BACKLOG_GROWING.kind,
                    st.station,
                    t,
                    message=(
                        f"Station {st.station} ({self.site_name}) is catching up at "
                        f"{local_time(t, ctx.zone)}: its backlog fell to {backlog:,} readings."
                    ),
                    evidence=self._backlog_evidence(st, t),
                )
            st.backlog_run_at, st.backlog_run_from = t, backlog
            return
        if t - st.backlog_run_at < self.growth_ms or backlog <= st.backlog_run_from:
            return
        message = (
            f"Station {st.station} ({self.site_name}): its outbox backlog has grown from "
            f"{st.backlog_run_from:,} to {backlog:,} readings since "
            f"{local_time(st.backlog_run_at, ctx.zone)} without falling: the link cannot keep "
            "up (weak LTE signal, a data cap, or the broker refusing it)."
        )
        if ctx.alerts.is_open(BACKLOG_GROWING.kind, st.station):
            ctx.alerts.update(
                BACKLOG_GROWING.kind,
                st.station,
                t,
                message=message,
                evidence=self._backlog_evidence(st, t),
            )
            return
        ctx.alerts.open(
            BACKLOG_GROWING.kind,
            st.station,
            t,
            Severity.WARNING,
            rule=self.rules["backlog"],
            message=message,
            evidence=self._backlog_evidence(st, t),
        )

    def _backlog_evidence(self, st: _Station, t: int) -> dict[str, Any]:
        return self._evidence(
            st,
            t,
            backlog=st.backlog,
            backlog_before=st.backlog_run_from,
            growing_since=iso(st.backlog_run_at),
        )

    # --- words ------------------------------------------------------------------------------

    @staticmethod
    def _evidence(st: _Station, t: int, **more: Any) -> dict[str, Any]:
        return {"station": st.station, "status_at": iso(t), **more}


def _rule(what: str, value: RuleValue) -> str:
    return f"siltwatch station health: {what} ({value.key} = {value.value}; {value.cite()})"


_WILL_RULE = "siltwatch station health: the station's MQTT last will"


def _cleared(kind: str) -> str:
    return {
        BATTERY_LOW.kind: "the battery is charged again",
        DISK_LOW.kind: "its disk has room again",
        CLOCK_UNSYNCED.kind: "its clock is synced again",
    }.get(kind, "the problem has cleared")


def build(site: SiteConfig, ctx: Context) -> list[Detector]:
    """One detector for all the site's stations (none without stations)."""
    return [StationHealthDetector(site, ctx)] if site.stations else []
