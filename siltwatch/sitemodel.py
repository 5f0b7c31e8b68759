"""The site's configuration as typed models: what one site file says, checked key by key.

The models are the ground every floor reads a site through; loading a file and
the checks that cross references (siltwatch/config.py, which runs every
detection's own checks) stand above the detection registry, so these models
import nothing of it, nor of the rule packs: a site's resolved rules are
``siltwatch.rulepacks.site_rules(site)``.

Nothing in the file may quietly switch the law off: ``nan`` and ``inf`` (valid
TOML) are refused wherever a number is read, durations and intervals must be
positive, and the text that ends up in mail headers and SMS (names, addresses,
phone numbers) must be well formed and free of control characters.

Keys carry their unit in their name (``design_level_ft``, ``tolerance_m``); the
``*_m()`` helpers give the value in metres, the unit the analytics use.
"""

from __future__ import annotations

import re
from datetime import date
from typing import Annotated, Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from siltwatch.configerrors import control_character
from siltwatch.limitshapes import check_limit_shape
from siltwatch.practices import FieldDeskSettings, FieldPractice
from siltwatch.schema import Identifier
from siltwatch.sensorkinds import sensor_kinds
from siltwatch.units import to_metres, volume_to_m3

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
    # allow_inf_nan=False: a model built without load_site (tests, benchmarks)
    # refuses nan/inf too; load_site reports them first through the raw scan.
    model_config = ConfigDict(
        extra="forbid", frozen=True, populate_by_name=True, allow_inf_nan=False
    )


def _plain_text(value: str) -> str:
    """Names reach mail headers, SMS and reports: a newline there forges a header or splits a message."""
    bad = control_character(value)
    if bad is not None:
        raise ValueError(
            f"must not contain control characters such as newlines, got {value!r} (has {bad})"
        )
    return value


Text = Annotated[str, AfterValidator(_plain_text)]

_EMAIL_EXAMPLE = "e.g. 'officer@town.example.org'"
_E164 = re.compile(r"\+[1-9][0-9]{6,14}")


def _email(value: str) -> str:
    """An address the mailer can use as is, or the reason it cannot.

    Deliberately not RFC 5322 in full: one ``@``, a local part, a dotted domain,
    no whitespace and above all no control characters, because a newline in an
    address would let the file inject mail headers (``Bcc:``) into every alert.
    """
    bad = control_character(value)
    if bad is not None:
        why = f"it contains {bad}; a control character such as a newline could inject mail headers"
    elif any(ch.isspace() for ch in value):
        why = "it contains whitespace"
    elif value.count("@") != 1:
        why = "it has no @" if "@" not in value else f"it has {value.count('@')} @ signs"
    else:
        local, domain = value.split("@")
        labels = domain.split(".")
        if not local:
            why = "nothing before the @"
        elif len(labels) < 2 or not all(labels):
            why = f"the domain {domain!r} needs a dot between non-empty parts"
        else:
            return value
    raise ValueError(f"expected an email address ({_EMAIL_EXAMPLE}), got {value!r}: {why}")


def _phone(value: str) -> str:
    """E.164, the form SMS gateways take: ``+``, country code and number, nothing else."""
    if _E164.fullmatch(value) is None:
        raise ValueError(
            "expected an E.164 phone number: + then 7 to 15 digits with the country code, "
            f"no spaces or dashes (e.g. '+15185550199'), got {value!r}"
        )
    return value


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
    name: Text = ""
    timezone: str = "UTC"
    rule_packs: list[str] = Field(default_factory=list)
    disturbed_acres: float | None = Field(default=None, ge=0)
    holidays: list[date] = Field(default_factory=list)
    start: date | None = Field(
        default=None,
        description=(
            "the day the site's work (and its watching) began, in the site's time zone; "
            "readings dated before it are stored flagged before_site_start and never judged"
        ),
    )
    permanent_cover_at: date | None = Field(
        default=None,
        description="when permanent ground cover was established (ends quarterly duties)",
    )
    common_plan: bool = Field(
        default=False,
        description="part of a larger common plan of development or sale (permit coverage)",
    )
    project: Literal["major", "minor"] | None = Field(
        default=None,
        description=(
            "the town's project class (Lake George §148-11 E; under Lake Lure, the class of "
            "the erosion control plan, 96.05(B)(1),(2)); unset: treated as major, with a "
            "config check warning under Lake George"
        ),
    )
    paperwork_in_site_log: bool = Field(
        default=False,
        description=(
            "the site log keeps the site's paperwork (certification, plan_approved, "
            "plan_on_site, approval_displayed, conference rows): only then does a missing "
            "row mean missing paperwork and raise paperwork_missing or permit_missing; "
            "unset, a log that never records paperwork raises nothing"
        ),
    )
    in_lake_george_park: bool | None = Field(
        default=None,
        description=(
            "inside the Lake George Park (§148-6 D, §148-11 A: §148-11 applies only there); "
            "unset: true for a site under the ny-lake-george pack"
        ),
    )
    rain_day_in: float | None = Field(
        default=None,
        gt=0,
        description=(
            "a local day with at least this much rain at one of the site's gauges is not a "
            "working day (Lake Lure 96.03: weather must permit the work); off when unset"
        ),
    )
    rain_day_mm: float | None = Field(default=None, gt=0, description="rain_day_in, in mm")

    @model_validator(mode="after")
    def _one_rain_day(self) -> SiteInfo:
        if self.rain_day_in is not None and self.rain_day_mm is not None:
            raise ValueError("set only one of rain_day_in, rain_day_mm")
        return self

    def rain_day_depth_mm(self) -> float | None:
        """The rain-day depth in mm (None: every weekday that is no holiday is a working day)."""
        if self.rain_day_in is not None:
            return self.rain_day_in * 25.4
        return self.rain_day_mm

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
    name: Text = ""
    water_class: WaterClass = Field(alias="class")


