"""The site configuration: one TOML file describes a site, its sensors and controls.

A site operator writes it once per site; ``siltwatch config check FILE`` reads
it and reports every mistake at once, each naming the file, the key path and
what was expected. Beyond the shapes of single keys (pydantic), the cross
references are checked here: a turbidity pair must name two turbidity sensors
that exist, a trap a sediment-depth sensor, ids must be unique, rule packs
must exist, a unit must fit its sensor kind.

Keys carry their unit in their name (``design_level_ft``, ``tolerance_m``); the
``*_m()`` helpers give the value in metres, the unit the analytics use.
The reference configs in shared/contract/ must load unchanged.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from siltwatch.configerrors import ConfigError, key_path, read_toml, validation_lines
from siltwatch.rulepacks import RULE_KEYS, Rules, available_packs, check_limit_shape, check_value
from siltwatch.schema import Identifier
from siltwatch.units import UNITS_BY_KIND, to_metres, volume_to_m3

SensorKind = Literal["turbidity", "rain", "water_level", "sediment_depth"]
WaterClass = Literal["stream", "trout_stream", "lake", "trout_lake"]
PracticeType = Literal[
    "infiltration_basin",
    "infiltration_trench",
    "dry_well",
    "porous_pavement",
    "vegetated_depression",
]
Role = Literal["operator", "qualified_inspector", "officer"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


def _one_length(obj: BaseModel, stem: str, *, required: bool) -> float | None:
    """The value of ``stem_ft``/``stem_m``/``stem_in``/``stem_mm`` in metres (at most one may be set)."""
    found: list[tuple[str, float]] = [
        (u, float(v))
        for u in ("ft", "m", "in", "mm")
        if (v := getattr(obj, f"{stem}_{u}", None)) is not None
    ]
    if len(found) > 1:
        names = ", ".join(f"{stem}_{u}" for u, _ in found)
        raise ValueError(f"set only one of {names}")
    if not found:
        if required:
            raise ValueError(f"set {stem}_ft or {stem}_m")
        return None
    unit, value = found[0]
    return to_metres(value, unit)


class SiteInfo(_Model):
    id: Identifier
    name: str = ""
    timezone: str = "UTC"
    rule_packs: list[str] = Field(default_factory=list)
    disturbed_acres: float | None = Field(default=None, ge=0)
    holidays: list[date] = Field(default_factory=list)
    permanent_cover_at: date | None = Field(
        default=None,
        description="when permanent ground cover was established (ends quarterly duties)",
    )

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(
                f"unknown time zone {value!r} (expected an IANA name such as 'America/New_York')"
            ) from None
        return value

    @property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.timezone)


class ReceivingWater(_Model):
    id: Identifier
    name: str = ""
    water_class: WaterClass = Field(alias="class")


class Contact(_Model):
    name: str
    role: Role
    email: str | None = None
    phone: str | None = Field(default=None, pattern=r"^\+[1-9][0-9]{6,14}$")


class Sensor(_Model):
    id: Identifier
    kind: SensorKind
    unit: str
    interval_s: float = Field(gt=0)
    tip_in: float | None = Field(default=None, gt=0)
    tip_mm: float | None = Field(default=None, gt=0)
    min_value: float | None = Field(
        default=None, description="below this a reading is out of range"
    )
    max_value: float | None = Field(
        default=None, description="above this a reading is out of range"
    )

    def tip_depth_mm(self) -> float | None:
        if self.tip_in is not None:
            return self.tip_in * 25.4
        return self.tip_mm


class Station(_Model):
    id: Identifier
    name: str = ""
    sensors: list[Sensor] = Field(default_factory=list)


class TurbidityPair(_Model):
    id: Identifier
    upstream: str
    downstream: str
    receiving_water: str
    travel_time_s: float = Field(default=0.0, ge=0)
    limit: dict[str, float | bool] | None = None
    window_s: float | None = Field(default=None, gt=0)
    sustain_s: float | None = Field(default=None, ge=0)

    @field_validator("limit")
    @classmethod
    def _limit_shape(cls, value: dict[str, float | bool] | None) -> dict[str, float | bool] | None:
        if value is not None:
            problem = check_limit_shape(value)
            if problem:
                raise ValueError(problem)
        return value


class InfiltrationPractice(_Model):
    id: Identifier
    type: PracticeType
    level_sensor: str
    design_level_ft: float | None = None
    design_level_m: float | None = None
    design_level_in: float | None = None
    design_level_mm: float | None = None
    tolerance_ft: float | None = Field(default=None, ge=0)
    tolerance_m: float | None = Field(default=None, ge=0)
    tolerance_in: float | None = Field(default=None, ge=0)
    tolerance_mm: float | None = Field(default=None, ge=0)
    drain_limit_h: float | None = Field(default=None, gt=0, description="site override of the pack")
    baseline: Literal["design", "pre_event"] = Field(
        default="design",
        description=(
            "what 'drained' is measured against: the design level (a sensor zeroed there), "
            "or the dry level before each fill (a sensor whose datum drifts)"
        ),
    )

    @model_validator(mode="after")
    def _lengths(self) -> InfiltrationPractice:
        _one_length(self, "design_level", required=False)
        _one_length(self, "tolerance", required=False)
        return self

    def design_level_metres(self) -> float:
        return _one_length(self, "design_level", required=False) or 0.0

    def tolerance_metres(self) -> float:
        """Default tolerance 0.05 ft (about 15 mm): below a pressure transducer's noise it is meaningless."""
        value = _one_length(self, "tolerance", required=False)
        return 0.01524 if value is None else value


