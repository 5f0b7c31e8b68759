"""Rule packs: the law as data, one TOML file per jurisdiction.

Every number siltwatch enforces lives in a pack with its citation and how well
it was verified (``seed``: read in the ordinance; ``primary``: read in the
permit or regulation; ``secondary``: seen only in a summary; ``default``: a
siltwatch engineering choice). Packs stack: a site lists its packs, each pack
may extend others, a later pack overrides an earlier one key by key, and the
site's own ``[rule_overrides]`` win over all of them and are recorded, so an
alert can say "site override of Lake George §148-10".

The pack files ship inside this package (``siltwatch/packs/``) because
``siltwatch config check`` must validate them without the analytics.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from siltwatch.configerrors import ConfigError, not_finite, read_toml, validation_lines
from siltwatch.detections import rule_keys
from siltwatch.detections.base import NON_NEGATIVE, RuleKey, flag, number
from siltwatch.officials import OFFICER_TITLE
from siltwatch.rulemath import LIMIT_KEYS

Verified = Literal["seed", "primary", "secondary", "default"]
BASE_PACK = "siltwatch-defaults"

LimitShape = dict[str, float | bool]
RuleScalar = float | int | bool | str | list[str] | LimitShape

# Keys the packs cite that no detection reads yet: the site's-life duties (notices,
# cover deadlines, the daily log and the benchmark levels) are recorded with
# their citations now so the packs stay the law as written, and will be read by
# the detections that enforce them. ``siltwatch rules`` shows them like any other.
PENDING_RULE_KEYS: tuple[RuleKey, ...] = (
    flag("rain.daily_log"),
    number("turbidity.benchmark_ntu", NON_NEGATIVE),
    number("turbidity.dewatering_benchmark_ntu", NON_NEGATIVE),
)

# Keys that say which sites a pack's law reaches: read by the scope warnings of
# ``siltwatch config check`` (siltwatch/applicability.py), not by a detection.
SCOPE_RULE_KEYS: tuple[RuleKey, ...] = (
    number("scope.min_disturbed_acres", NON_NEGATIVE),
    number("scope.exempt_under_sq_ft", NON_NEGATIVE),
    flag("scope.drain_limits_major_only"),
    RuleKey("scope.major_projects_only", (list,)),
    RuleKey("scope.park_only", (list,)),
)

# Every key a pack may set, with the type of its value: what the detections read
# (their descriptions, siltwatch/detections/) and the pending keys above. A key
# outside this catalogue is a typo in a pack, and a pack with a typo must not load.
_CATALOGUE = (*rule_keys(), *PENDING_RULE_KEYS, *SCOPE_RULE_KEYS, OFFICER_TITLE)
RULE_KEYS: dict[str, tuple[type, ...]] = {k.name: k.types for k in _CATALOGUE}
# The range a numeric rule must lie in (see RuleKey): a pack or a site override
# outside it is refused rather than left to switch a rule off quietly.
RULE_RANGES: dict[str, tuple[float, bool, float | None]] = {
    k.name: k.range for k in _CATALOGUE if k.range is not None
}


class RuleEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    value: Any
    citation: str = Field(min_length=1)
    verified: Verified
    text: str = ""


class PackHeader(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    title: str
    version: str
    extends: list[str] = Field(default_factory=list)
    to_check: list[str] = Field(default_factory=list)


class PackFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    pack: PackHeader
    rules: dict[str, RuleEntry] = Field(default_factory=dict)


@dataclass(frozen=True)
class RuleValue:
    """One resolved rule: its value and where it comes from."""

    key: str
    value: Any
    citation: str
    verified: Verified
    pack: str
    text: str = ""
    site_override: bool = False

    def cite(self) -> str:
        """The citation as an alert text shows it.

        A site override says so; a value only seen in a summary says "per"
        (README.md, "Site configuration and rule packs": a secondary value is cited
        as "per …" in alerts).
        """
        if self.site_override and self.pack == "site":
            return f"site configuration ({self.key})"
        if self.site_override:
            return f"site override of {self.citation}"
        if self.verified == "secondary":
            return f"per {self.citation}"
        return self.citation


def check_value(key: str, value: Any) -> str | None:
    """Why ``value`` does not fit ``key``, or None when it does."""
    types = RULE_KEYS.get(key)
    if types is None:
        return f"unknown rule key {key!r} (known: {', '.join(sorted(RULE_KEYS))})"
    if isinstance(value, bool) and bool not in types:
        return f"expected a number, got {value!r}"
    if not isinstance(value, types):
        expected = " or ".join(t.__name__ for t in types).replace("dict", "table")
        return f"expected {expected}, got {value!r}"
    if isinstance(value, dict):
        return check_limit_shape(value)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return _out_of_range(key, value)
    return None


def _out_of_range(key: str, value: float) -> str | None:
    """Why a numeric rule value is not finite or outside :data:`RULE_RANGES`, or None."""
    if not math.isfinite(value):
        return not_finite(value)
    bounds = RULE_RANGES.get(key)
    if bounds is None:
        return None
    low, low_ok, high = bounds
    too_low = value < low or (value == low and not low_ok)
    too_high = high is not None and value > high
    if too_low or too_high:
        wanted = f"a number {'>=' if low_ok else '>'} {low:g}"
        if high is not None:
            wanted += f" and <= {high:g}"
        return f"expected {wanted}, got {value!r}"
    return None


def check_limit_shape(value: dict[str, Any]) -> str | None:
    """Why a turbidity limit table is not one of the contract's shapes, or None."""
    unknown = set(value) - LIMIT_KEYS
    if unknown:
        return f"unknown turbidity limit key(s) {sorted(unknown)}; expected some of {sorted(LIMIT_KEYS)}"
    numeric = [k for k in value if k != "no_increase_over_background"]
    if not numeric:
        return "a turbidity limit needs max_ntu, over_background_ntu or over_background_pct"
    for k in numeric:
        v = value[k]
        if isinstance(v, bool) or not isinstance(v, int | float):
            return f"{k} must be a number >= 0, got {v!r}"
        if not math.isfinite(v):
            return f"{k}: {not_finite(v)}"
        if v < 0:
            return f"{k} must be a number >= 0, got {v!r}"
    if "pct_above_background_ntu" in value and not (
        "over_background_ntu" in value and "over_background_pct" in value
    ):
        return (
            "pct_above_background_ntu (the piecewise form) needs both over_background_ntu "
            "and over_background_pct"
        )
    return None


