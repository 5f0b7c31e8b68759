"""The applicant or a representative on site whenever construction or grading takes place.

Lake George §148-10 A and Big Flats 17.37.100 A: "The applicant or developer or
his or her [their] representative shall be on site at all times when
construction or grading activity takes place". The site log says both: a row
of work (``disturbed``, ``cleared``, ``graded`` or ``active`` in an area: the
construction or grading activity) and an ``on_site`` row (detail: who was
there). A row of work on a local day with no ``on_site`` row at or before it
that day opens ``representative_absent`` (subject: the local day, e.g.
``2026-06-03``): the town hears it once. An ``on_site`` row later that day
resolves it as late (nobody was recorded there when the work began); the end of
the day resolves an episode that nobody closed, saying so. Pack key
``presence.representative_on_site``. The check starts with the site log's first
``on_site`` row: a log that never records presence is not evidence of absence.
"""

from __future__ import annotations

from datetime import tzinfo

from siltwatch.detections.base import Description, Evidence, Officer, regulatory
from siltwatch.rulekeys import flag


class PresenceEvidence(Evidence):
    day: str  # the local day, YYYY-MM-DD
    work_at: str  # the day's first row of work with nobody recorded on site
    work: str  # its event and area
    on_site_at: str | None = None  # when someone was recorded on site, if later that day


def _amount(ev: PresenceEvidence, _zone: tzinfo) -> str:
    if ev.on_site_at:
        return f"nobody recorded on site when work began on {ev.day}"
    return f"work on {ev.day} with nobody recorded on site"


# subject: the local day
REPRESENTATIVE_ABSENT = regulatory(
    "representative_absent",
    "work with no representative on site",
    PresenceEvidence,
    _amount,
    Officer.ONCE,
)

DESCRIPTION = Description(
    key="presence",
    order=52,
    alerts=(REPRESENTATIVE_ABSENT,),
    rule_keys=(flag("presence.representative_on_site"),),
)
