"""The site-log detections of issue 21 part 2 do not depend on arrival order or restarts.

Paperwork (analytics/paperwork.py), buffers (analytics/buffers.py), plan
approval (analytics/plan_approval.py), revegetation (analytics/revegetation.py)
and the per-area phase inspections (analytics/inspection_phase.py) read the
site log in event time: rows delivered in any order, or a snapshot and restore
at any point between them, give the same alerts and duties as the rows in order.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from analytics.engine import Engine
from analytics.events import SiteLogEntry
from siltwatch.config import Area, ReceivingWater, SiteConfig, load_site
from tests.analytics.site_log_helpers import EXAMPLES, feed, keeps_paperwork, log, t

END = t("2027-08-01T00:00-04:00")


def _with_shore(site: SiteConfig) -> SiteConfig:
    shore = Area.model_validate(
        {"id": "shore", "acres": 0.1, "slope_pct": 3, "distance_to_water_ft": 20}
    )
    trout = ReceivingWater.model_validate({"id": "rocky-br", "class": "trout_stream"})
    return site.model_copy(
        update={
            "areas": [*site.areas, shore],
            "receiving_waters": [*site.receiving_waters, trout],
        }
    )


GEORGE = keeps_paperwork(_with_shore(load_site(EXAMPLES / "lake-george-site.toml")))
LURE = keeps_paperwork(_with_shore(load_site(EXAMPLES / "lake-lure-site.toml")))

ROWS: dict[str, list[SiteLogEntry]] = {
    "george": [
        log("2026-06-01T09:00-04:00", "plan_on_site", detail="trailer"),
        log("2026-06-03T10:00-04:00", "cleared", "north-cut"),
        log("2026-06-03T11:00-04:00", "cleared", "shore"),
        log("2026-06-05T09:00-04:00", "certification", detail="Ruiz Excavating LLC"),
        log("2026-06-10T15:00-04:00", "permanent_cover", "pad-b"),
        log("2026-06-20T15:00-04:00", "permanent_cover", "shore"),
        log("2026-07-01T08:00-04:00", "seeded", "north-cut"),
    ],
    "lure": [
        log("2026-06-01T09:00-04:00", "plan_approved", detail="expires 2026-09-30"),
        log("2026-06-02T08:00-04:00", "graded", "lot-1"),
        log("2026-06-02T09:00-04:00", "graded", "shore"),
        log("2026-06-03T10:00-04:00", "temporary_cover", "drive"),
        log("2026-06-04T10:00-04:00", "notice", detail="start_of_development"),
        log("2026-06-05T10:00-04:00", "plan_on_site", detail="job box"),
        log("2026-10-05T10:00-04:00", "plan_approved", detail="expires 2027-06-30"),
    ],
}
SITES = {"george": GEORGE, "lure": LURE}


def outputs(engine: Engine) -> tuple[list[str], list[str]]:
    alerts = [a.model_dump_json() for a in engine.alerts()]
    duties = [d.model_dump_json() for d in engine.duties()]
    return sorted(alerts), sorted(duties)


def in_order(name: str) -> tuple[list[str], list[str]]:
    engine = feed(Engine(SITES[name]), ROWS[name])
    engine.finish(END)
    return outputs(engine)


EXPECTED = {name: in_order(name) for name in SITES}


def test_the_rows_in_order_raise_what_the_detections_are_for() -> None:
    george_alerts = " ".join(EXPECTED["george"][0])
    assert "paperwork_missing" in george_alerts and "buffer_disturbed" in george_alerts
    assert "revegetation" in " ".join(EXPECTED["george"][1])
    lure_alerts = " ".join(EXPECTED["lure"][0])
    assert "plan_expired" in lure_alerts and "buffer_disturbed" in lure_alerts
    assert "shore:graded" in " ".join(EXPECTED["lure"][1])


@settings(max_examples=25, deadline=None)
@given(name=st.sampled_from(sorted(SITES)), data=st.data())
def test_any_arrival_order_gives_the_same_alerts_and_duties(name: str, data: st.DataObject) -> None:
    rows = data.draw(st.permutations(ROWS[name]))
    engine = feed(Engine(SITES[name]), rows)
    engine.finish(END)
    assert outputs(engine) == EXPECTED[name]


@settings(max_examples=25, deadline=None)
@given(name=st.sampled_from(sorted(SITES)), cut=st.integers(0, 7))
def test_a_restart_between_any_two_rows_changes_nothing(name: str, cut: int) -> None:
    rows = ROWS[name]
    before = feed(Engine(SITES[name]), rows[:cut])
    if cut:
        before.advance_to(rows[cut - 1].t)
    after = feed(Engine.restore(SITES[name], before.snapshot()), rows[cut:])
    after.finish(END)
    assert outputs(after) == EXPECTED[name]
