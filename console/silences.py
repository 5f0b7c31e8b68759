"""What a silence or maintenance window covers, in the site's own terms.

People silence a *thing* they are working on: a station (its mast, its
logger), a practice (a sediment trap being cleaned out, an infiltration
basin, a turbidity pair's outfall, a rain gauge) or one sensor (a probe
being serviced). Alerts are about *subjects* (a sensor, a station, a pair, a
practice, a trap, a gauge: siltwatch/schema.py ``Alert.subject``), so a
silence is stored with every subject its thing stands for, worked out here
from the site file when it is created: a station covers itself, its sensors
and every practice measured by one of them; a sensor covers itself and the
practices it measures; a practice covers itself and its sensors. The book
(console/book.py) keeps the list, so a later edit of the site file does not
change what an existing silence held.

Which kinds may be held at all is alerts/silences.py ``may_be_silenced``:
regulatory duties and facts the town must hear of never are.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from siltwatch.config import SiteConfig
from siltwatch.detections import descriptions

REASON_MAX = 500
MAX_DAYS = 31


class Scope(StrEnum):
    STATION = "station"
    PRACTICE = "practice"
    SENSOR = "sensor"


@dataclass(frozen=True)
class Silence:
    """One silence or maintenance window (UTC ms); ``ended_ms`` when ended early."""

    id: int
    site: str
    scope: str
    target: str
    kind: str  # '' = every kind that may be silenced, else one alert kind
    subjects: tuple[str, ...]
    reason: str
    by: str
    created_ms: int
    start_ms: int
    end_ms: int
    ended_ms: int | None = None
    ended_by: str = ""

    def until_ms(self) -> int:
        return self.end_ms if self.ended_ms is None else min(self.end_ms, self.ended_ms)

    def active(self, at_ms: int) -> bool:
        return self.start_ms <= at_ms < self.until_ms()

    def covers(self, subject: str, kind: str, at_ms: int) -> bool:
        return (
            self.active(at_ms) and subject in self.subjects and (not self.kind or self.kind == kind)
        )


def _practices(site: SiteConfig) -> dict[str, tuple[str, ...]]:
    """practice id -> the sensors it is measured by: each item of a described detection's
    section (pairs, basins, traps, gauges) and the sensors its section names."""
    out: dict[str, tuple[str, ...]] = {}
    for d in descriptions():
        if d.section is None or not d.section.sensor_refs:
            continue
        for item in getattr(site, d.section.key):
            out[item.id] = tuple(getattr(item, name) for name, _kind in d.section.sensor_refs)
    return out


def targets(site: SiteConfig) -> dict[Scope, list[tuple[str, str]]]:
    """What may be silenced at ``site``: (id, what people see) per scope, in file order."""
    sensors = [(s.id, f"{s.id} ({s.kind.replace('_', ' ')})") for s in site.sensors().values()]
    return {
        Scope.STATION: [
            (st.id, f"{st.id} ({st.name})" if st.name else st.id) for st in site.stations
        ],
        Scope.PRACTICE: [(p, p) for p in _practices(site)],
        Scope.SENSOR: sensors,
    }


def covered_subjects(site: SiteConfig, scope: Scope, target: str) -> tuple[str, ...] | None:
    """Every alert subject a silence of ``target`` covers, or None when ``site`` has no
    such ``scope`` (see the module docstring)."""
    practices = _practices(site)
    if scope is Scope.STATION:
        station = next((st for st in site.stations if st.id == target), None)
        if station is None:
            return None
        sensors = {s.id for s in station.sensors}
        found = [target, *sorted(sensors)]
    elif scope is Scope.SENSOR:
        if target not in site.sensors():
            return None
        sensors = {target}
        found = [target]
    else:
        if target not in practices:
            return None
        return (target, *practices[target])
    found += [p for p, used in practices.items() if sensors & set(used)]
    return tuple(dict.fromkeys(found))
