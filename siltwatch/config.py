"""The site configuration: one TOML file describes a site, its sensors and controls.

A site operator writes it once per site; ``siltwatch config check FILE`` reads
it and reports every mistake at once, each naming the file, the key path and
what was expected. Beyond the shapes of single keys (pydantic), the cross
references are checked here: a turbidity pair must name two turbidity sensors
that exist, a trap a sediment-depth sensor, ids must be unique, rule packs
must exist, a unit must fit its sensor kind, a site under a rule pack must
name the officer the law sends overdue duties to.

The models themselves live in siltwatch/sitemodel.py (the ground below the
detection registry); this module loads a file into them and runs the checks
that need the registry and the rule packs. It hands the models on, so
``from siltwatch.config import SiteConfig`` reads as before.
The reference configs in examples/ must load unchanged (docs/replay-contract.md,
"Site configuration").
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from siltwatch.configerrors import NOT_FINITE, ConfigError, key_path, read_toml, validate_finite
from siltwatch.detections import descriptions
from siltwatch.detections.base import ConfigView, repeated_names
from siltwatch.practices import practice_problems
from siltwatch.rulepacks import RULE_KEYS, Rules, available_packs, check_value, resolve_rules
from siltwatch.sensorkinds import sensor_kind, sensor_kinds
from siltwatch.sitemodel import (
    Area,
    Contact,
    DesignStorm,
    EscalationStep,
    InfiltrationPractice,
    Notifications,
    RainGauge,
    ReceivingWater,
    SedimentTrap,
    Sensor,
    SiteConfig,
    SiteInfo,
    Station,
    TrapShape,
    TurbidityPair,
    quiet_window,
)
from siltwatch.topic_words import reserved_id_problems


def _items(data: dict[str, Any], key: str) -> list[dict[str, Any]]:
    value = data.get(key)
    if not isinstance(value, list):
        return []
    return [item if isinstance(item, dict) else {} for item in value]


def cross_reference_problems(data: dict[str, Any]) -> list[tuple[str, str]]:
    """Every cross-reference mistake as (key path, what was expected).

    Works on the raw TOML data, not the model, so that these mistakes are
    reported together with the type errors pydantic finds: the operator sees
    all of them at once.
    """
    out: list[tuple[str, str]] = []
    stations = _items(data, "stations")
    sensors: dict[str, dict[str, Any]] = {}
    sensor_at: dict[str, str] = {}

    def dupes(key: str, label: str) -> None:
        for i, ident, first in repeated_names(_items(data, key), "id"):
            out.append(
                (f"{key}[{i}].id", f"duplicate {label} id {ident!r} (also at {key}[{first}])")
            )

    dupes("stations", "station")
    for si, st in enumerate(stations):
        for ni, sensor in enumerate(_items(st, "sensors")):
            here = f"stations[{si}].sensors[{ni}]"
            ident, kind, unit = sensor.get("id"), sensor.get("kind"), sensor.get("unit")
            if isinstance(ident, str):
                if ident in sensor_at:
                    out.append(
                        (
                            f"{here}.id",
                            f"duplicate sensor id {ident!r} (also at {sensor_at[ident]}.id)",
                        )
                    )
                else:
                    sensor_at[ident] = here
                    sensors[ident] = sensor
            out += _sensor_kind_problems(here, sensor, kind, unit)
    dupes("receiving_waters", "receiving water")
    for description in descriptions():
        if description.section is not None:
            dupes(description.section.key, description.section.label)
    rules, pack_ids = _pack_problems(data, out)
    view = ConfigView(data, sensors, rules)
    for description in descriptions():
        description.check(view)
    out += view.problems
    overrides = data.get("rule_overrides")
    if isinstance(overrides, dict):
        for key, value in overrides.items():
            problem = check_value(key, value)
            # A nan/inf is reported once, at its own key, by load_site's scan.
            if problem and NOT_FINITE not in problem:
                out.append((f"rule_overrides.{key}", problem))
    out += _officer_problems(data, pack_ids, rules)
    out += reserved_id_problems(data)
    out += practice_problems(data)  # siltwatch/practices.py
    return out


def _sensor_kind_problems(
    here: str, sensor: dict[str, Any], kind: Any, unit: Any
) -> list[tuple[str, str]]:
    """A sensor's unit must be one of its kind's, and the keys only some kind's sensors
    may set (a rain gauge's ``tip_in``) belong to a sensor of that kind
    (siltwatch/sensorkinds/). An unknown kind is the model's to report."""
    out: list[tuple[str, str]] = []
    described = sensor_kind(kind) if isinstance(kind, str) else None
    if described is not None and isinstance(unit, str):
        problem = described.unit_problem(unit)
        if problem is not None:
            out.append((f"{here}.unit", problem))
    for other in sensor_kinds().values():
        keys = [k for k in other.sensor_keys if k in sensor]
        if keys and other is not described:
            out.append((here, f"{'/'.join(other.sensor_keys)} only apply to {other.key} sensors"))
        if len(keys) > 1:
            out.append((here, f"set only one of {', '.join(other.sensor_keys)}"))
    return out


def _pack_problems(
    data: dict[str, Any], out: list[tuple[str, str]]
) -> tuple[Rules | None, list[str]]:
    """The site's rule packs resolved (None when one is unknown or broken; said in ``out``)."""
    site = data.get("site") if isinstance(data.get("site"), dict) else {}
    assert isinstance(site, dict)
    pack_ids = site.get("rule_packs", [])
    pack_ids = [p for p in pack_ids if isinstance(p, str)] if isinstance(pack_ids, list) else []
    packs = available_packs()
    for i, pack in enumerate(pack_ids):
        if pack not in packs:
            out.append(
                (f"site.rule_packs[{i}]", f"unknown rule pack {pack!r} (known: {', '.join(packs)})")
            )
    rules: Rules | None = None
    if all(p in packs for p in pack_ids):
        try:
            rules = resolve_rules(pack_ids)
        except ConfigError as exc:
            out.extend(("site.rule_packs", line) for line in exc.lines)
    return rules, pack_ids


def _join(words: list[str]) -> str:
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"


_GENERIC = "overdue inspections and critical regulatory alerts"
_NO_OFFICER = (
    'no contact has role "officer"; the {packs} rules send {what} to the town\'s officer '
    '(add one: [[contacts]] with role = "officer" and an email or phone)'
)


def _officer_problems(
    data: dict[str, Any], pack_ids: list[str], rules: Rules | None
) -> list[tuple[str, str]]:
    """A site under a rule pack must name the town's officer, and the officer must be reachable.

    alerts/routing.py sends the officer what each detection's description says
    (``officer_sends`` in siltwatch/detections/: overdue inspections, and the
    turbidity, sediment-trap or drain-time episodes that reach critical) to the
    contacts with role ``officer``, whatever the pack.
    With no officer those messages go nowhere and nobody notices: the law's
    escalation is off. So any rule pack requires one.
    """
    contacts = _items(data, "contacts")
    out: list[tuple[str, str]] = []
    for i, contact in enumerate(contacts):
        if contact.get("role") == "officer" and not (contact.get("email") or contact.get("phone")):
            out.append(
                (
                    f"contacts[{i}]",
                    "an officer needs an email or a phone: alerts reach the officer only through them",
                )
            )
    if not pack_ids or any(c.get("role") == "officer" for c in contacts):
        return out
    if rules is None:  # a pack did not resolve (reported above): say what packs generally do
        return [*out, ("contacts", _NO_OFFICER.format(packs=_join(pack_ids), what=_GENERIC))]
    view = ConfigView(data, {}, rules)
    said = [d.officer_words(view) for d in descriptions()]
    sends = [words for kind, words in filter(None, said) if kind == "duty"]
    kinds = [words for kind, words in filter(None, said) if kind == "critical"]
    if kinds:
        sends.append(f"critical {_join(kinds)} alerts")
    what = _join(sends) if sends else _GENERIC
    return [*out, ("contacts", _NO_OFFICER.format(packs=_join(pack_ids), what=what))]


def load_site(path: Path | str) -> SiteConfig:
    """Load and fully check a site file; ConfigError carries one line per mistake."""
    path = Path(path)
    data = read_toml(path)
    site, problems = validate_finite(data, SiteConfig)
    problems += cross_reference_problems(data)
    lines = [f"{path}: {where}: {what}" for where, what in problems]
    if lines or site is None:
        raise ConfigError(sorted(set(lines), key=lines.index))
    return site


__all__ = [
    "RULE_KEYS",
    "Area",
    "ConfigError",
    "Contact",
    "DesignStorm",
    "EscalationStep",
    "InfiltrationPractice",
    "Notifications",
    "RainGauge",
    "ReceivingWater",
    "SedimentTrap",
    "Sensor",
    "SiteConfig",
    "SiteInfo",
    "Station",
    "TrapShape",
    "TurbidityPair",
    "cross_reference_problems",
    "key_path",
    "load_site",
    "quiet_window",
]
