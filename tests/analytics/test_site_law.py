"""The law, exactly: each rule that was wrong, with deadlines computed here by hand.

Written from the seeds, not from the output (issue 21): the 48-hour notices only
for the milestones Lake George §148-12 A and Big Flats 17.37.110 A list; the
Lake George 10-day clock of §148-11 I(3)(e)[1],[2] (resumed work ends it, each
stop starts a new one, 7 days without activity start it by themselves);
§148-11 only for major projects inside the Lake George Park; revegetation
(§148-11 I(3)(e)[3][c]) from the area's completion, by seeding; and Lake Lure
96.08(B)(5) from the completion of construction or development.

Both example sites are in America/New_York: EDT is UTC-4, EST UTC-5 (2026: DST
ends Sun 11-01, begins Sun 03-08; 2027: begins Sun 03-14). "N days" ends at the
end of the Nth local day. Lake George areas: north-cut (22 % slope), pad-b
(flat, 900 ft from water), stockpile (320 ft from water); Lake Lure: lot-1, drive.
"""

from __future__ import annotations

import random
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from analytics.engine import Engine
from analytics.events import SiteLogEntry
from siltwatch.applicability import applicability, scope_warnings
from siltwatch.config import SiteConfig, SiteInfo
from siltwatch.schema import Alert
from tests.analytics.site_log_helpers import EXAMPLES, alerts, duties, iso, log, restarted, run, t

# --- 1. notices: only the eight milestones the law lists (§148-12 A; 17.37.110 A) --------


def test_milestones_the_law_does_not_list_need_no_notice(george: SiteConfig) -> None:
    """Storm drainage and construction completed are not among §148-12 A(1)-(8)."""
    engine = run(
        george,
        [
            log("2026-06-10T09:00-04:00", "milestone", detail="storm_drainage_completed"),
            log("2026-06-20T09:00-04:00", "milestone", detail="construction_completed"),
        ],
        end="2026-06-21T00:00-04:00",
    )
    assert alerts(engine, "notice_missing") == []


def test_final_landscaping_and_landscaping_established_need_a_notice(
    george: SiteConfig,
) -> None:
    """§148-12 A(7) and (8): both milestones exist and are checked."""
    engine = run(
        george,
        [
            log("2026-09-01T09:00-04:00", "milestone", detail="final_landscaping_completed"),
            log("2027-06-01T09:00-04:00", "milestone", detail="landscaping_established"),
        ],
        end="2027-06-02T00:00-04:00",
    )
    found = alerts(engine, "notice_missing")
    assert [a.subject for a in found] == ["final_landscaping_completed", "landscaping_established"]
    assert all(a.rule == "Lake George §148-12 A" for a in found)
    assert found[0].opened_at == iso("2026-09-01T13:00Z")


def test_a_notice_exactly_48_hours_before_across_the_dst_end_is_in_time(
    george: SiteConfig,
) -> None:
    """Notice Sat 2026-10-31 10:00 EDT (14:00 UTC); rough grading Mon 11-02 09:00 EST
    (14:00 UTC): 47 h on the wall clock, exactly 48 h of time -- "at least 48 hours".
    A notice one minute later is too late."""

    def missing_notices(notice_at: str) -> list[Alert]:
        milestone = log("2026-11-02T09:00-05:00", "milestone", detail="rough_grading_completed")
        notice = log(notice_at, "notice", detail="rough_grading_completed")
        return alerts(
            run(george, [notice, milestone], end="2026-11-03T00:00-05:00"), "notice_missing"
        )

    assert missing_notices("2026-10-31T10:00-04:00") == []
    (alert,) = missing_notices("2026-10-31T10:01-04:00")
    assert alert.evidence["needed_by"] == "2026-10-31T14:00:00Z"


# --- 2. the Lake George 10-day clock (§148-11 I(3)(e)[1],[2]) -----------------------------


