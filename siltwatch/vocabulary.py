"""The typed vocabulary of siltwatch's outputs: alert kinds, duty kinds and reasons, severity.

Every kind and reason the engine produces is a member here, so a consumer that
switches on one (routing, messages, dashboards) names a member, and a typo is an
``AttributeError`` at import time, not a branch that silently never matches.

The members are ``StrEnum``: each *is* its string (``AlertKind.DRAIN_TIME ==
"drain_time"``, ``str()``/``format()`` give the value, JSON carries the value),
so the wire format and the replay contract (docs/replay-contract.md) are
unchanged. The wire models keep ``kind`` and ``reason`` as plain strings: the
contract leaves both open ("or more"), and a consumer must accept a kind from a
newer engine.

Severity is ordered ``info < warning < critical``; :func:`severity_rank` is the
one place that order is written.
"""

from __future__ import annotations

from enum import StrEnum


class AlertKind(StrEnum):
    """What an alert episode is about (``kind`` in ALERTS.jsonl)."""

    TURBIDITY_CONTRAST = "turbidity_contrast"  # analytics/turbidity.py
    SEDIMENT_CAPACITY = "sediment_capacity"  # analytics/sediment.py
    DRAIN_TIME = "drain_time"  # analytics/drain.py: the drain-time limit passed undrained
    DRAIN_TIME_FORECAST = "drain_time_forecast"  # analytics/drain.py: it will not drain in time
    INSPECTION_OVERDUE = "inspection_overdue"  # analytics/inspections.py
    SENSOR_OFFLINE = "sensor_offline"  # analytics/health.py
    DATA_QUALITY = "data_quality"  # analytics/health.py and analytics/turbidity.py


class DutyKind(StrEnum):
    """What a duty asks for (``kind`` in DUTIES.jsonl)."""

    INSPECTION = "inspection"


class DutyReason(StrEnum):
    """Why a duty exists (``reason`` in DUTIES.jsonl)."""

    STORM = "storm"  # after a qualifying storm
    ROUTINE = "routine"  # the routine cadence (weekly, or twice weekly on large sites)
    QUARTERLY = "quarterly"  # the quarterly inspection


class Severity(StrEnum):
    """How bad an alert is. Declared in rising order: ``info < warning < critical``."""

    INFO = "info"
    WARNING = "warning"
    CRITICAL = "critical"


_RANK: dict[str, int] = {s.value: i for i, s in enumerate(Severity)}


def severity_rank(severity: str) -> int:
    """The order of severities: info 0 < warning 1 < critical 2; an unknown value is -1.

    Takes a plain string too (severities read back from an outbox, a store or an
    engine snapshot are plain strings), so the most severe of a mix is ``max(values, key=severity_rank)`` and the most
    severe first is ``sorted(values, key=severity_rank, reverse=True)``.
    """
    return _RANK.get(severity, -1)
