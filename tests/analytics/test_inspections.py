"""Inspection duties: storms, routine cadences, deadlines and overdue alerts (hand-computed).

Times are written in the sites' local time (America/New_York) and checked in UTC.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from analytics.engine import Engine
from analytics.episodes import stable_id
from analytics.events import Inspection, SensorReading
from analytics.timeutil import to_ms
from siltwatch.config import SiteConfig
from siltwatch.schema import Alert, Duty

NY = ZoneInfo("America/New_York")
UTC = ZoneInfo("UTC")


def local(text: str) -> int:
    return to_ms(datetime.fromisoformat(text).replace(tzinfo=NY))


def utc(text: str) -> int:
    return to_ms(datetime.fromisoformat(text).replace(tzinfo=UTC))


def make_site(
    packs: list[str],
    *,
    site_id: str = "ll-boulevard",
    unit: str = "mm",
    gauge: bool = True,
    acres: float | None = None,
    holidays: list[str] | None = None,
    cover: str | None = None,
    overrides: dict[str, Any] | None = None,
) -> SiteConfig:
    sensors: list[dict[str, Any]] = [
        {"id": "lvl", "kind": "water_level", "unit": "m", "interval_s": 300}
    ]
    if gauge:
        tip = {"tip_mm": 0.2} if unit == "mm" else {"tip_in": 0.01}
        sensors.append({"id": "rain-1", "kind": "rain", "unit": unit, "interval_s": 300, **tip})
    info: dict[str, Any] = {"id": site_id, "name": "Test site", "timezone": "America/New_York"}
    info["rule_packs"] = packs
    if acres is not None:
        info["disturbed_acres"] = acres
    if holidays:
        info["holidays"] = holidays
    if cover:
        info["permanent_cover_at"] = cover
    data: dict[str, Any] = {"site": info, "stations": [{"id": "yard", "sensors": sensors}]}
    if gauge:
        data["rain_gauges"] = [{"id": "gauge-1", "sensor": "rain-1"}]
    if overrides:
        data["rule_overrides"] = overrides
    return SiteConfig.model_validate(data)


def lake_lure(**kw: Any) -> SiteConfig:
    return make_site(["nc-ncg01", "nc-lake-lure"], **kw)


def rain(first: int, depths: Iterable[float], step_s: int = 300) -> list[SensorReading]:
    """Readings every ``step_s`` from ``first``: the depth that fell in the interval ending then."""
    return [SensorReading("rain-1", first + i * step_s * 1000, d) for i, d in enumerate(depths)]


def start(t: int) -> list[SensorReading]:
    """One level reading: the first event the engine sees (starts the routine clock)."""
    return [SensorReading("lvl", t, 0.0)]


def run(
    site: SiteConfig,
    readings: list[SensorReading],
    inspections: Iterable[Inspection] = (),
    *,
    end: int,
) -> Engine:
    engine = Engine(site)
    engine.feed(readings)
    for insp in inspections:
        engine.feed_inspection(insp)
    engine.finish(end)
    return engine


def inspected_once(site: SiteConfig, at: str, by: str, *, end: int) -> Engine:
    """No rain; the first reading on Monday 05-04 09:00, one inspection at local ``at``."""
    return run(site, start(local("2026-05-04T09:00")), [Inspection(local(at), by)], end=end)


def duties(engine: Engine, reason: str) -> list[Duty]:
    return [d for d in engine.duties() if d.reason == reason]


def overdue_alerts(engine: Engine) -> list[Alert]:
    return [a for a in engine.alerts() if a.kind == "inspection_overdue"]


def z(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=UTC)


# --- storm thresholds -----------------------------------------------------------------------


def test_nc_threshold_in_mm_24_mm_no_duty_26_mm_duty() -> None:
    """NCG01 1.0 in = 25.4 mm on the Lake Lure site (gauge in mm, 0.2 mm tips)."""
    site = lake_lure()
    begin = start(local("2026-05-04T09:00"))
    # 1.0 mm (5 tips) every 5 min from Tue 10:05: 24 readings end 12:00, 26 end 12:10.
    dry = run(
        site, begin + rain(local("2026-05-05T10:05"), [1.0] * 24), end=local("2026-05-07T12:00")
    )
    assert duties(dry, "storm") == []
    assert len(dry.detectors["rain"].storms()) == 1  # type: ignore[attr-defined]
    wet = run(
        site, begin + rain(local("2026-05-05T10:05"), [1.0] * 26), end=local("2026-05-07T12:00")
    )
    [duty] = duties(wet, "storm")
    assert duty.subject == "gauge-1@2026-05-05T14:00:00Z"  # rain began 10:00 EDT
    assert duty.created_at == z(local("2026-05-05T12:10"))  # the rain ended (business hours)
    assert duty.due_at == z(local("2026-05-06T12:10"))  # + 24 h
    assert duty.rule == "NCG01 Part III §A"
    assert duty.completed_at is None
    # Nobody inspected: due Wed 12:10, the record ends Thu 12:00.
    [alert] = [a for a in overdue_alerts(wet) if a.subject == duty.id]
    assert alert.opened_at == z(local("2026-05-06T12:10"))


def test_storm_duty_overdue_alert_then_resolved() -> None:
    site = lake_lure()
    readings = start(local("2026-05-04T09:00")) + rain(local("2026-05-05T10:05"), [1.0] * 26)
    eng = run(
        site,
        readings,
        [Inspection(local("2026-05-06T15:10"), "Jo Whitaker")],
        end=local("2026-05-07T12:00"),
    )
    [duty] = duties(eng, "storm")
    assert duty.completed_at == z(local("2026-05-06T15:10"))
    [alert] = [a for a in overdue_alerts(eng) if a.subject == duty.id]
    assert alert.severity == "critical"
    assert alert.opened_at == z(local("2026-05-06T12:10"))  # at the due time
    assert alert.resolved_at == z(local("2026-05-06T15:10"))  # by the inspection
    assert alert.rule == "NCG01 Part III §A"
    assert "3.0 h late" in alert.message


def test_long_storm_many_hours_over_threshold_is_one_duty() -> None:
    """30 h of 0.2 mm every 5 min (57.6 mm in the wettest 24 h): one storm, one duty."""
    site = lake_lure()
    readings = start(local("2026-05-04T09:00")) + rain(local("2026-05-05T00:05"), [0.2] * 360)
    eng = run(site, readings, end=local("2026-05-08T00:00"))
    [duty] = duties(eng, "storm")
    # The rain ends Wed 06:00 (before business hours): the later of +24 h (Thu 06:00) and
    # the start of the next business day (Thu 08:00 EDT = 12:00Z).
    assert duty.created_at == z(local("2026-05-06T06:00"))
    assert duty.due_at == z(utc("2026-05-07T12:00"))
    [storm] = eng.detectors["rain"].storms()  # type: ignore[attr-defined]
    assert storm.depth() == 72.0
    assert storm.peak_window() == 57.6


def test_epa_quarter_inch_threshold_and_plain_24_hours() -> None:
    site = make_site(["epa-cgp-2022"], unit="in", site_id="epa")
    begin = start(local("2026-05-08T08:00"))
    # 0.01 in every 5 min from Fri 17:00: 24 readings = 0.24 in, 25 = 0.25 in ending 19:00.
    below = run(
        site, begin + rain(local("2026-05-08T17:00"), [0.01] * 24), end=local("2026-05-10T12:00")
    )
    assert duties(below, "storm") == []
    at = run(
        site, begin + rain(local("2026-05-08T17:00"), [0.01] * 25), end=local("2026-05-10T12:00")
    )
    [duty] = duties(at, "storm")
    assert duty.rule == "per CGP 2022 Part 4.2"
    assert duty.created_at == z(local("2026-05-08T19:00"))
    # EPA has no business-day rule: Friday 19:00 + 24 h = Saturday 19:00 EDT.
    assert duty.due_at == z(utc("2026-05-09T23:00"))


# --- NC deadlines: weekends, holidays, DST ------------------------------------------------------


def test_nc_rain_ending_friday_evening_is_due_monday_opening() -> None:
    site = lake_lure()
    readings = start(local("2026-05-08T08:00")) + rain(local("2026-05-08T16:35"), [1.0] * 30)
    eng = run(site, readings, end=local("2026-05-11T18:00"))
    [duty] = duties(eng, "storm")
    assert duty.created_at == z(utc("2026-05-08T23:00"))  # Fri 19:00 EDT
    assert duty.due_at == z(utc("2026-05-11T12:00"))  # Mon 08:00 EDT
    [alert] = [a for a in overdue_alerts(eng) if a.subject == duty.id]
    assert alert.opened_at == z(utc("2026-05-11T12:00"))
    assert alert.resolved_at is None  # still open at the end of the record
    assert "The Erosion Control Officer is notified." in alert.message and duty.id in alert.message
    assert "NCG01 Part III §A" in alert.message
    assert alert.evidence["overdue_h"] == 10.0  # Mon 08:00 -> 18:00


def test_nc_holiday_monday_moves_the_deadline_to_tuesday() -> None:
    site = lake_lure(holidays=["2026-05-25"])
    readings = start(local("2026-05-22T08:00")) + rain(local("2026-05-22T16:35"), [1.0] * 30)
    eng = run(site, readings, end=local("2026-05-26T07:00"))
    [duty] = duties(eng, "storm")
    assert duty.due_at == z(utc("2026-05-26T12:00"))  # Tue 08:00 EDT


def test_nc_storm_ending_across_the_dst_change() -> None:
    """Rain Sat 2026-03-07 22:00 EST to Sun 03-08 03:30 EDT (clocks jump at 02:00)."""
    site = lake_lure()
    # 03:00Z to 07:30Z = 4.5 h: 54 readings of 0.6 mm = 32.4 mm.
    readings = start(utc("2026-03-06T15:00")) + rain(utc("2026-03-08T03:05"), [0.6] * 54)
    eng = run(site, readings, end=utc("2026-03-10T00:00"))
    [duty] = duties(eng, "storm")
    assert duty.subject == "gauge-1@2026-03-08T03:00:00Z"
    assert duty.created_at == z(utc("2026-03-08T07:30"))  # Sun 03:30 EDT
    # Sunday is not a business day: Mon 08:00 EDT = 12:00Z (EST would have been 13:00Z).
    assert duty.due_at == z(utc("2026-03-09T12:00"))
    # EPA counts 24 elapsed hours through the same change: Mon 07:30Z = 03:30 EDT.
    epa = make_site(["epa-cgp-2022"], unit="in", site_id="epa")
    readings = start(utc("2026-03-06T15:00")) + rain(utc("2026-03-08T03:05"), [0.02] * 54)
    [epa_duty] = duties(run(epa, readings, end=utc("2026-03-10T00:00")), "storm")
    assert epa_duty.due_at == z(utc("2026-03-09T07:30"))


# --- when the storm duty exists and what completes it ---------------------------------------------


def test_inspection_completes_only_duties_open_at_its_time() -> None:
    """During the rain: not the storm duty. After the rain ended (even before siltwatch knew
    it had ended, i.e. inside the 6 h dry gap): yes."""
    site = lake_lure()
    readings = start(local("2026-05-04T09:00")) + rain(local("2026-05-05T10:05"), [1.0] * 26)
    during = Inspection(local("2026-05-05T11:00"), "Jo Whitaker")
    after = Inspection(local("2026-05-05T13:00"), "Jo Whitaker")
    eng = run(site, readings, [during], end=local("2026-05-07T12:00"))
    [duty] = duties(eng, "storm")
    assert duty.completed_at is None
    routine = duties(eng, "routine")
    # The inspection during the rain did complete the routine duty open then (created Mon).
    assert [d.completed_at for d in routine] == [z(local("2026-05-05T11:00")), None]
    eng = run(site, readings, [during, after], end=local("2026-05-07T12:00"))
    [duty] = duties(eng, "storm")
    assert duty.completed_at == z(local("2026-05-05T13:00"))
    assert overdue_alerts(eng) == []


def test_named_storm_inspection_completes_it_and_resets_the_7_day_clock() -> None:
    site = lake_lure()
    readings = start(local("2026-05-04T09:00")) + rain(local("2026-05-05T10:05"), [1.0] * 26)
    storm_id = stable_id(
        "du",
        "ll-boulevard",
        "inspection",
        "storm",
        "gauge-1@2026-05-05T14:00:00Z",
        local("2026-05-05T12:10"),
    )
    insp = Inspection(local("2026-05-06T09:00"), "Jo Whitaker", storm_id)
    eng = run(site, readings, [insp], end=local("2026-05-07T12:00"))
    [storm] = duties(eng, "storm")
    assert storm.id == storm_id and storm.completed_at == z(local("2026-05-06T09:00"))
    # NCG01 Part III §A: the rain-event inspection resets the 7-day clock.
    first, second = duties(eng, "routine")
    assert first.completed_at == z(local("2026-05-06T09:00"))
    assert second.created_at == z(local("2026-05-06T09:00"))
    assert second.due_at == z(local("2026-05-14T00:00"))  # end of Wed 05-13
    # The quarterly duty was not named: still open.
    [quarterly] = duties(eng, "quarterly")
    assert quarterly.completed_at is None


def test_storm_still_raining_at_the_end_of_the_record_creates_its_duty() -> None:
    site = lake_lure()
    readings = start(local("2026-05-04T09:00")) + rain(local("2026-05-05T10:05"), [1.0] * 26)
    eng = run(site, readings, end=local("2026-05-05T14:00"))  # 1 h 50 min after the last tip
    [duty] = duties(eng, "storm")
    assert duty.created_at == z(local("2026-05-05T12:10"))
    assert duty.due_at == z(local("2026-05-06T12:10"))
    # Not qualified yet at the end (24 mm): no duty.
    eng = run(
        site,
        start(local("2026-05-04T09:00")) + rain(local("2026-05-05T10:05"), [1.0] * 24),
        end=local("2026-05-05T14:00"),
    )
    assert duties(eng, "storm") == []


def test_storm_duties_without_any_routine_rule() -> None:
    site = make_site(
        ["wa-cswgp"], unit="in", site_id="wa", overrides={"inspection.storm_threshold_in": 0.5}
    )
    readings = rain(local("2026-05-05T10:05"), [0.05] * 12)  # 0.60 in, ends 11:00
    eng = run(site, readings, end=local("2026-05-06T12:00"))
    assert [d.reason for d in eng.duties()] == ["storm"]
    [duty] = eng.duties()
    assert duty.due_at == z(local("2026-05-06T11:00"))
    # No pack of the site sets a storm threshold: the rule is the site's own configuration.
    assert duty.rule == "site configuration (inspection.storm_threshold_in)"


# --- routine cadences -----------------------------------------------------------------------------


def ny_site(acres: float = 3.2) -> SiteConfig:
    return make_site(["ny-lake-george"], site_id="lg", gauge=False, acres=acres)


def test_routine_7_day_duties_and_their_reset_by_an_inspection() -> None:
    eng = inspected_once(ny_site(), "2026-05-07T10:00", "Dana Ruiz", end=utc("2026-05-16T12:00"))
    first, second = duties(eng, "routine")
    assert first.created_at == z(utc("2026-05-04T13:00"))  # the clock starts at the first reading
    assert first.due_at == z(utc("2026-05-12T04:00"))  # end of Mon 05-11 (7 calendar days)
    assert first.completed_at == z(utc("2026-05-07T14:00"))
    assert second.created_at == z(utc("2026-05-07T14:00"))  # restarted by the inspection
    assert second.due_at == z(utc("2026-05-15T04:00"))  # end of Thu 05-14
    assert second.completed_at is None
    [alert] = overdue_alerts(eng)
    assert alert.subject == second.id
    assert alert.opened_at == z(utc("2026-05-15T04:00"))
    assert alert.resolved_at is None
    assert alert.rule == "Lake George §148-10 A; NY GP-0-25-001 Part IV.C"
    assert alert.evidence["overdue_h"] == 32.0
    assert (
        "32.0 h overdue" in alert.message
        and "The Stormwater Management Officer is notified." in alert.message
    )


def test_overdue_alert_opens_at_due_time_and_the_inspection_resolves_it() -> None:
    eng = inspected_once(ny_site(), "2026-05-12T10:00", "Dana Ruiz", end=utc("2026-05-13T00:00"))
    [alert] = overdue_alerts(eng)
    first, second = duties(eng, "routine")
    assert alert.subject == first.id
    assert (alert.opened_at, alert.resolved_at) == (
        z(utc("2026-05-12T04:00")),
        z(utc("2026-05-12T14:00")),
    )
    assert [(e.at, e.severity) for e in alert.escalations] == [
        (z(utc("2026-05-12T04:00")), "critical")
    ]
    assert first.completed_at == z(utc("2026-05-12T14:00"))
    assert second.due_at == z(utc("2026-05-20T04:00"))


def test_ny_twice_weekly_at_least_two_full_days_apart() -> None:
    site = ny_site(acres=6.0)
    inspections = [
        Inspection(local("2026-05-04T15:00"), "Dana Ruiz"),  # first of the week
        Inspection(local("2026-05-05T15:00"), "Dana Ruiz"),  # too soon: counts for nothing
        Inspection(local("2026-05-07T10:00"), "Dana Ruiz"),  # 2 full days later: the second
    ]
    eng = run(site, start(local("2026-05-04T09:00")), inspections, end=utc("2026-05-12T12:00"))
    a1, b1, a2 = duties(eng, "routine")
    assert (a1.created_at, a1.due_at) == (z(utc("2026-05-04T13:00")), z(utc("2026-05-08T04:00")))
    assert a1.completed_at == z(utc("2026-05-04T19:00"))
    # The second appears at the start of Thu (Mon + 3) and is due by the end of Sun 05-10.
    assert (b1.created_at, b1.due_at) == (z(utc("2026-05-07T04:00")), z(utc("2026-05-11T04:00")))
    assert b1.completed_at == z(utc("2026-05-07T14:00"))
    # Next 7-day period from Mon 05-11 00:00 EDT.
    assert (a2.created_at, a2.due_at) == (z(utc("2026-05-11T04:00")), z(utc("2026-05-15T04:00")))
    assert a2.completed_at is None
    assert all(d.rule == "Lake George §148-10 A; NY GP-0-25-001 Part IV.C" for d in (a1, b1, a2))
    assert overdue_alerts(eng) == []


def test_quarterly_until_permanent_cover() -> None:
    site = lake_lure(cover="2026-08-01")
    eng = inspected_once(site, "2026-06-15T10:00", "Jo Whitaker", end=utc("2026-10-15T00:00"))
    q1, q2 = duties(eng, "quarterly")  # no duty for the quarter from 10-01 (cover on 08-01)
    assert (q1.created_at, q1.due_at) == (z(utc("2026-05-04T13:00")), z(utc("2026-07-01T04:00")))
    assert q1.completed_at == z(utc("2026-06-15T14:00"))
    assert (q2.created_at, q2.due_at) == (z(utc("2026-07-01T04:00")), z(utc("2026-10-01T04:00")))
    # Permanent cover on 08-01 (local midnight, EDT): the quarter it falls in is not owed,
    # so no overdue alert goes to the officer when that quarter ends uninspected.
    assert q2.completed_at == z(utc("2026-08-01T04:00"))
    assert [a for a in overdue_alerts(eng) if a.subject == q2.id] == []


def test_routine_duties_without_rain_gauges_and_without_rain() -> None:
    eng = run(ny_site(), start(local("2026-05-04T09:00")), end=local("2026-05-10T00:00"))
    assert [d.reason for d in eng.duties()] == ["routine"]
    assert "rain" not in eng.detectors


def test_duties_span_is_stable_for_one_week_of_readings() -> None:
    """Many readings, no rain: still exactly one routine duty per restart (not one per reading)."""
    t0 = local("2026-05-04T09:00")
    readings = [SensorReading("lvl", t0 + i * 300_000, 0.0) for i in range(12 * 24 * 5)]
    eng = run(ny_site(), readings, end=t0 + int(timedelta(days=5).total_seconds() * 1000))
    assert len(eng.duties()) == 1
