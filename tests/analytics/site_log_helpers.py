"""The example sites run from their site log, for the tests that compute deadlines by hand.

Times are written as ISO text with their offset, as a person reads them off a
calendar; an engine is fed a site log (and inspections) and run to an end time.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

import pytest

from analytics.engine import Engine
from analytics.events import Inspection, SiteLogEntry
from analytics.timeutil import to_ms
from siltwatch.config import SiteConfig
from siltwatch.schema import Alert, Duty

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def t(text: str) -> int:
    """An ISO time with its offset, as epoch ms."""
    return to_ms(datetime.fromisoformat(text))


def iso(text: str) -> datetime:
    return datetime.fromisoformat(text)


def log(when: str, event: str, area: str | None = None, detail: str = "") -> SiteLogEntry:
    """A row of the site log, recorded by Dana Ruiz."""
    return SiteLogEntry(t(when), event, area, "Dana Ruiz", detail)


def feed(
    engine: Engine, entries: Sequence[SiteLogEntry], inspections: Sequence[Inspection] = ()
) -> Engine:
    for entry in entries:
        engine.feed_site_log(entry)
    for inspection in inspections:
        engine.feed_inspection(inspection)
    return engine


def run(
    site: SiteConfig,
    entries: Sequence[SiteLogEntry],
    end: str,
    inspections: Sequence[Inspection] = (),
) -> Engine:
    """An engine fed ``entries`` and ``inspections``, run to ``end``."""
    engine = feed(Engine(site), entries, inspections)
    engine.finish(t(end))
    return engine


def restarted(
    site: SiteConfig,
    entries: Sequence[SiteLogEntry],
    end: str,
    at: str,
    inspections: Sequence[Inspection] = (),
) -> tuple[Engine, Engine]:
    """The engine of :func:`run`, and one fed the same but advanced to ``at``,
    snapshotted and restored there: what is dated up to ``at`` is fed before the
    snapshot, the rest after it."""
    whole = run(site, entries, end, inspections)
    cut = t(at)
    before = feed(
        Engine(site), [e for e in entries if e.t <= cut], [i for i in inspections if i.t <= cut]
    )
    before.advance_to(cut)
    after = feed(
        Engine.restore(site, before.snapshot()),
        [e for e in entries if e.t > cut],
        [i for i in inspections if i.t > cut],
    )
    after.finish(t(end))
    return whole, after


def duties(engine: Engine, kind: str, reason: str | None = None) -> list[Duty]:
    """The engine's duties of ``kind`` (and ``reason``, if given)."""
    return [d for d in engine.duties() if d.kind == kind and reason in (None, d.reason)]


def alerts(engine: Engine, kind: str) -> list[Alert]:
    return [a for a in engine.alerts() if a.kind == kind]


def officers(site: SiteConfig) -> set[object]:
    return {c for c in site.contacts if c.role == "officer"}


def keeps_paperwork(site: SiteConfig) -> SiteConfig:
    """The site with ``paperwork_in_site_log = true``: its log keeps the paperwork rows, so
    a missing one means missing paperwork (without it the paperwork checks stay off)."""
    return site.model_copy(
        update={"site": site.site.model_copy(update={"paperwork_in_site_log": True})}
    )


def keeping_paperwork(example: str) -> object:
    """A module-scoped fixture overriding the example site ``example`` (tests/analytics/
    conftest.py) with :func:`keeps_paperwork`'s: ``george = keeping_paperwork("george")``
    in a test module makes its tests' ``george`` keep the paperwork in its log."""

    @pytest.fixture(scope="module", name=example)
    def site(request: pytest.FixtureRequest) -> SiteConfig:
        return keeps_paperwork(request.getfixturevalue(example))

    return site