def test_resumed_work_ends_the_duty_and_the_next_stop_starts_a_new_one(
    george: SiteConfig,
) -> None:
    """pad-b logged inactive Mon 06-01 17:00 EDT, active 06-04 to 06-12, inactive again
    Mon 06-15 17:00 EDT. The first duty (due end of 06-11) ends at 06-04 08:00 (work
    resumed): no alert on 06-12, a logged work day. The second is due at the end of the
    10th day after 06-15, 06-25: 06-26 00:00 EDT = 04:00 UTC."""
    rows = [log("2026-06-01T17:00-04:00", "inactive", "pad-b")]
    rows += [log(f"2026-06-{d:02d}T08:00-04:00", "active", "pad-b") for d in range(4, 13)]
    rows.append(log("2026-06-15T17:00-04:00", "inactive", "pad-b"))
    engine = run(george, rows, end="2026-06-27T00:00-04:00")
    first, second = duties(engine, "stabilization", "inactive_area")
    assert first.created_at == iso("2026-06-01T21:00Z")
    assert first.due_at == iso("2026-06-12T04:00Z")
    assert first.completed_at == iso("2026-06-04T12:00Z")
    assert second.created_at == iso("2026-06-15T21:00Z")
    assert second.due_at == iso("2026-06-26T04:00Z")
    (alert,) = alerts(engine, "stabilization_overdue")  # only the second, never covered
    assert alert.subject == second.id and alert.opened_at == iso("2026-06-26T04:00Z")
    assert "2026-06-15 17:00" in alert.message


def test_seven_days_without_activity_start_the_duty_by_themselves(george: SiteConfig) -> None:
    """pad-b active Mon 06-01 10:00 EDT, then nothing: at 06-08 10:00 EDT (14:00 UTC) it
    is no longer an active construction area; the duty is due 10 days after the last
    activity, at the end of 06-11 = 06-12 04:00 UTC, and its alert names 06-01."""
    rows = [log("2026-06-01T10:00-04:00", "active", "pad-b")]
    engine = run(george, rows, end="2026-06-13T00:00-04:00")
    (duty,) = duties(engine, "stabilization", "inactive_area")
    assert duty.created_at == iso("2026-06-08T14:00Z")
    assert duty.due_at == iso("2026-06-12T04:00Z")
    assert duty.rule == "Lake George §148-11 I(3)(e)[2]"
    (alert,) = alerts(engine, "stabilization_overdue")
    assert alert.opened_at == iso("2026-06-12T04:00Z")
    assert "last substantial activity (2026-06-01 10:00 EDT" in alert.message
    assert alert.evidence["last_activity"] == "2026-06-01T14:00:00Z"


def test_activity_exactly_seven_days_later_keeps_the_area_active(george: SiteConfig) -> None:
    """Active 06-01 10:00 and 06-08 10:00 EDT: "within the past seven calendar days" still
    holds at exactly 7 days, so no duty then; the next starts 06-15 10:00 EDT."""
    rows = [
        log("2026-06-01T10:00-04:00", "active", "pad-b"),
        log("2026-06-08T10:00-04:00", "active", "pad-b"),
    ]
    engine = run(george, rows, end="2026-06-16T00:00-04:00")
    (duty,) = duties(engine, "stabilization", "inactive_area")
    assert duty.created_at == iso("2026-06-15T14:00Z")
    assert duty.due_at == iso("2026-06-19T04:00Z")  # end of 06-18, 10 days after 06-08


def test_the_idle_clock_across_the_dst_end(george: SiteConfig) -> None:
    """Active Sun 2026-10-25 12:00 EDT (16:00 UTC): seven calendar days later is Sun 11-01
    12:00 EST = 17:00 UTC (a 169-hour week); due at the end of 11-04, 11-05 05:00 UTC."""
    engine = run(
        george, [log("2026-10-25T12:00-04:00", "active", "pad-b")], end="2026-11-06T00:00-05:00"
    )
    (duty,) = duties(engine, "stabilization", "inactive_area")
    assert duty.created_at == iso("2026-11-01T17:00Z")
    assert duty.due_at == iso("2026-11-05T05:00Z")


