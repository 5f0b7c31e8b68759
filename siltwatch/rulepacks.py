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
from dataclasses import replace
from functools import cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from siltwatch.configerrors import ConfigError, not_finite, read_toml, validation_lines
from siltwatch.detections import rule_keys
from siltwatch.officials import OFFICER_TITLE
from siltwatch.rules import Rules, RuleValue, Verified

if TYPE_CHECKING:
    from siltwatch.sitemodel import SiteConfig
from siltwatch.limitshapes import check_limit_shape
from siltwatch.rulekeys import NON_NEGATIVE, RuleKey, flag, number

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
    if key == WEEKEND_KEY and isinstance(value, list):
        return check_weekend(value)
    if isinstance(value, dict):
        return check_limit_shape(value)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return _out_of_range(key, value)
    return None


WEEKEND_KEY = "calendar.weekend"
WEEKDAY_NAMES: tuple[str, ...] = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")


def check_weekend(value: list[Any]) -> str | None:
    """Why a ``calendar.weekend`` list is refused, or None.

    Each entry names a weekday (its first three letters decide). A weekend of all
    seven days leaves no working or business day at all: "15 working days" (Lake
    Lure 96.07(D)) would never end and the count would loop for ever, so such a
    pack or site override is refused at load rather than hang the engine.
    """
    days: set[str] = set()
    for name in value:
        key = name.strip().lower()[:3] if isinstance(name, str) else None
        if key not in WEEKDAY_NAMES:
            return f"weekend day {name!r}: expected one of {', '.join(WEEKDAY_NAMES)}"
        days.add(key)
    if len(days) == len(WEEKDAY_NAMES):
        return (
            "all seven days are weekend days: no working day or business day is left, so "
            "no 'N working days' or 'next business day' deadline could ever end"
        )
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


def resolve_rules(pack_ids: list[str], overrides: dict[str, Any] | None = None) -> Rules:
    """The packs ``pack_ids`` stacked after what they extend, then the site's overrides."""
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
            values[key] = RuleValue(key, value, "site configuration", "default", "site", "", True)
        else:
            values[key] = replace(base, value=value, site_override=True)
    return Rules(values, chain)


def site_rules(site: SiteConfig) -> Rules:
    """The resolved rules of ``site``: its packs, then its ``[rule_overrides]``."""
    return resolve_rules(site.site.rule_packs, site.rule_overrides)


# Rules and RuleValue live on the floor below (siltwatch/rules.py); they are handed on
# here because the detectors read a site's rules as "the rule packs' rules".
__all__ = [
    "BASE_PACK",
    "PENDING_RULE_KEYS",
    "RULE_KEYS",
    "RULE_RANGES",
    "SCOPE_RULE_KEYS",
    "PackFile",
    "RuleEntry",
    "RuleValue",
    "Rules",
    "Verified",
    "available_packs",
    "check_limit_shape",
    "check_value",
    "load_pack",
    "pack_chain",
    "resolve_rules",
    "site_rules",
]