def _pack_dir() -> Path:
    return Path(str(resources.files("siltwatch") / "packs"))


def available_packs() -> list[str]:
    return sorted(p.stem for p in _pack_dir().glob("*.toml"))


@cache
def load_pack(pack_id: str) -> PackFile:
    """Load and validate one shipped pack; ConfigError lines name the pack file and key."""
    path = _pack_dir() / f"{pack_id}.toml"
    if not path.exists():
        raise ConfigError(
            [f"rule pack {pack_id!r} does not exist (known: {', '.join(available_packs())})"]
        )
    data = read_toml(path)
    try:
        pack = PackFile.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(validation_lines(str(path), exc)) from None
    errors = []
    if pack.pack.id != pack_id:
        errors.append(
            f"{path}: pack.id: expected {pack_id!r} (the file name), got {pack.pack.id!r}"
        )
    for key, entry in pack.rules.items():
        problem = check_value(key, entry.value)
        if problem:
            errors.append(f"{path}: rules.{key}.value: {problem}")
    if errors:
        raise ConfigError(errors)
    return pack


def pack_chain(pack_ids: list[str]) -> list[str]:
    """The packs in stacking order: the defaults, then each pack after what it extends."""
    order: list[str] = []

    def visit(pack_id: str, trail: tuple[str, ...]) -> None:
        if pack_id in trail:
            raise ConfigError(
                [f"rule pack {pack_id!r} extends itself through {' -> '.join(trail)}"]
            )
        if pack_id in order:
            return
        for parent in load_pack(pack_id).pack.extends:
            visit(parent, (*trail, pack_id))
        order.append(pack_id)

    visit(BASE_PACK, ())
    for pack_id in pack_ids:
        visit(pack_id, ())
    return order


class Rules:
    """The resolved rules of one site: packs stacked, then the site's overrides."""

    def __init__(self, values: dict[str, RuleValue], packs: list[str]) -> None:
        self._values = values
        self.packs = packs

    @classmethod
    def resolve(cls, pack_ids: list[str], overrides: dict[str, Any] | None = None) -> Rules:
        chain = pack_chain(pack_ids)
        values: dict[str, RuleValue] = {}
        for pack_id in chain:
            for key, entry in load_pack(pack_id).rules.items():
                values[key] = RuleValue(
                    key, entry.value, entry.citation, entry.verified, pack_id, entry.text
                )
        for key, value in (overrides or {}).items():
            base = values.get(key)
            if base is None:
                values[key] = RuleValue(
                    key, value, "site configuration", "default", "site", "", True
                )
            else:
                values[key] = replace(base, value=value, site_override=True)
        return cls(values, chain)

    def get(self, key: str) -> RuleValue | None:
        return self._values.get(key)

    def require(self, key: str) -> RuleValue:
        value = self._values.get(key)
        if value is None:
            raise KeyError(
                f"no rule pack of this site sets {key!r} (packs: {', '.join(self.packs)})"
            )
        return value

    def number(self, key: str) -> float:
        return float(self.require(key).value)

    def overrides(self) -> list[RuleValue]:
        """The values the site overrode: logged at start-up and shown in alert texts."""
        return [v for v in self._values.values() if v.site_override]

    def items(self) -> list[RuleValue]:
        return [self._values[k] for k in sorted(self._values)]

    def without(self, keys: set[str] | frozenset[str]) -> Rules:
        """These rules less ``keys`` (rules that do not apply to the site, see
        siltwatch/applicability.py)."""
        return Rules({k: v for k, v in self._values.items() if k not in keys}, self.packs)