def test_a_covered_area_does_not_idle_into_a_duty(george: SiteConfig) -> None:
    rows = [
        log("2026-06-01T10:00-04:00", "active", "pad-b"),
        log("2026-06-03T10:00-04:00", "temporary_cover", "pad-b"),
    ]
    engine = run(george, rows, end="2026-06-20T00:00-04:00")
    assert duties(engine, "stabilization", "inactive_area") == []


# --- 3. major projects inside the Lake George Park (§148-11 A, E, I(3)) ------------------

ROWS = [
    ("2026-06-01T10:00-04:00", "cleared", "north-cut"),
    ("2026-06-02T17:00-04:00", "inactive", "pad-b"),
    ("2026-06-05T10:00-04:00", "completed", "north-cut"),
]


def _site(george: SiteConfig, **info: object) -> SiteConfig:
    return george.model_copy(update={"site": george.site.model_copy(update=info)})


def _stabilization(site: SiteConfig) -> list[str]:
    engine = run(site, [log(*r) for r in ROWS], end="2026-06-30T00:00-04:00")
    return sorted(d.reason for d in duties(engine, "stabilization"))


def test_a_major_project_in_the_park_gets_the_three_duties(george: SiteConfig) -> None:
    assert _stabilization(george) == ["exposed_24h", "inactive_area", "revegetation"]


def test_a_minor_project_gets_none_of_the_major_project_duties(george: SiteConfig) -> None:
    site = _site(george, project="minor")
    assert _stabilization(site) == []
    (line,) = [x for x in applicability(site) if x.startswith("ny-lake-george")]
    assert "project minor" in line and "stabilization.inactive_days (a minor project" in line


def test_a_site_outside_the_park_gets_no_148_11_duties(george: SiteConfig) -> None:
    site = _site(george, in_lake_george_park=False)
    assert _stabilization(site) == []
    (line,) = [x for x in applicability(site) if x.startswith("ny-lake-george")]
    assert "outside the Lake George Park" in line and "§148-6 D" in line


def test_a_site_that_does_not_say_its_class_is_major_with_a_warning(george: SiteConfig) -> None:
    site = _site(george, project=None)
    assert _stabilization(site) == ["exposed_24h", "inactive_area", "revegetation"]
    assert any("treated as a major project" in w for w in scope_warnings(site))
    assert not any("treated as a major project" in w for w in scope_warnings(george))


