"""The InfluxQL behind every panel, and the reference lines drawn with it.

Raw InfluxQL (not Flux, not the SQL of 3.x) because it is the one language
InfluxDB 1.8, 2.x (through its DBRP mapping) and 3.x all answer, so one
dashboard serves any of them. Grafana fills in the macros before sending:
``$timeFilter`` (the dashboard range), ``$__interval`` (range / pixels),
``${__from}``/``${__to}`` (the range ends in epoch ms) and ``$site`` (the
dashboard's constant variable). tests/dashboards substitutes them the same way
and runs every query against a real InfluxDB 1.x.

Only siltwatch may be imported here (README.md, "Folders"). The reference
lines are each detection's (its description in siltwatch/detections/), drawn
with the rule maths the detectors use (siltwatch/rulemath.py), so they cannot
drift from the alerts (tests/foundation/test_rulemath.py).
"""

from __future__ import annotations

from siltwatch import measurements as m

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


def rain_rolling_total(sensor: str, alias: str, n: int = ROLLING_RAIN_H) -> str:
    """The rain of the ``n`` hours (24) up to the end of each hour.

    InfluxQL has no moving sum; the moving average of 24 hourly sums times 24 is
    one. The point stamped T covers [T - 23 h, T + 1 h): InfluxDB stamps a bucket
    with its start. The range starts 24 h early so the first hour shown is complete.
    """
    return (
        f'SELECT moving_average(sum("{m.READING_VALUE}"), {n}) * {n} AS "{alias}" '
        f'FROM "{m.READING}" WHERE {_sensor_filter(sensor)} '
        f"AND time >= ${{__from}}ms - {n}h AND time <= ${{__to}}ms "
        f"GROUP BY time(1h) fill(0)"
    )


def open_alerts() -> str:
    """Alerts still open, whenever they opened (no time filter: an old open alert matters most),
    with who acknowledged each (ingest/influx/acks.py; empty while nobody has)."""
    return (
        'SELECT "severity", "acknowledged", "kind", "subject", "message", "rule", "id" '
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