class TrapShape(_Model):
    """Trapezoidal storage: bottom length and width, side slope z (H:V), storage depth."""

    bottom_length_ft: float | None = Field(default=None, gt=0)
    bottom_length_m: float | None = Field(default=None, gt=0)
    bottom_width_ft: float | None = Field(default=None, gt=0)
    bottom_width_m: float | None = Field(default=None, gt=0)
    side_slope: float = Field(ge=0)
    depth_ft: float | None = Field(default=None, gt=0)
    depth_m: float | None = Field(default=None, gt=0)

    @model_validator(mode="after")
    def _lengths(self) -> TrapShape:
        for stem in ("bottom_length", "bottom_width", "depth"):
            _one_length(self, stem, required=True)
        return self

    def metres(self) -> tuple[float, float, float, float]:
        """(bottom length, bottom width, side slope, depth) with lengths in metres."""
        length = _one_length(self, "bottom_length", required=True)
        width = _one_length(self, "bottom_width", required=True)
        depth = _one_length(self, "depth", required=True)
        assert length is not None and width is not None and depth is not None
        return length, width, self.side_slope, depth


class SedimentTrap(_Model):
    id: Identifier
    depth_sensor: str
    shape: TrapShape | None = None
    stage_storage: list[tuple[float, float]] | None = Field(
        default=None,
        description="[sediment depth, storage volume below it] in the depth sensor's unit (and its cube)",
    )
    warn_fraction: float | None = Field(default=None, gt=0, lt=1)

    @model_validator(mode="after")
    def _one_geometry(self) -> SedimentTrap:
        if (self.shape is None) == (self.stage_storage is None):
            raise ValueError("set exactly one of shape (trapezoid) or stage_storage (table)")
        table = self.stage_storage
        if table is not None:
            if len(table) < 2:
                raise ValueError("stage_storage needs at least two [depth, volume] rows")
            for i in range(1, len(table)):
                if table[i][0] <= table[i - 1][0] or table[i][1] < table[i - 1][1]:
                    raise ValueError(
                        f"stage_storage row {i} {list(table[i])}: depths must increase and "
                        "volumes must not decrease"
                    )
        return self


class RainGauge(_Model):
    id: Identifier
    sensor: str
    storm_gap_h: float | None = Field(default=None, gt=0, description="site override of the pack")


