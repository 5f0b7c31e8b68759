"""An inspection as a checklist: one finding per practice, one per area, signed.

What the law asks an inspection record to hold, field by field:

- Lake Lure 96.05(B)(17)(a): every erosion and sediment control measure
  documented as installed and not deviating from the plan
  (:attr:`PracticeCheck.installed`, :attr:`PracticeCheck.deviates`); the phase
  of grading of each slope and fill and the location of temporary and
  permanent ground cover (:class:`AreaCheck`); any significant deviation with
  the corrective action and its completion (a finding that needs work becomes
  a corrective action, ingest/store/fieldbook.py);
- 96.05(B)(17)(b): the inspector's name, address, affiliation, telephone
  number, signature and the date. Which of them a site's record must carry is
  the pack key ``inspection.record_fields`` (nc-lake-lure lists all of them);
- Lake George §148-10 A: "inspect and document the effectiveness of all
  erosion and sediment control practices" (:attr:`PracticeCheck.functioning`,
  for every practice of siltwatch/practices.py ``site_practices``).

A signature is the signed-in account, the time, and the SHA-256 of the
record's canonical content (:func:`canonical_bytes`: sorted keys, no spaces,
UTF-8), which names every photo by its own SHA-256; so a changed word or a
swapped photo no longer matches the hash the report prints.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from enum import StrEnum
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, field_validator

from siltwatch.schema import Identifier

PhotoId = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]  # the photo's SHA-256
Note = Annotated[str, Field(max_length=2000)]

# Record fields 96.05(B)(17)(b) names besides the signature and date, which every
# signed record carries anyway.
INSPECTOR_FIELDS = ("inspector", "affiliation", "address", "phone")

RECORD_FIELDS_KEY = "inspection.record_fields"  # declared by detections/inspections.py
ACTION_DAYS_KEY = "corrective_action.due_days"  # detections/corrective_actions.py


class GradingPhase(StrEnum):
    """Where the area's slopes and fills stand (96.05(B)(17)(a) "phase of grading")."""

    NOT_STARTED = "not_started"
    CLEARING = "clearing"
    ROUGH_GRADING = "rough_grading"
    FINAL_GRADING = "final_grading"
    GRADING_COMPLETE = "grading_complete"


class CoverType(StrEnum):
    """The ground cover on the area (96.05(B)(17)(a) "temporary and permanent ground cover")."""

    NONE = "none"
    MULCH = "mulch"
    EROSION_BLANKET = "erosion_blanket"
    PLASTIC_SHEETING = "plastic_sheeting"
    TEMPORARY_SEEDING = "temporary_seeding"
    PERMANENT_SEEDING = "permanent_seeding"
    SOD = "sod"
    GRAVEL_OR_PAVING = "gravel_or_paving"
    ESTABLISHED_VEGETATION = "established_vegetation"


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class PracticeCheck(_Record):
    practice: Identifier
    installed: bool
    functioning: bool
    needs_maintenance: bool
    deviates: bool  # from the approved plan
    note: Note = ""
    photos: list[PhotoId] = Field(default_factory=list, max_length=12)

    @property
    def needs_work(self) -> bool:
        """A finding that becomes a corrective action."""
        return not self.installed or not self.functioning or self.needs_maintenance or self.deviates

    def finding(self) -> str:
        """The finding in words, for the corrective action and the report."""
        parts = [
            text
            for bad, text in (
                (not self.installed, "not installed"),
                (self.installed and not self.functioning, "not functioning"),
                (self.needs_maintenance, "needs maintenance"),
                (self.deviates, "deviates from the plan"),
            )
            if bad
        ]
        return ", ".join(parts) + (f": {self.note}" if self.note else "")


class AreaCheck(_Record):
    area: Identifier
    grading: GradingPhase
    cover: CoverType
    cover_pct: int = Field(ge=0, le=100)  # how much of the area the cover spans
    note: Note = ""
    photos: list[PhotoId] = Field(default_factory=list, max_length=12)


class Checklist(_Record):
    """The structured inspection record (stored whole; its canonical bytes are signed)."""

    site: Identifier
    time: datetime
    inspector: str = Field(min_length=1, max_length=200)
    account: str = Field(min_length=1, max_length=200)  # the signed-in console account
    affiliation: str = Field(default="", max_length=200)
    address: str = Field(default="", max_length=400)
    phone: str = Field(default="", max_length=40)
    duty: str | None = None
    practices: list[PracticeCheck] = Field(default_factory=list)
    areas: list[AreaCheck] = Field(default_factory=list)
    notes: Note = ""
    amends: str | None = None  # the record id this one amends

    @field_validator("time")
    @classmethod
    def _aware(cls, value: datetime) -> datetime:
        if value.tzinfo is None:
            raise ValueError("the time needs a time zone")
        return value

    def photo_ids(self) -> list[str]:
        return [p for c in self.practices for p in c.photos] + [
            p for a in self.areas for p in a.photos
        ]

    def missing_fields(self, required: list[str]) -> list[str]:
        """The 96.05(B)(17)(b) fields ``required`` (pack key ``inspection.record_fields``)
        left empty, in the order the ordinance names them."""
        return [f for f in INSPECTOR_FIELDS if f in required and not str(getattr(self, f)).strip()]


def canonical_bytes(record: Checklist) -> bytes:
    """The record's content as signed: sorted keys, no spaces, UTF-8, UTC time."""
    data = record.model_dump(mode="json")
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def content_hash(record: Checklist) -> str:
    return hashlib.sha256(canonical_bytes(record)).hexdigest()
