"""The site's erosion and sediment control practices, as the inspector walks them.

Lake Lure 96.05(B)(17)(a) asks that *every* erosion and sediment control
measure be documented as installed and not deviating from the plan, and Lake
George §148-10 A that the effectiveness of *all* practices be inspected and
documented. Most of those measures carry no sensor (silt fence runs, inlet
protection, construction entrances, check dams, diversions, slope drains,
stockpiles), so the site file declares them:

.. code-block:: toml

    [[practices]]
    id = "sf-north"
    type = "silt_fence"
    name = "Silt fence along the north property line"
    area = "lot-1"            # optional: an [[areas]] id

The sensed sediment traps and infiltration practices are practices too
(:func:`site_practices` lists them with the declared ones), so the
inspection checklist (siltwatch/checklist.py) is generated from one list.

``[field_desk]`` holds what a site chooses about its field records:
``keep_photo_location`` (photos keep their GPS and camera metadata; off by
default, as a photo leaves the site in every report) and
``corrective_action_days`` (the due date of a corrective action where no pack
sets one). Both tables are optional, so the contract's reference site files
load unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from siltwatch.schema import Identifier

if TYPE_CHECKING:
    from siltwatch.config import SiteConfig


class FieldPracticeType(StrEnum):
    """The unsensed measures an E&SC plan shows (NC and NY field manuals' names)."""

    SILT_FENCE = "silt_fence"
    INLET_PROTECTION = "inlet_protection"
    CONSTRUCTION_ENTRANCE = "construction_entrance"
    CHECK_DAM = "check_dam"
    DIVERSION = "diversion"
    SLOPE_DRAIN = "slope_drain"
    STOCKPILE = "stockpile"
    OUTLET_PROTECTION = "outlet_protection"
    OTHER = "other"


SENSED_TRAP = "sediment_trap"  # the type shown for a [[sediment_traps]] entry


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class FieldPractice(_Strict):
    """One ``[[practices]]`` entry: a measure the inspector checks by eye."""

    id: Identifier
    type: FieldPracticeType
    name: str = Field(default="", max_length=200)
    area: Identifier | None = None


class FieldDeskSettings(_Strict):
    """``[field_desk]``: the site's choices about its field records."""

    keep_photo_location: bool = False
    corrective_action_days: int = Field(default=7, ge=1, le=365)


@dataclass(frozen=True)
class Practice:
    """A practice of the checklist: declared in ``[[practices]]`` or sensed."""

    id: str
    type: str
    name: str
    area: str | None
    sensed: bool


def site_practices(site: SiteConfig) -> list[Practice]:
    """Every practice of the site, the declared ones first, then the sensed ones."""
    out = [Practice(p.id, p.type.value, p.name or p.id, p.area, False) for p in site.practices]
    out += [Practice(t.id, SENSED_TRAP, t.id, None, True) for t in site.sediment_traps]
    out += [Practice(p.id, str(p.type), p.id, None, True) for p in site.infiltration_practices]
    return out


def practice_problems(data: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Cross-reference mistakes of ``[[practices]]`` as (key path, what was expected):
    an id used twice (or by a sensed trap or basin), an area the site does not declare."""
    raw = data.get("practices")
    if not isinstance(raw, list):
        return []
    areas = {a.get("id") for a in data.get("areas", []) if isinstance(a, dict)}
    taken: dict[str, str] = {}
    for key in ("sediment_traps", "infiltration_practices"):
        for i, item in enumerate(data.get(key, []) if isinstance(data.get(key), list) else []):
            if isinstance(item, dict) and isinstance(item.get("id"), str):
                taken[item["id"]] = f"{key}[{i}]"
    out: list[tuple[str, str]] = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict):
            continue
        ident, area = item.get("id"), item.get("area")
        if isinstance(ident, str):
            if ident in taken:
                out.append((f"practices[{i}].id", f"practice id {ident!r} is also {taken[ident]}"))
            else:
                taken[ident] = f"practices[{i}]"
        if isinstance(area, str) and area not in areas:
            known = ", ".join(sorted(str(a) for a in areas if a)) or "none declared"
            out.append((f"practices[{i}].area", f"unknown area {area!r} (areas: {known})"))
    return out
