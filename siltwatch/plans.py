"""The plan approval a site works under, as its site log records it.

Lake Lure 96.05(B)(8): "The Erosion Control Officer may establish an expiration
date, not to exceed 3 years, for plans approved under this ordinance." A
``plan_approved`` row records an approval (or its renewal); its detail may
start with ``expires YYYY-MM-DD``, the last day the approval holds, then free
text. Read here, once, for the site-log checks (siltwatch/schema.py) and the
detection (analytics/plan_approval.py).
"""

from __future__ import annotations

import re
from datetime import date

_EXPIRES = re.compile(r"^expires\b\s*(\S*)\s*(.*)$", re.DOTALL)
_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def parse_plan_approved(detail: str | None) -> date | None:
    """The approval's last day, None when the row sets none; ValueError, for people, when
    the detail starts with ``expires`` but no date ``YYYY-MM-DD`` follows."""
    found = _EXPIRES.match((detail or "").strip())
    if found is None:
        return None
    text = found.group(1)
    try:
        if not _ISO_DATE.fullmatch(text):
            raise ValueError
        return date.fromisoformat(text)
    except ValueError:
        raise ValueError(
            "event 'plan_approved': 'expires' takes the approval's last day as YYYY-MM-DD "
            "(e.g. 2029-05-01); " + (f"got {text[:30]!r}" if text else "no date given")
        ) from None
