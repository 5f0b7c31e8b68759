"""The InfluxQL behind every panel, and the reference lines drawn with it.

Raw InfluxQL (not Flux, not the SQL of 3.x) because it is the one language
InfluxDB 1.8, 2.x (through its DBRP mapping) and 3.x all answer, so one
dashboard serves any of them. Grafana fills in the macros before sending:
``$timeFilter`` (the dashboard range), ``$__interval`` (range / pixels),
``${__from}``/``${__to}`` (the range ends in epoch ms) and ``$site`` (the
dashboard's constant variable). tests/dashboards substitutes them the same way
and runs every query against a real InfluxDB 1.x.

Only siltwatch may be imported here (README.md, "Folders"): the limit, trap
geometry and drained-level arithmetic behind the reference lines is the one the
detectors use, in siltwatch/rulemath.py (tests/foundation/test_rulemath.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from siltwatch import measurements as m
from siltwatch import rulemath
from siltwatch.config import InfiltrationPractice, SedimentTrap, SiteConfig, TurbidityPair
from siltwatch.units import from_metres

SITE_FILTER = "\"site\" = '$site'"
ROLLING_RAIN_H = 24


def _sensor_filter(sensor: str) -> str:
    return f"{SITE_FILTER} AND \"sensor\" = '{sensor}'"


def series(sensor: str, aggregate: str, alias: str, *, fill: str = "null") -> str:
    """One aggregate of one sensor per ``$__interval`` bucket over the dashboard range."""
    return (
        f'SELECT {aggregate}("{m.READING_VALUE}") AS "{alias}" FROM "{m.READING}" '
        f"WHERE {_sensor_filter(sensor)} AND $timeFilter "
        f"GROUP BY time($__interval) fill({fill})"
    )


def computed(sensor: str, expression: str, alias: str) -> str:
    """``expression`` over the per-bucket median of ``sensor`` (``{x}`` is the median)."""
    expr = expression.format(x=f'median("{m.READING_VALUE}")')
    return (
        f'SELECT {expr} AS "{alias}" FROM "{m.READING}" '
        f"WHERE {_sensor_filter(sensor)} AND $timeFilter "
        f"GROUP BY time($__interval) fill(null)"
    )


def rain_rolling_total(sensor: str, alias: str) -> str:
    """The rain of the 24 h up to the end of each hour.

    InfluxQL has no moving sum; the moving average of 24 hourly sums times 24 is
    one. The point stamped T covers [T - 23 h, T + 1 h): InfluxDB stamps a bucket
    with its start. The range starts 24 h early so the first hour shown is complete.
    """
    n = ROLLING_RAIN_H
    return (
        f'SELECT moving_average(sum("{m.READING_VALUE}"), {n}) * {n} AS "{alias}" '
        f'FROM "{m.READING}" WHERE {_sensor_filter(sensor)} '
        f"AND time >= ${{__from}}ms - {n}h AND time <= ${{__to}}ms "
        f"GROUP BY time(1h) fill(0)"
    )


def open_alerts() -> str:
    """Alerts still open, whenever they opened (no time filter: an old open alert matters most)."""
    return (
        'SELECT "severity", "kind", "subject", "message", "rule", "id" '
        f'FROM "{m.ALERT}" WHERE {SITE_FILTER} AND "state" = \'{m.ALERT_OPEN}\''
    )


def open_duties() -> str:
    """Duties not yet completed, open or overdue, with their deadlines."""
    return (
        'SELECT "due_ms", "state", "kind", "reason", "subject", "rule", "id" '
        f'FROM "{m.DUTY}" WHERE {SITE_FILTER} AND "state" != \'{m.DUTY_COMPLETED}\''
    )


def alert_annotations() -> str:
    """Every alert episode opened in the range, as a marker at its opening."""
    return (
        'SELECT "message", "severity", "kind", "subject" '
        f'FROM "{m.ALERT}" WHERE {SITE_FILTER} AND $timeFilter'
    )


# --- reference lines ------------------------------------------------------------------


def limit_shape(site: SiteConfig, pair: TurbidityPair) -> Mapping[str, float | bool] | None:
    """The pair's limit table, as the detector picks it (siltwatch.rulemath.choose_limit)."""
    water_class = site.water(pair.receiving_water).water_class
    table, _cite = rulemath.choose_limit(pair.limit, water_class, site.rules(), pair.id)
    return table


@dataclass(frozen=True)
class LimitLines:
    """How a pair's limit is drawn: a fixed cap as a threshold line, a background-
    relative limit as series computed from the upstream median; ``note`` says what
    the lines leave out."""

    cap: float | None = None
    computed: list[tuple[str, str]] = field(default_factory=list)  # (alias, expression)
    note: str = ""


def limit_lines(shape: Mapping[str, float | bool] | None) -> LimitLines:
    if shape is None:
        return LimitLines(note="no numeric turbidity limit applies to this pair")
    rule = rulemath.LimitRule.from_shape(shape)
    cap, delta, pct, knee = rule.cap, rule.delta, rule.pct, rule.knee
    notes = []
    lines: list[tuple[str, str]] = []
    if delta is not None:
        lines.append((f"limit: upstream + {delta:g}", "{x} + " + f"{delta:g}"))
    if pct is not None:
        lines.append((f"limit: upstream + {pct:g} %", "{x} * " + f"{1 + pct / 100:g}"))
    if knee is not None:
        notes.append(
            f"the + {delta:g} line applies while the background is at most {knee:g}, "
            f"the + {pct:g} % line above it"
        )
    elif len(lines) > 1:
        notes.append("the lower limit line governs")
    if cap is not None and rule.no_increase:
        notes.append(f"above a background of {cap:g} the limit is no increase over background")
    return LimitLines(cap=cap, computed=lines, note="; ".join(notes))


def practice_levels(site: SiteConfig, practice: InfiltrationPractice) -> tuple[float, float, str]:
    """(design level, design level + tolerance, unit) in the level sensor's unit."""
    unit = site.sensor(practice.level_sensor).unit
    design_m = practice.design_level_metres()
    design = from_metres(design_m, unit)
    drained = from_metres(rulemath.drained_level_m(design_m, practice.tolerance_metres()), unit)
    return round(design, 6), round(drained, 6), unit


def depth_at_fraction(site: SiteConfig, trap: SedimentTrap, fraction: float) -> float:
    """The sediment depth, in the depth sensor's unit, at which ``fraction`` of the
    design storage is lost — by volume, as the law counts capacity: a trap widens
    upward, so half its volume lies well above half its depth."""
    unit = site.sensor(trap.depth_sensor).unit
    depth_m = rulemath.TrapGeometry.of(site, trap).depth_at_fraction(fraction)
    return round(from_metres(depth_m, unit), 4)


def trap_fractions(site: SiteConfig, trap: SedimentTrap) -> tuple[float, float]:
    """(warn fraction, cleanout fraction) for a trap: its own warn level, else the packs'."""
    rules = site.rules()
    warn, _source = rulemath.warn_fraction(
        trap.warn_fraction, rules.require("sediment.warn_fraction")
    )
    return warn, rules.number("sediment.cleanout_fraction")