def _clock_range(value: str) -> str:
    """``HH:MM-HH:MM`` in the site's local time; it may wrap past midnight (22:00-07:00)."""
    if quiet_window(value) is None:
        raise ValueError('expected "HH:MM-HH:MM" in local time, e.g. "22:00-07:00"')
    return value


def quiet_window(text: str) -> tuple[int, int] | None:
    """``"22:00-07:00"`` as minutes after local midnight (1320, 420); None if malformed."""
    m = re.fullmatch(r"([01]\d|2[0-3]):([0-5]\d)-([01]\d|2[0-3]):([0-5]\d)", text.strip())
    if m is None:
        return None
    start = int(m[1]) * 60 + int(m[2])
    end = int(m[3]) * 60 + int(m[4])
    return None if start == end else (start, end)


class Contact(_Model):
    """A person alerts are routed to (alerts/routing.py decides who hears what)."""

    name: Annotated[Text, Field(min_length=1)]
    role: Role
    email: Annotated[str, AfterValidator(_email)] | None = None
    phone: Annotated[str, AfterValidator(_phone)] | None = None
    quiet_hours: Annotated[str, AfterValidator(_clock_range)] | None = Field(
        default=None,
        description="local hours when only critical messages reach this person; the rest "
        "wait until the window ends",
    )
    digest: bool = Field(default=True, description="a daily digest email, if an email is set")


class EscalationStep(_Model):
    """Who hears an unacknowledged alert, and how long after it was first announced."""

    role: Role
    after_min: float = Field(ge=0, le=7 * 24 * 60)


class Notifications(_Model):
    """How people are paced: an escalation chain, repeats of critical alerts, a daily digest.

    Without ``escalation`` everyone the routing names hears at once (the
    behaviour before chains existed). With it, a step hears an alert only if
    nobody has acknowledged it ``after_min`` minutes after it was announced;
    acknowledgement (console, link, SMS ``ACK``) stops the later steps and the
    repeats. Not part of what the engine judges: a change never rebuilds it.
    """

    escalation: list[EscalationStep] = Field(default_factory=list)
    repeat_critical_min: float = Field(
        default=60, ge=0, le=24 * 60, description="0: a critical alert is not repeated"
    )
    digest_at: str = Field(
        default="07:00", pattern=r"^(|([01]\d|2[0-3]):[0-5]\d)$", description='"" for none'
    )

    @model_validator(mode="after")
    def _chain_in_order(self) -> Notifications:
        afters = [s.after_min for s in self.escalation]
        if afters and (afters != sorted(afters) or afters[0] != 0):
            raise ValueError(
                "escalation steps must start at after_min = 0 and never go back in time"
            )
        return self


class Sensor(_Model):
    id: Identifier
    kind: str = Field(description="a kind of sensor siltwatch/sensorkinds/ describes")
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

    @field_validator("kind")
    @classmethod
    def _known_kind(cls, value: str) -> str:
        """Only a kind siltwatch knows the units and bounds of (siltwatch/sensorkinds/)."""
        known = [repr(k) for k in sensor_kinds()]
        if value not in sensor_kinds():
            raise ValueError(f"expected {', '.join(known[:-1])} or {known[-1]}, got {value!r}")
        return value

    @model_validator(mode="after")
    def _range(self) -> Sensor:
        """min_value >= max_value would flag every reading out of range: the sensor would count for nothing."""
        if (
            self.min_value is not None
            and self.max_value is not None
            and self.min_value >= self.max_value
        ):
            raise ValueError(
                f"min_value ({self.min_value:g}) must be below max_value ({self.max_value:g}): "
                "otherwise every reading is out of range"
            )
        return self

    def tip_depth_mm(self) -> float | None:
        if self.tip_in is not None:
            return self.tip_in * 25.4
        return self.tip_mm


