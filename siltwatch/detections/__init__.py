"""The registry of detection descriptions: one module here per detection kind.

Each module in this package defines ``DESCRIPTION`` (a
:class:`~siltwatch.detections.base.Description`); the registry finds them by
listing the package, so adding a detection adds a module here and its
``analytics/`` module, and nothing else is edited. Who loops over it:

- ``analytics/detectors.py`` builds each description's detectors, in ``order``;
- ``alerts/routing.py`` and ``alerts/messages.py`` ask :func:`alert_spec` whether
  a kind is regulatory, when the officer hears it and how much it is by;
- ``dashboards/build.py`` draws each description's row;
- ``siltwatch/config.py`` runs each description's configuration checks, and
  ``siltwatch/rulepacks.py`` takes the rule keys (and their ranges) from them.

Kinds are declared once, as the ``kind`` of an
:class:`~siltwatch.detections.base.AlertSpec` or
:class:`~siltwatch.detections.base.DutySpec` in the description that raises it
(a ``<duty kind>_overdue`` alert is derived from its duty's); a detector names
its kinds through those specs (``DRAIN_TIME.kind``), everything else looks them
up here. Two descriptions raising the same kind must share its spec object (the
sensor-health ``data_quality`` kind, which turbidity raises too).
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any

from siltwatch.detections.base import AlertSpec, Description, DutySpec
from siltwatch.modulescan import declared
from siltwatch.panels import Panel
from siltwatch.rulekeys import RuleKey
from siltwatch.sensorkinds import sensor_kind

if TYPE_CHECKING:
    from siltwatch.rules import Rules
    from siltwatch.sitemodel import SiteConfig


@cache
def descriptions() -> tuple[Description, ...]:
    """Every detection's description, in build order."""
    found = declared(__name__, __path__, "DESCRIPTION", Description)
    found.sort(key=lambda d: (d.order, d.key))
    _check_unique(found)
    return tuple(found)


def _check_unique(found: list[Description]) -> None:
    """Keys, alert kinds, rule keys and ``order`` are each one description's own.

    ``order`` decides the order of alerts raised at the same instant, and so the bytes
    of a replay's output: two descriptions sharing one would be ordered by their keys
    by accident, and a rename would silently reorder the output."""
    keys: dict[str, str] = {}
    orders: dict[int, str] = {}
    kinds: dict[str, AlertSpec[Any]] = {}
    rule_keys: dict[str, str] = {}
    for d in found:
        if d.key in keys:
            raise ValueError(f"two detections are called {d.key!r}")
        keys[d.key] = d.key
        if orders.setdefault(d.order, d.key) != d.key:
            raise ValueError(
                f"detections {orders[d.order]!r} and {d.key!r} share order {d.order}: "
                "give each its own (it orders alerts raised at the same instant)"
            )
        for spec in d.alerts:
            if kinds.setdefault(spec.kind, spec) is not spec:
                raise ValueError(f"alert kind {spec.kind!r} is described twice ({d.key})")
        for rk in d.rule_keys:
            if rule_keys.setdefault(rk.name, d.key) != d.key:
                raise ValueError(
                    f"rule key {rk.name!r} claimed by {rule_keys[rk.name]} and {d.key}"
                )


@cache
def _alert_specs() -> dict[str, AlertSpec[Any]]:
    specs: dict[str, AlertSpec[Any]] = {}
    for d in descriptions():
        for spec in d.alerts:
            specs[spec.kind] = spec
        for duty in d.duties:
            if duty.overdue is not None:
                specs[duty.overdue.kind] = duty.overdue
    return specs


def rescan() -> None:
    """Forget the descriptions found so far: the next call lists the package again (a
    module was added to its search path, as a plug-in or a test fixture does)."""
    descriptions.cache_clear()
    _alert_specs.cache_clear()


def alert_spec(kind: str) -> AlertSpec[Any] | None:
    """The description of an alert kind; None for a kind this release does not know."""
    return _alert_specs().get(kind)


def alert_kinds() -> tuple[str, ...]:
    return tuple(_alert_specs())


def duty_spec(kind: str) -> DutySpec | None:
    for d in descriptions():
        for duty in d.duties:
            if duty.kind == kind:
                return duty
    return None


SENSORS_ROW = "Sensors"


def dashboard_rows(site: SiteConfig, rules: Rules) -> list[tuple[str, tuple[Panel, ...]]]:
    """(row title, panels) of every detection with panels for ``site`` (whose resolved
    rules are ``rules``, siltwatch.rulepacks.site_rules), in row position, then a last
    row with each sensor no detection's panel draws, in its kind's own panel
    (siltwatch/sensorkinds/): a new kind of sensor is charted before any rule reads it."""
    rows = [
        (d.dashboard.position, d.dashboard.row, d.panels(site, rules))
        for d in descriptions()
        if d.dashboard is not None
    ]
    out = [(title, panels) for _pos, title, panels in sorted(rows, key=lambda r: r[0]) if panels]
    charted = {s.sensor for _title, panels in out for panel in panels for s in panel.series}
    alone = sensor_panels(site, charted)
    return [*out, (SENSORS_ROW, alone)] if alone else out


def sensor_panels(site: SiteConfig, charted: set[str]) -> tuple[Panel, ...]:
    """Each sensor of ``site`` not in ``charted``, drawn as its kind draws a sensor alone."""
    panels: list[Panel] = []
    for sensor in site.sensors().values():
        kind = sensor_kind(sensor.kind)
        if sensor.id not in charted and kind is not None:
            panels.append(kind.panel(sensor.id, sensor.unit, sensor.interval_s))
    return tuple(panels)


def rule_keys() -> tuple[RuleKey, ...]:
    """Every rule key some detection reads."""
    return tuple(rk for d in descriptions() for rk in d.rule_keys)


__all__ = [
    "AlertSpec",
    "Description",
    "DutySpec",
    "RuleKey",
    "alert_kinds",
    "alert_spec",
    "dashboard_rows",
    "descriptions",
    "duty_spec",
    "rescan",
    "rule_keys",
]