class SiteConfig(_Model):
    site: SiteInfo
    receiving_waters: list[ReceivingWater] = Field(default_factory=list)
    contacts: list[Contact] = Field(default_factory=list)
    stations: list[Station] = Field(default_factory=list)
    turbidity_pairs: list[TurbidityPair] = Field(default_factory=list)
    infiltration_practices: list[InfiltrationPractice] = Field(default_factory=list)
    sediment_traps: list[SedimentTrap] = Field(default_factory=list)
    rain_gauges: list[RainGauge] = Field(default_factory=list)
    rule_overrides: dict[str, Any] = Field(default_factory=dict)

    # --- lookups the rest of siltwatch uses ------------------------------------

    def sensors(self) -> dict[str, Sensor]:
        return {s.id: s for st in self.stations for s in st.sensors}

    def station_of(self) -> dict[str, str]:
        """sensor id -> station id."""
        return {s.id: st.id for st in self.stations for s in st.sensors}

    def sensor(self, sensor_id: str) -> Sensor:
        return self.sensors()[sensor_id]

    def water(self, water_id: str) -> ReceivingWater:
        return {w.id: w for w in self.receiving_waters}[water_id]

    def rules(self) -> Rules:
        return Rules.resolve(self.site.rule_packs, self.rule_overrides)

    def trap_volume_unit(self, trap: SedimentTrap) -> str:
        return self.sensor(trap.depth_sensor).unit

    def stage_storage_m(self, trap: SedimentTrap) -> list[tuple[float, float]] | None:
        """The trap's stage-storage table in metres and cubic metres."""
        if trap.stage_storage is None:
            return None
        unit = self.trap_volume_unit(trap)
        return [(to_metres(d, unit), volume_to_m3(v, unit)) for d, v in trap.stage_storage]


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
        seen: dict[str, int] = {}
        for i, item in enumerate(_items(data, key)):
            ident = item.get("id")
            if not isinstance(ident, str):
                continue
            if ident in seen:
                out.append(
                    (
                        f"{key}[{i}].id",
                        f"duplicate {label} id {ident!r} (also at {key}[{seen[ident]}])",
                    )
                )
            seen.setdefault(ident, i)

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
            if isinstance(kind, str) and kind in UNITS_BY_KIND and isinstance(unit, str):
                allowed = UNITS_BY_KIND[kind]
                if unit not in allowed:
                    out.append(
                        (
                            f"{here}.unit",
                            f"unit {unit!r} does not fit a {kind} sensor (expected one of {', '.join(allowed)})",
                        )
                    )
            if ("tip_in" in sensor or "tip_mm" in sensor) and kind != "rain":
                out.append((f"{here}", "tip_in/tip_mm only apply to rain sensors"))
            if "tip_in" in sensor and "tip_mm" in sensor:
                out.append((f"{here}", "set only one of tip_in, tip_mm"))
    dupes("receiving_waters", "receiving water")
    dupes("turbidity_pairs", "turbidity pair")
    dupes("infiltration_practices", "practice")
    dupes("sediment_traps", "trap")
    dupes("rain_gauges", "rain gauge")

    def ref(path: str, sensor_id: Any, kind: str) -> None:
        if not isinstance(sensor_id, str):
            return
        sensor = sensors.get(sensor_id)
        if sensor is None:
            known = (
                ", ".join(sorted(k for k, v in sensors.items() if v.get("kind") == kind)) or "none"
            )
            out.append(
                (path, f"no sensor {sensor_id!r} on any station (known {kind} sensors: {known})")
            )
        elif sensor.get("kind") != kind:
            out.append(
                (
                    path,
                    f"sensor {sensor_id!r} is a {sensor.get('kind')} sensor, expected a {kind} sensor",
                )
            )

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
            rules = Rules.resolve(pack_ids)
        except ConfigError as exc:
            out.extend(("site.rule_packs", line) for line in exc.lines)
    waters = {w.get("id"): w for w in _items(data, "receiving_waters")}
    for i, pair in enumerate(_items(data, "turbidity_pairs")):
        ref(f"turbidity_pairs[{i}].upstream", pair.get("upstream"), "turbidity")
        ref(f"turbidity_pairs[{i}].downstream", pair.get("downstream"), "turbidity")
        if pair.get("upstream") is not None and pair.get("upstream") == pair.get("downstream"):
            out.append((f"turbidity_pairs[{i}].downstream", "must differ from upstream"))
        water_id = pair.get("receiving_water")
        water = waters.get(water_id)
        if water is None:
            known = ", ".join(str(k) for k in waters) or "none"
            out.append(
                (
                    f"turbidity_pairs[{i}].receiving_water",
                    f"no receiving water {water_id!r} (known: {known})",
                )
            )
        elif "limit" not in pair and rules is not None:
            by_class = rules.get(f"turbidity.limit.{water.get('class')}") or rules.get(
                "turbidity.limit.any"
            )
            if by_class is None:
                standard = rules.get("turbidity.standard")
                why = (
                    f"the rule packs set only a narrative standard ({standard.citation})"
                    if standard
                    else "no rule pack sets a turbidity limit"
                )
                out.append(
                    (
                        f"turbidity_pairs[{i}].limit",
                        f"is required: {why}; set a numeric proxy such as limit = {{ over_background_ntu = 25 }}",
                    )
                )
    for i, pr in enumerate(_items(data, "infiltration_practices")):
        ref(f"infiltration_practices[{i}].level_sensor", pr.get("level_sensor"), "water_level")
    for i, trap in enumerate(_items(data, "sediment_traps")):
        ref(f"sediment_traps[{i}].depth_sensor", trap.get("depth_sensor"), "sediment_depth")
    for i, gauge in enumerate(_items(data, "rain_gauges")):
        ref(f"rain_gauges[{i}].sensor", gauge.get("sensor"), "rain")
    overrides = data.get("rule_overrides")
    if isinstance(overrides, dict):
        for key, value in overrides.items():
            problem = check_value(key, value)
            if problem:
                out.append((f"rule_overrides.{key}", problem))
    return out


def load_site(path: Path | str) -> SiteConfig:
    """Load and fully check a site file; ConfigError carries one line per mistake."""
    path = Path(path)
    data = read_toml(path)
    lines: list[str] = []
    site: SiteConfig | None = None
    try:
        site = SiteConfig.model_validate(data)
    except ValidationError as exc:
        lines = validation_lines(str(path), exc)
    lines += [f"{path}: {where}: {what}" for where, what in cross_reference_problems(data)]
    if lines or site is None:
        raise ConfigError(sorted(set(lines), key=lines.index))
    return site


__all__ = [
    "RULE_KEYS",
    "ConfigError",
    "Contact",
    "InfiltrationPractice",
    "RainGauge",
    "ReceivingWater",
    "SedimentTrap",
    "Sensor",
    "SiteConfig",
    "SiteInfo",
    "Station",
    "TrapShape",
    "TurbidityPair",
    "key_path",
    "load_site",
]