class Station(_Model):
    id: Identifier
    name: Text = ""
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
            for i, (depth, volume) in enumerate(table):
                if depth < 0 or volume < 0:
                    raise ValueError(
                        f"stage_storage row {i} {list(table[i])}: depth and volume must be >= 0"
                    )
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


class DesignStorm(_Model):
    """A storm the site's controls are designed for: its 24-hour rainfall depth.

    Lake George §148-11 I(3)(c)[1],[2] (the 10-year/24-hour storm; the 25-year
    and, over five acres, the 100-year storm) and Lake Lure 96.08(A) (the
    10-year storm, or the 25-year storm where the project discharges to a lake
    or natural watercourse) name the storms; the depths are the site's, read
    from NOAA Atlas 14 for its location. Exactly one of ``depth_in`` and
    ``depth_mm``.
    """

    name: Annotated[Text, Field(min_length=1)]  # "10-year 24-hour"
    depth_in: float | None = Field(default=None, gt=0)
    depth_mm: float | None = Field(default=None, gt=0)

    @model_validator(mode="after")
    def _one_depth(self) -> DesignStorm:
        if self.depth_in is not None and self.depth_mm is not None:
            raise ValueError("set only one of depth_in, depth_mm")
        if self.depth_in is None and self.depth_mm is None:
            raise ValueError(
                "set depth_in or depth_mm: the storm's 24-hour rainfall depth "
                "(e.g. from NOAA Atlas 14 for the site)"
            )
        return self

    def depth_millimetres(self) -> float:
        """The 24-hour depth in mm, whichever key gave it."""
        if self.depth_in is not None:
            return self.depth_in * 25.4
        assert self.depth_mm is not None
        return self.depth_mm


class Area(_Model):
    """A disturbed area of the site; the site log records what happens to it.

    Its slope and distance to water decide which cover deadline applies (e.g.
    Lake George §148-11 I(3)(e)[3][b]: 24 hours when steeper than 15 % or
    within 500 ft of water), so they are required, not defaulted: a guessed
    value could pick the lenient deadline.
    """

    id: Identifier
    name: Text = ""
    acres: float = Field(ge=0)
    slope_pct: float = Field(ge=0, description="steepest grade in the area, percent")
    distance_to_water_ft: float = Field(
        ge=0, description="to the nearest lake, pond, stream or wetland"
    )
    hqw_zone: bool = Field(default=False, description="NC High Quality Water zone (96.08(B))")
    nearest_water: Identifier | None = Field(
        default=None,
        description="the receiving water distance_to_water_ft is measured to (its class decides "
        "whether a trout buffer applies, Lake Lure 96.07(A)(2)); unset: any of the site's",
    )
    buffer_exception: bool = Field(
        default=False,
        description="the approved plan allows disturbance inside a buffer here (lake access, "
        "Lake George §148-11 I(2)(h)[2]; work on, over or under water, Lake Lure 96.07(A)(2)(a))",
    )


class SiteConfig(_Model):
    site: SiteInfo
    receiving_waters: list[ReceivingWater] = Field(default_factory=list)
    contacts: list[Contact] = Field(default_factory=list)
    stations: list[Station] = Field(default_factory=list)
    turbidity_pairs: list[TurbidityPair] = Field(default_factory=list)
    infiltration_practices: list[InfiltrationPractice] = Field(default_factory=list)
    sediment_traps: list[SedimentTrap] = Field(default_factory=list)
    rain_gauges: list[RainGauge] = Field(default_factory=list)
    areas: list[Area] = Field(default_factory=list)
    design_storms: list[DesignStorm] = Field(default_factory=list)
    practices: list[FieldPractice] = Field(default_factory=list)  # siltwatch/practices.py
    field_desk: FieldDeskSettings = Field(default_factory=FieldDeskSettings)
    rule_overrides: dict[str, Any] = Field(default_factory=dict)
    notifications: Notifications = Field(default_factory=Notifications)

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

    def trap_volume_unit(self, trap: SedimentTrap) -> str:
        return self.sensor(trap.depth_sensor).unit

    def stage_storage_m(self, trap: SedimentTrap) -> list[tuple[float, float]] | None:
        """The trap's stage-storage table in metres and cubic metres."""
        if trap.stage_storage is None:
            return None
        unit = self.trap_volume_unit(trap)
        return [(to_metres(d, unit), volume_to_m3(v, unit)) for d, v in trap.stage_storage]
