"""Violations from the site log, with deadlines computed here by hand.

The Lake George example site (areas north-cut, pad-b, stockpile), and the same
site under the Big Flats pack. America/New_York: EDT is UTC-4, EST (from
2026-11-01) UTC-5. "N days" ends at the end of the Nth local day; a week of a
violation is 7 days at the same local wall time.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from alerts.routing import NoticeEvent, announced, route
from ingest.recordings.formats import RecordingError, read_site_log
from siltwatch.config import SiteConfig
from siltwatch.schema import SiteLogRecord
from siltwatch.vocabulary import SiteEvent
from tests.analytics.site_log_helpers import alerts, duties, iso, log, officers, restarted, run

AREAS = ["north-cut", "pad-b", "stockpile"]


# --- Lake George ---------------------------------------------------------------------------


def test_a_notice_of_violation_its_remedy_appeal_and_the_work_it_stops(
    george: SiteConfig,
) -> None:
    """§148-14 B, §148-12 A. Served Tue 06-09 10:00 EDT (14:00Z), remedy by 06-19, which
    ends 06-20 00:00 EDT = 04:00Z; appeal within 15 days: 06-24 ends 06-25 04:00Z.
    pad-b graded 06-10 08:00 (12:00Z) and active 06-11 while open: one work episode;
    the cover of north-cut is stabilization. Corrected Mon 06-22 16:00 EDT (20:00Z):
    one full week (06-16 10:00) and not two (06-23 10:00)."""
    engine = run(
        george,
        [
            log(
                "2026-06-09T10:00-04:00",
                "violation",
                "north-cut",
                "NOV-2026-03 remedy by 2026-06-19 silt fence down at outfall A",
            ),
            log("2026-06-10T08:00-04:00", "graded", "pad-b"),
            log("2026-06-10T09:00-04:00", "temporary_cover", "north-cut"),
            log("2026-06-11T08:00-04:00", "active", "pad-b"),
            log("2026-06-22T16:00-04:00", "violation_corrected", detail="NOV-2026-03"),
        ],
        end="2026-07-01T00:00-04:00",
    )
    (nov,) = alerts(engine, "violation_open")
    assert nov.subject == "NOV-2026-03" and nov.severity == "critical"
    assert nov.opened_at == iso("2026-06-09T14:00Z")
    assert nov.resolved_at == iso("2026-06-22T20:00Z")
    assert nov.rule == "Lake George §148-14 B"
    assert nov.evidence["weeks"] == 1 and nov.evidence["violations"] is None
    assert nov.evidence["area"] == "north-cut"
    assert nov.evidence["remedy_due_at"] == "2026-06-20T04:00:00Z"
    assert nov.evidence["appeal_due_at"] == "2026-06-25T04:00:00Z"
    # The officer, who served it, hears it once: at its opening, not at its resolution.
    assert officers(george) <= set(
        route(george, NoticeEvent.OPENED, "2026-06-09T14:00:00Z", nov).recipients
    )
    assert not announced(NoticeEvent.RESOLVED, nov)

    (remedy,) = duties(engine, "remedy")
    assert (remedy.reason, remedy.subject) == ("notice_of_violation", "NOV-2026-03")
    assert remedy.created_at == iso("2026-06-09T14:00Z")
    assert remedy.due_at == iso("2026-06-20T04:00Z")
    assert remedy.completed_at == iso("2026-06-22T20:00Z")
    assert remedy.rule == "Lake George §148-14 B(1)(d)"
    (late,) = alerts(engine, "remedy_overdue")
    assert late.subject == remedy.id
    assert late.opened_at == iso("2026-06-20T04:00Z")
    assert late.resolved_at == iso("2026-06-22T20:00Z")
    assert officers(george) <= set(
        route(george, NoticeEvent.OPENED, "2026-06-20T04:00:00Z", late).recipients
    )

    (appeal,) = duties(engine, "appeal")
    assert appeal.reason == "notice_of_violation" and appeal.subject == "NOV-2026-03"
    assert appeal.due_at == iso("2026-06-25T04:00Z")
    assert appeal.completed_at == iso("2026-06-22T20:00Z")  # corrected: nothing to appeal
    assert appeal.rule == "Lake George §148-14 B(1)(f)"

    (work,) = alerts(engine, "work_during_violation")
    assert work.subject == "pad-b" and work.rule == "Lake George §148-12 A"
    assert work.opened_at == iso("2026-06-10T12:00Z")
    assert work.resolved_at == iso("2026-06-22T20:00Z")
    assert work.evidence["rows"] == 2 and work.evidence["violations"] == ["NOV-2026-03"]
    assert officers(george) <= set(
        route(george, NoticeEvent.OPENED, "2026-06-10T12:00:00Z", work).recipients
    )


def test_the_appeal_lapses_without_an_alert_and_a_late_remedy_stays_overdue_until_done(
    george: SiteConfig,
) -> None:
    """Served Wed 07-01 12:00 EDT, remedy by 07-10 (ends 07-11 04:00Z); the 15th day is
    07-16 (ends 07-17 04:00Z). Corrected Sat 07-18 09:00 EDT (13:00Z): after the appeal
    window, which is not completed by it; two full weeks (07-08, 07-15 12:00)."""
    engine = run(
        george,
        [
            log("2026-07-01T12:00-04:00", "violation", detail="V-9 remedy by 2026-07-10"),
            log("2026-07-18T09:00-04:00", "violation_corrected", detail="V-9 letter of 07-18"),
        ],
        end="2026-07-20T00:00-04:00",
    )
    (appeal,) = duties(engine, "appeal")
    assert appeal.due_at == iso("2026-07-17T04:00Z") and appeal.completed_at is None
    (remedy,) = duties(engine, "remedy")
    assert remedy.due_at == iso("2026-07-11T04:00Z")
    assert remedy.completed_at == iso("2026-07-18T13:00Z")
    (late,) = alerts(engine, "remedy_overdue")
    assert (late.opened_at, late.resolved_at) == (
        iso("2026-07-11T04:00Z"),
        iso("2026-07-18T13:00Z"),
    )
    # No alert for the lapsed appeal (the routine inspections' own alerts aside).
    assert not [a for a in engine.alerts() if a.subject == appeal.id]
    assert {a.kind for a in engine.alerts()} - {"inspection_overdue"} == {
        "violation_open",
        "remedy_overdue",
    }
    (nov,) = alerts(engine, "violation_open")
    assert nov.evidence["weeks"] == 2 and nov.evidence["area"] is None
    assert nov.resolved_at == iso("2026-07-18T13:00Z")


def test_a_correction_of_no_open_violation_and_a_repeat_change_nothing(george: SiteConfig) -> None:
    rows = [
        log("2026-06-01T09:00-04:00", "violation_corrected", detail="NOV-1"),
        log("2026-06-02T09:00-04:00", "violation", detail="NOV-1"),
        log("2026-06-03T09:00-04:00", "violation", detail="NOV-1 remedy by 2026-06-05"),
    ]
    engine = run(george, rows, end="2026-06-06T00:00-04:00")
    (nov,) = alerts(engine, "violation_open")
    assert nov.opened_at == iso("2026-06-02T13:00Z") and nov.resolved_at is None
    assert duties(engine, "remedy") == []  # the first service binds: it set no remedy day
    assert len(duties(engine, "appeal")) == 1


# --- Big Flats ------------------------------------------------------------------------------


def test_each_week_a_violation_continues_counts_as_another(flats: SiteConfig) -> None:
    """17.37.130 D. A stop-work order served Fri 10-23 09:00 EDT (13:00Z), no remedy day:
    weeks end 10-30 09:00 EDT (13:00Z) and, after the change to EST on 11-01, 11-06
    09:00 EST (14:00Z). Open at the end (11-10): 2 weeks, 3 violations. Big Flats has no
    appeal period in the seed: no appeal duty. Work (17.37.110 A, 17.37.130 B) on 10-26."""
    engine = run(
        flats,
        [
            log("2026-10-23T09:00-04:00", "violation", detail="SWO-7 stop work: no perimeter"),
            log("2026-10-26T10:00-04:00", "disturbed", "stockpile"),
        ],
        end="2026-11-10T00:00-05:00",
    )
    (nov,) = alerts(engine, "violation_open")
    assert nov.opened_at == iso("2026-10-23T13:00Z") and nov.resolved_at is None
    assert nov.rule == "Big Flats 17.37.130 A; Big Flats 17.37.130 D"
    assert nov.evidence["weeks"] == 2 and nov.evidence["violations"] == 3
    assert nov.evidence["as_of"] == "2026-11-06T14:00:00Z"  # the week's mark, DST-aware
    assert "3 separate violation(s) under Big Flats 17.37.130 D" in nov.message
    assert duties(engine, "appeal") == [] and duties(engine, "remedy") == []
    (work,) = alerts(engine, "work_during_violation")
    assert work.subject == "stockpile" and work.opened_at == iso("2026-10-26T14:00Z")
    assert work.rule == "Big Flats 17.37.110 A; 17.37.130 B" and work.resolved_at is None


def test_work_is_allowed_again_only_when_every_violation_is_corrected(flats: SiteConfig) -> None:
    engine = run(
        flats,
        [
            log("2026-06-01T09:00-04:00", "violation", detail="NOV-1"),
            log("2026-06-02T09:00-04:00", "violation", detail="NOV-2"),
            log("2026-06-03T09:00-04:00", "cleared", "pad-b"),
            log("2026-06-04T09:00-04:00", "violation_corrected", detail="NOV-1"),
            log("2026-06-05T09:00-04:00", "violation_corrected", detail="NOV-2"),
            log("2026-06-06T09:00-04:00", "graded", "pad-b"),  # after: fine
        ],
        end="2026-06-10T00:00-04:00",
    )
    (work,) = alerts(engine, "work_during_violation")
    assert work.evidence["violations"] == ["NOV-1", "NOV-2"]
    assert work.resolved_at == iso("2026-06-05T13:00Z")


def test_a_snapshot_mid_violation_gives_the_same_alerts_and_duties(george: SiteConfig) -> None:
    rows = [
        log("2026-06-09T10:00-04:00", "violation", "north-cut", "NOV-3 remedy by 2026-06-19 x"),
        log("2026-06-10T08:00-04:00", "graded", "pad-b"),
        log("2026-06-18T08:00-04:00", "active", "pad-b"),
        log("2026-06-30T16:00-04:00", "violation_corrected", detail="NOV-3"),
    ]
    whole, engine = restarted(
        george, rows, end="2026-07-10T00:00-04:00", at="2026-06-10T08:00-04:00"
    )
    assert engine.alerts() == whole.alerts()
    assert engine.duties() == whole.duties()
    (nov,) = alerts(whole, "violation_open")
    assert nov.evidence["weeks"] == 3  # 06-16, 06-23, 06-30 10:00: the timers survived
    assert alerts(whole, "remedy_overdue") and alerts(whole, "work_during_violation")


# --- the site log ---------------------------------------------------------------------------

GOOD_LOG = """time,event,area,by,detail
2026-06-09T10:00:00-04:00,violation,north-cut,Sam Okafor,NOV-2026-03 remedy by 2026-06-19 silt fence down
2026-06-09T11:00:00-04:00,violation,,Sam Okafor,SWO-7
2026-06-22T16:00:00-04:00,violation_corrected,,Dana Ruiz,NOV-2026-03 accepted by letter
"""

BAD_LOG = """time,event,area,by,detail
2026-06-09T10:00:00-04:00,violation,,Sam Okafor,
2026-06-09T10:00:00-04:00,violation,,Sam Okafor,NOV-1 remedy by 06/19/2026 fence
2026-06-09T10:00:00-04:00,violation,,Sam Okafor,NOV-1 remedy by 2026-02-30
2026-06-09T10:00:00-04:00,violation,,Sam Okafor,NOV/1 fence
2026-06-09T10:00:00-04:00,violation,south-cut,Sam Okafor,NOV-1
2026-06-22T16:00:00-04:00,violation_corrected,pad-b,Dana Ruiz,NOV-1
2026-06-22T16:00:00-04:00,violation_corrected,,Dana Ruiz,
"""


def test_violation_rows_in_the_site_log(tmp_path: Path) -> None:
    path = tmp_path / "log.csv"
    path.write_text(GOOD_LOG, encoding="utf-8")
    entries = read_site_log(path, AREAS)
    assert [(e.event, e.area, e.detail) for e in entries] == [
        ("violation", "north-cut", "NOV-2026-03 remedy by 2026-06-19 silt fence down"),
        ("violation", None, "SWO-7"),
        ("violation_corrected", None, "NOV-2026-03 accepted by letter"),
    ]
    # The wire model (MQTT, 'siltwatch log') checks the same rules.
    record = SiteLogRecord(
        site="lg-route9n",
        time=datetime.fromisoformat("2026-06-09T10:00-04:00"),
        event=SiteEvent.VIOLATION,
        by="Sam Okafor",
        detail="SWO-7",
    )
    assert record.area is None
    with pytest.raises(ValueError, match="remedy by"):
        SiteLogRecord(
            site="lg-route9n",
            time=datetime.fromisoformat("2026-06-09T10:00-04:00"),
            event=SiteEvent.VIOLATION,
            by="Sam Okafor",
            detail="NOV-1 remedy by soon",
        )


def test_bad_violation_rows_are_named_by_file_line_and_what_was_expected(tmp_path: Path) -> None:
    path = tmp_path / "log.csv"
    path.write_text(BAD_LOG, encoding="utf-8")
    with pytest.raises(RecordingError) as info:
        read_site_log(path, AREAS)
    f, areas = str(path), ", ".join(AREAS)
    assert info.value.lines == [
        f"{f}:2: column 'detail': event 'violation' names the violation: its id, optionally "
        "'remedy by YYYY-MM-DD', then what was found (e.g. 'NOV-2026-03 remedy by 2026-06-20 "
        "silt fence down at outfall A'); none given",
        f"{f}:3: column 'detail': event 'violation': 'remedy by' takes the remedy schedule's "
        "last day as YYYY-MM-DD (e.g. 2026-06-20); got '06/19/2026'",
        f"{f}:4: column 'detail': event 'violation': 'remedy by' takes the remedy schedule's "
        "last day as YYYY-MM-DD (e.g. 2026-06-20); got '2026-02-30'",
        f"{f}:5: column 'detail': event 'violation': the violation id 'NOV/1' must be 1 to 64 "
        "letters, digits, '.', '_' or '-', starting with a letter or digit (e.g. NOV-2026-03)",
        f"{f}:6: column 'area': 'south-cut' is not an area of the site (its areas: {areas})",
        f"{f}:7: column 'area': event 'violation_corrected' is about the whole site and names "
        "no area; got 'pad-b'",
        f"{f}:8: column 'detail': event 'violation_corrected' names the violation the town "
        "accepted as corrected (its id, as in its 'violation' row); none given",
    ]
