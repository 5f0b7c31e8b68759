"""A reload is a transaction: a new site file that would silently stop the watching is refused.

Why: ``systemctl reload`` (SIGHUP) applies whatever the site file says now. A
file cut down by an editor, a bad merge or a half-finished copy (``[site] id =
"..."`` alone) used to be taken as the new configuration: every reading was
refused as "unknown station" and the site went unwatched without a word. So
before a changed file replaces the configuration a site runs, two things are
checked against the store:

* the new file still has stations with sensors, when the running one has;
* every sensor that delivered a reading dated in the last :data:`RECENT_MS`
  is still in it (a sensor dropped from the file would be orphaned: its
  station keeps publishing into rejections).

When either fails the reload of that site is refused with one line naming the
file and why, and the old configuration keeps running. ``--allow-orphaning``
forces it (a station really taken off the site). Pure: the caller reads the
store and says the line.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from siltwatch.config import SiteConfig

RECENT_MS = 7 * 86_400_000
FORCE = "--allow-orphaning"


def _listed(ids: list[str]) -> str:
    shown = ", ".join(repr(i) for i in ids[:5])
    return shown + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")


def reload_refusal(
    path: Path | str, old: SiteConfig, new: SiteConfig, recent: Iterable[str]
) -> str | None:
    """Why ``new`` may not replace ``old`` (one line naming ``path``), or None.

    ``recent``: the ids of the site's sensors with a reading dated in the last
    :data:`RECENT_MS` (ingest/store/queries.py ``recent_sensors``).
    """
    keeps = f"site {old.site.id!r} keeps the configuration it runs ({FORCE} forces it)"
    if old.sensors() and not new.sensors():
        return (
            f"{path}: reload refused: the new file has no sensors at all (the running "
            f"configuration has {len(old.stations)} stations, {len(old.sensors())} sensors); "
            + keeps
        )
    orphaned = sorted(set(recent) - set(new.sensors()))
    if orphaned:
        return (
            f"{path}: reload refused: it drops sensors {_listed(orphaned)}, which delivered "
            f"readings in the last {RECENT_MS // 86_400_000} days (their readings would be "
            "refused from now on); " + keeps
        )
    return None


def emptiness_warning(site: SiteConfig) -> str | None:
    """What ``config check`` says of a file that would watch nothing."""
    if site.sensors():
        return None
    return (
        "no stations with sensors: this file watches nothing, and as a reload of a running "
        "site it is refused (docs/live-service.md)"
    )