def test_config_check_says_why_the_lake_george_pack_applies_and_still_passes(
    tmp_path: Path,
) -> None:
    """A minor project outside the Park: config check exits 0 and names what is withheld."""
    text = (EXAMPLES / "lake-george-site.toml").read_text(encoding="utf-8")
    assert 'project = "major"' in text
    path = tmp_path / "minor.toml"
    path.write_text(text.replace('project = "major"', 'project = "minor"'), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "app.cli", "config", "check", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    (line,) = [x for x in done.stdout.splitlines() if x.startswith("  pack ny-lake-george")]
    assert "inside the Lake George Park" in line and "project minor" in line
    assert "5,000 sq ft exemption (Lake George §148-7 C)" in line
    assert "not applied here: cover.cold_season (a minor project" in line


def test_the_project_class_is_described_as_148_11_e() -> None:
    description = SiteInfo.model_fields["project"].description or ""
    assert "§148-11 E" in description and "§148-7" not in description


# --- 4. revegetation (§148-11 I(3)(e)[3][c]) ---------------------------------------------


def test_revegetation_runs_from_completion_and_only_seeding_completes_it(
    george: SiteConfig,
) -> None:
    """pad-b cleared 06-03, its work completed Thu 06-25 16:00 EDT: the 10th day is 07-05
    (across the month end), ending 07-06 00:00 EDT = 04:00 UTC. Plastic sheeting on 06-26
    does not complete it; seeding on 07-02 does."""
    rows = [
        log("2026-06-03T10:00-04:00", "cleared", "pad-b"),
        log("2026-06-25T16:00-04:00", "completed", "pad-b"),
        log("2026-06-26T09:00-04:00", "temporary_cover", "pad-b", "plastic sheeting"),
        log("2026-07-02T09:00-04:00", "seeded", "pad-b", "rye and straw mulch"),
    ]
    engine = run(george, rows, end="2026-07-10T00:00-04:00")
    (duty,) = duties(engine, "stabilization", "revegetation")
    assert duty.created_at == iso("2026-06-25T20:00Z")
    assert duty.due_at == iso("2026-07-06T04:00Z")
    assert duty.completed_at == iso("2026-07-02T13:00Z")
    assert alerts(engine, "stabilization_overdue") == []


def test_revegetation_is_overdue_under_plastic_alone(george: SiteConfig) -> None:
    rows = [
        log("2026-06-03T10:00-04:00", "cleared", "pad-b"),
        log("2026-06-25T16:00-04:00", "completed", "pad-b"),
        log("2026-06-26T09:00-04:00", "temporary_cover", "pad-b", "plastic sheeting"),
    ]
    engine = run(george, rows, end="2026-07-10T00:00-04:00")
    (alert,) = alerts(engine, "stabilization_overdue")
    assert alert.opened_at == iso("2026-07-06T04:00Z")
    assert alert.rule == "Lake George §148-11 I(3)(e)[3][c]"


def test_clearing_alone_or_completion_without_clearing_starts_no_revegetation(
    george: SiteConfig,
) -> None:
    rows = [
        log("2026-06-03T10:00-04:00", "cleared", "pad-b"),
        log("2026-06-05T10:00-04:00", "completed", "stockpile"),
    ]
    engine = run(george, rows, end="2026-07-10T00:00-04:00")
    assert duties(engine, "stabilization", "revegetation") == []


def test_the_24_hour_duty_is_still_completed_by_any_cover(george: SiteConfig) -> None:
    """§148-11 I(3)(e)[3][b] accepts plastic: north-cut (22 %) cleared 06-03 10:00 EDT,
    due 06-04 14:00 UTC, covered with plastic 06-03 18:00 EDT."""
    rows = [
        log("2026-06-03T10:00-04:00", "cleared", "north-cut"),
        log("2026-06-03T18:00-04:00", "temporary_cover", "north-cut", "plastic sheeting"),
    ]
    engine = run(george, rows, end="2026-06-10T00:00-04:00")
    (duty,) = duties(engine, "stabilization", "exposed_24h")
    assert duty.due_at == iso("2026-06-04T14:00Z")
    assert duty.completed_at == iso("2026-06-03T22:00Z")


# --- 6. Lake Lure 96.08(B)(5): from the completion of construction or development ---------


def _hqw(lure: SiteConfig, **overrides: object) -> SiteConfig:
    areas = [a.model_copy(update={"hqw_zone": a.id == "lot-1"}) for a in lure.areas]
    return lure.model_copy(update={"areas": areas, "rule_overrides": overrides})


def test_grading_in_an_hqw_zone_runs_the_96_07_d_clock_without_the_hqw_citation(
    lure: SiteConfig,
) -> None:
    engine = run(
        _hqw(lure), [log("2027-03-01T10:00-05:00", "graded", "lot-1")], end="2027-03-02T00:00-05:00"
    )
    (duty,) = duties(engine, "stabilization", "permanent_cover")
    assert duty.rule == "Lake Lure 96.07(D)"


def test_an_hqw_areas_completion_starts_the_60_day_bound(lure: SiteConfig) -> None:
    """lot-1 (HQW) completed Mon 2027-03-01 10:00 EST: 15 working days are 03-02..05,
    08..12, 15..19, 22: due at the end of Mon 03-22 = 03-23 00:00 EDT = 04:00 UTC (60
    calendar days, 04-30, is longer). drive (not HQW) completed gets nothing."""
    rows = [
        log("2027-03-01T10:00-05:00", "completed", "lot-1"),
        log("2027-03-01T10:00-05:00", "completed", "drive"),
    ]
    engine = run(_hqw(lure), rows, end="2027-03-02T00:00-05:00")
    (duty,) = duties(engine, "stabilization", "permanent_cover")
    assert duty.subject == "lot-1"
    assert duty.due_at == iso("2027-03-23T04:00Z")
    assert duty.rule == "Lake Lure 96.08(B)(5)"


def test_construction_completed_creates_the_hqw_duty(lure: SiteConfig) -> None:
    """The milestone starts the clock for every HQW area not yet permanently covered; with
    the override off, an area's own completion does not."""
    rows = [
        log("2027-03-01T10:00-05:00", "completed", "lot-1"),
        log("2027-03-08T10:00-05:00", "milestone", detail="construction_completed"),
    ]
    site = _hqw(lure, **{"cover.hqw_from_area_completed": False})
    engine = run(site, rows, end="2027-03-09T00:00-05:00")
    (duty,) = duties(engine, "stabilization", "permanent_cover")
    assert duty.created_at == iso("2027-03-08T15:00Z")
    # 15 working days from Mon 03-08: 03-09..12, 15..19, 22..26, 29: end of 03-29 (EDT).
    assert duty.due_at == iso("2027-03-30T04:00Z")
    assert duty.rule == "Lake Lure 96.08(B)(5)"
    covered = run(
        site,
        [
            log("2027-03-05T10:00-05:00", "permanent_cover", "lot-1"),
            log("2027-03-08T10:00-05:00", "milestone", detail="construction_completed"),
        ],
        end="2027-03-09T00:00-05:00",
    )
    assert duties(covered, "stabilization", "permanent_cover") == []


# --- arrival order and restarts do not change what the clocks say --------------------------

START = t("2026-06-01T00:00-04:00")
HOUR = 3_600_000
EVENTS = ["active", "inactive", "cleared", "disturbed", "completed", "seeded", "temporary_cover"]
ROW = st.tuples(
    st.integers(min_value=0, max_value=40 * 24),  # hours after 06-01 00:00 EDT
    st.sampled_from(EVENTS),
    st.sampled_from(["north-cut", "pad-b", "stockpile"]),
)


def _outputs(engine: Engine) -> tuple[list[str], list[str]]:
    return (
        [d.model_dump_json() for d in engine.duties()],
        [a.model_dump_json() for a in engine.alerts()],
    )


@settings(max_examples=40, deadline=None, database=None)
@given(
    rows=st.lists(ROW, min_size=1, max_size=25),
    seed=st.integers(0, 2**16),
    cut=st.integers(min_value=0, max_value=40 * 24),
)
def test_the_site_log_clocks_do_not_depend_on_arrival_order_or_a_restart(
    george: SiteConfig, rows: list[tuple[int, str, str]], seed: int, cut: int
) -> None:
    """The same rows fed in any order give the same duties and alerts, and so does an
    engine snapshotted and restored at any hour between them (the idle timers included)."""
    entries = [SiteLogEntry(START + h * HOUR, e, a, "Dana Ruiz", "") for h, e, a in rows]
    end = "2026-07-20T00:00-04:00"
    whole = run(george, sorted(entries, key=lambda x: x.t), end)
    shuffled = entries[:]
    random.Random(seed).shuffle(shuffled)
    assert _outputs(run(george, shuffled, end)) == _outputs(whole)
    when = datetime.fromtimestamp((START + cut * HOUR) / 1000, tz=UTC).isoformat()
    one, two = restarted(george, sorted(entries, key=lambda x: x.t), end, when)
    assert _outputs(two) == _outputs(one)


def test_an_hqw_area_opened_again_after_permanent_cover_is_owed_cover_again(
    lure: SiteConfig,
) -> None:
    """lot-1 (HQW) covered 03-01, disturbed again 03-03: construction completed Mon 03-08
    10:00 EST starts its 96.08(B)(5) clock (due the end of 03-29 EDT)."""
    rows = [
        log("2027-03-01T10:00-05:00", "permanent_cover", "lot-1"),
        log("2027-03-03T10:00-05:00", "disturbed", "lot-1"),
        log("2027-03-08T10:00-05:00", "milestone", detail="construction_completed"),
    ]
    engine = run(_hqw(lure), rows, end="2027-03-09T00:00-05:00")
    (duty,) = duties(engine, "stabilization", "permanent_cover")
    assert duty.due_at == iso("2027-03-30T04:00Z") and duty.rule == "Lake Lure 96.08(B)(5)"
