"""Inspection records that lack what the law asks them to hold (Lake Lure 96.05(B)(17)(b)).

"The documentation ... shall include the name, address, affiliation, telephone
number, and signature of the person conducting the inspection and the date of
the inspection." The name and date are always there (``inspector``, ``t``); the
pack's ``inspection.record_fields`` lists the others a record must carry. A
record missing some is still accepted — it completes its duties, since the
inspection happened — but flagged: an ``inspection_record_incomplete`` alert
names what is missing and the duties the record completed, and stays open
until a later inspection's record is complete.
"""

from __future__ import annotations

from dataclasses import dataclass

from analytics.detector import Context
from analytics.episodes import DutyRecord
from analytics.events import Inspection
from analytics.timeutil import iso
from siltwatch.detections.inspections import RECORD_INCOMPLETE
from siltwatch.rulepacks import Rules
from siltwatch.timefmt import local_time
from siltwatch.vocabulary import Severity

KIND = RECORD_INCOMPLETE.kind
SUBJECT = "inspection-records"
WORDS = {
    "affiliation": "affiliation",
    "address": "address",
    "phone": "telephone number",
    "signed": "signature",
    "deviations": "significant deviations (or 'none')",
    "corrective_actions": "corrective actions (or 'none')",
}


@dataclass(frozen=True)
class RecordRule:
    fields: tuple[str, ...]
    cite: str

    @classmethod
    def from_rules(cls, rules: Rules) -> RecordRule | None:
        rule = rules.get("inspection.record_fields")
        if rule is None or not rule.value:
            return None
        return cls(tuple(str(f) for f in rule.value), rule.cite())


def missing(inspection: Inspection, fields: tuple[str, ...]) -> list[str]:
    """The required fields the record leaves out (an unsigned record lacks the signature)."""
    out = []
    for name in fields:
        value = getattr(inspection, name, None)
        if value is None or value is False or (isinstance(value, str) and not value.strip()):
            out.append(name)
    return out


def check_record(
    rule: RecordRule, inspection: Inspection, done: list[DutyRecord], ctx: Context
) -> None:
    """Flag an incomplete record (one episode while records keep lacking fields)."""
    t = inspection.t
    lacks = missing(inspection, rule.fields)
    if not lacks:
        episode = ctx.alerts.get_open(KIND, SUBJECT)
        if episode is not None:
            ctx.alerts.resolve(
                KIND,
                SUBJECT,
                t,
                message=f"{episode.message} Resolved: the inspection record of "
                f"{local_time(t, ctx.zone)} by {inspection.inspector} holds every field "
                f"{rule.cite} asks for.",
            )
        return
    duties = [r.id for r in done]
    message = (
        f"The inspection record of {local_time(t, ctx.zone)} by {inspection.inspector} lacks "
        f"the {', '.join(WORDS.get(f, f) for f in lacks)} that {rule.cite} requires. "
        + (f"It completed {', '.join(duties)}; " if duties else "It completed no open duty; ")
        + "complete the record (or the plan copy) and sign it."
    )
    evidence = {
        "inspector": inspection.inspector,
        "at": iso(t),
        "missing": lacks,
        "duties": duties,
    }
    if ctx.alerts.is_open(KIND, SUBJECT):
        ctx.alerts.update(KIND, SUBJECT, t, message=message, evidence=evidence)
    else:
        ctx.alerts.open(
            KIND, SUBJECT, t, Severity.WARNING, rule=rule.cite, message=message, evidence=evidence
        )
