"""The field desk's records as the console and the report show them.

One view of a checklist (its findings, photos and signature block: who signed,
when, and whether the stored content still hashes to what was signed) and of
a corrective action (due, overdue, closed), shared by the field desk's pages
(console/pages_field.py) and the inspector's report (console/report/document.py),
so the two cannot tell a record's state differently.
"""

from __future__ import annotations

from typing import Any

from ingest.store.fieldbook import CorrectiveAction, FieldRecord
from siltwatch.checklist import Checklist
from siltwatch.config import SiteConfig
from siltwatch.practices import site_practices
from siltwatch.timefmt import local_time


def record_view(r: FieldRecord, site: SiteConfig) -> dict[str, Any]:
    checklist = Checklist.model_validate_json(r.body)
    return {
        "id": r.record_id,
        "when": local_time(r.t, site.site.zone),
        "checklist": checklist,
        "signed_by": r.account if r.signed_at is not None else None,
        "signed_at": local_time(r.signed_at, site.site.zone) if r.signed_at else None,
        "sha256": r.sha256,
        "intact": r.intact,
        "amends": r.amends,
        # people's names for things: "Silt fence below Lot 1 (sf-lot1)", not the id alone
        "practice_names": {p.id: _named(p.name, p.id) for p in site_practices(site)},
        "area_names": {a.id: _named(a.name, a.id) for a in site.areas},
    }


def _named(name: str, ident: str) -> str:
    return f"{name} ({ident})" if name and name != ident else ident


def action_view(a: CorrectiveAction, site: SiteConfig, now_ms: int) -> dict[str, Any]:
    return {
        "a": a,
        "due": local_time(a.due_at, site.site.zone),
        "closed": local_time(a.closed_at, site.site.zone) if a.closed_at else None,
        "overdue": a.overdue(now_ms),
        "practice": next(
            (_named(p.name, p.id) for p in site_practices(site) if p.id == a.practice), a.practice
        ),
    }
