"""What turns the inspector's report (console/report/document.py) into a record a town can file.

A town officer reads the first line and the last page: so the report opens
with a one-line verdict (what was missed, what is open), names things as
people do (an area's name, not a duty's hash), prints each corrective action
once, and ends with the certification and signature lines that the site's law
asks of an inspection record:

* Lake Lure 96.05(B)(17)(b): the documentation "shall include the name,
  address, affiliation, telephone number, and signature of the person
  conducting the inspection and the date of the inspection. Any relevant
  licenses and certifications may also be included"; (B)(17)(a)(v): significant
  deviations, the corrective actions required and their completion;
* the NY SPDES construction general permit (packs ``ny-gp``, and Lake George
  Ch. 148 / Big Flats 17.37 which defer to its Part IV): its signatory
  requirements use the federal certification of 40 CFR 122.22(d), quoted here
  from the federal rule (secondary for the permit: not checked against the
  permit's own text).

Pure: data in, words out; no I/O and no clock.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, tzinfo

from siltwatch.config import SiteConfig
from siltwatch.schema import Duty


@dataclass(frozen=True)
class Certification:
    """A certification statement with the signature block the law asks for."""

    title: str
    statement: str
    cite: str
    lines: tuple[str, ...]  # the signature block's fields, in the law's order


LAKE_LURE = Certification(
    title="Inspection record: the inspector's details and signature",
    statement=(
        "I performed the inspections recorded in this report. Any significant deviation from "
        "the approved erosion and sedimentation control plan, the corrective actions required "
        "to correct it and their completion are documented above."
    ),
    cite=(
        "Lake Lure 96.05(B)(17)(a)(v) and (b): the record shall include the name, address, "
        "affiliation, telephone number and signature of the person conducting the inspection "
        "and the date of the inspection; relevant licenses and certifications may be included."
    ),
    lines=(
        "Name",
        "Address",
        "Affiliation",
        "Telephone number",
        "Licenses and certifications (optional)",
        "Signature",
        "Date of inspection",
    ),
)

NY_GP = Certification(
    title="Qualified inspector's certification",
    statement=(
        "I certify under penalty of law that this document and all attachments were prepared "
        "under my direction or supervision in accordance with a system designed to assure that "
        "qualified personnel properly gathered and evaluated the information submitted. Based "
        "on my inquiry of the person or persons who manage the system, or those persons "
        "directly responsible for gathering the information, the information submitted is, to "
        "the best of my knowledge and belief, true, accurate, and complete. I am aware that "
        "there are significant penalties for submitting false information, including the "
        "possibility of fine and imprisonment for knowing violations."
    ),
    cite=(
        "NY SPDES General Permit for Stormwater Discharges from Construction Activity, "
        "signatory requirements (Part VII.H), which use the certification of 40 CFR 122.22(d); "
        "the text is quoted from 40 CFR 122.22(d) (secondary for the permit). The qualified "
        "inspector signs each inspection report (Part IV.C)."
    ),
    lines=(
        "Qualified inspector's name",
        "Title and qualification",
        "Company, address and telephone number",
        "Signature",
        "Date",
    ),
)

DEFAULT = Certification(
    title="Review and signature",
    statement=(
        "I have reviewed this report. To the best of my knowledge the information in it is "
        "true, accurate and complete."
    ),
    cite="siltwatch default: no rule pack of this site gives a certification text.",
    lines=("Name", "Title", "Signature", "Date"),
)

_BY_PACK: tuple[tuple[str, Certification], ...] = (
    ("nc-lake-lure", LAKE_LURE),
    ("ny-gp", NY_GP),
)


def certifications(packs: Iterable[str]) -> list[Certification]:
    """The certifications the site's packs ask for (each once), or :data:`DEFAULT`."""
    chain = set(packs)
    found = [cert for pack, cert in _BY_PACK if pack in chain]
    return found or [DEFAULT]


# --- the verdict ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    text: str
    clean: bool  # nothing missed, no regulatory alert


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def verdict(
    duty_states: Sequence[str],
    alerts: Sequence[tuple[bool, bool, bool]],
) -> Verdict:
    """One line: duties missed and late, regulatory alerts (still open), and those without a
    recorded corrective action; ``alerts`` are (regulatory, open, corrective action recorded).
    """
    missed = sum(1 for s in duty_states if s == "missed")
    late = sum(1 for s in duty_states if s == "late")
    regulatory = [a for a in alerts if a[0]]
    still_open = sum(1 for _reg, is_open, _act in alerts if is_open)
    unanswered = sum(1 for _reg, _open, acted in regulatory if not acted)
    parts = []
    if missed:
        parts.append(_count(missed, "duty missed", "duties missed"))
    if late:
        parts.append(_count(late, "duty met late", "duties met late"))
    if regulatory:
        parts.append(_count(len(regulatory), "regulatory alert", "regulatory alerts"))
    if unanswered:
        parts.append(f"{unanswered} without a recorded corrective action")
    if still_open:
        parts.append(_count(still_open, "alert still open", "alerts still open"))
    clean = not (missed or late or regulatory)
    if clean:
        others = f"; {_count(len(alerts), 'other alert', 'other alerts')}" if alerts else ""
        return Verdict(
            f"No violations found: every duty met on time, no regulatory alert{others}.", True
        )
    return Verdict(", ".join(parts) + ".", False)


# --- people's names for things ----------------------------------------------------------------

_STORM = re.compile(r"^(?P<gauge>[^@]+)@(?P<at>\d{4}-\d\d-\d\dT[\d:]+Z)$")


def subject_name(site: SiteConfig, subject: str, duties: Mapping[str, Duty], zone: tzinfo) -> str:
    """What a subject is called by people: an area's name, "the whole site", a storm by its
    gauge and start, a duty by what it is about; an id nobody named stays as it is."""
    if subject == site.site.id:
        return "the whole site"
    for area in site.areas:
        if area.id == subject:
            return f"{area.name} ({area.id})" if area.name else area.id
    duty = duties.get(subject)
    if duty is not None and duty.subject != subject:
        return subject_name(site, duty.subject, duties, zone)
    storm = _STORM.match(subject)
    if storm:
        start = datetime.fromisoformat(storm["at"].replace("Z", "+00:00")).astimezone(zone)
        return f"storm at {storm['gauge']} from {start:%Y-%m-%d %H:%M %Z}"
    if "_" in subject and subject.replace("_", "").isalpha():
        return subject.replace("_", " ")  # a milestone: clearing_completed
    return subject


def css_string(text: str) -> str:
    """``text`` as a CSS string literal (for ``content:`` in the page's margin boxes)."""
    safe = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ").replace("<", "\\3c ")
    return f'"{safe}"'


def same_text(a: str, b: str) -> bool:
    """Whether two notes say the same thing (case and spacing aside)."""
    return " ".join(a.split()).casefold() == " ".join(b.split()).casefold()
