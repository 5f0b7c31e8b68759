"""The registry of sensor kinds: one module here per kind of sensor a site may declare.

Each module in this package defines ``KIND`` (a
:class:`~siltwatch.sensorkinds.base.SensorKind`); the registry finds them by
listing the package, as siltwatch/detections/ finds its descriptions, so a new
kind of sensor is one module here and nothing else is edited. Who loops over it:

- siltwatch/sitemodel.py accepts a sensor's ``kind`` only if a module here names it,
  and siltwatch/config.py checks its unit and its kind's own keys;
- ingest/decode.py refuses a reading its kind can never read (:func:`impossible`);
- analytics/health.py flags a reading outside its kind's plausible band;
- dashboards/build.py and the console draw a sensor no detection charts with
  its kind's own panel.
"""

from __future__ import annotations

from functools import cache

from siltwatch.modulescan import declared
from siltwatch.sensorkinds.base import Plot, SensorKind


@cache
def sensor_kinds() -> dict[str, SensorKind]:
    """Every kind of sensor, by its key, in the order of their keys."""
    found: dict[str, SensorKind] = {}
    for kind in declared(__name__, __path__, "KIND", SensorKind):
        if kind.key in found:
            raise ValueError(f"two sensor kinds are called {kind.key!r}")
        found[kind.key] = kind
    return dict(sorted(found.items()))


def rescan() -> None:
    """Forget the kinds found so far: the next call lists the package again (a module was
    added to its search path, as a plug-in or a test fixture does)."""
    sensor_kinds.cache_clear()


def sensor_kind(key: str) -> SensorKind | None:
    """The kind called ``key``; None for a kind this release does not know."""
    return sensor_kinds().get(key)


def impossible(kind: str, value: float, unit: str) -> str | None:
    """Why a reading of a ``kind`` sensor is physically impossible, or None; never raises."""
    described = sensor_kind(kind)
    if described is None:
        return f"no physical bounds are known for sensor kind {kind!r}"
    return described.problem(value, unit)


__all__ = ["Plot", "SensorKind", "impossible", "rescan", "sensor_kind", "sensor_kinds"]
