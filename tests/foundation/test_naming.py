"""People's names for what alerts and duties are about (siltwatch/naming.py)."""

from __future__ import annotations

from pathlib import Path
from zoneinfo import ZoneInfo

from analytics import inspection_record
from siltwatch.config import load_site
from siltwatch.naming import alert_place, day_time, duty_name, names_of, span, thing_name
from siltwatch.schema import Alert

ROOT = Path(__file__).resolve().parents[2]
NY = ZoneInfo("America/New_York")


def test_the_site_file_names_areas_stations_and_the_site() -> None:
    names = names_of(load_site(ROOT / "examples" / "lake-george-site.toml"))
    assert names["stockpile"] == "Topsoil stockpile by West Brook"
    assert names["lg-route9n"] == "Route 9N mixed-use"


def test_duties_read_as_people_say_them() -> None:
    names = {"stockpile": "Topsoil stockpile by West Brook", "lg-route9n": "Route 9N mixed-use"}
    assert duty_name("stabilization", "exposed_24h", "stockpile", names, NY) == (
        "stabilization of Topsoil stockpile by West Brook"
    )
    assert duty_name("inspection", "storm", "gauge-yard@2026-05-08T12:25:00Z", names, NY) == (
        "inspection after the storm of May 8 08:25"
    )
    assert duty_name("inspection", "routine", "lg-route9n", names, NY) == (
        "routine inspection of Route 9N mixed-use"
    )
    assert duty_name("inspection", "phase", "clearing_completed", names, NY) == (
        "inspection after clearing completed"
    )
    assert thing_name("outfall-a", names, NY) == "outfall-a"  # no name: the id as it is
    assert duty_name("inspection", "phase", "stockpile:graded", names, NY) == (
        "inspection after grading of Topsoil stockpile by West Brook"
    )
    assert duty_name("inspection", "phase", "stockpile:temporary_cover", names, NY) == (
        "inspection after temporary cover of Topsoil stockpile by West Brook"
    )
    # An area the site file does not name, or an event without words: the key as it is.
    assert thing_name("pad-z:graded", names, NY) == "pad-z:graded"
    assert thing_name("stockpile:milestone", names, NY) == "stockpile:milestone"


def test_times_carry_their_date_in_the_sites_zone() -> None:
    assert day_time("2026-05-05T16:26:00Z", NY) == "May 5 12:26"
    assert span("2026-05-05T16:26:00Z", "2026-05-06T00:58:00Z", NY) == "May 5 12:26-20:58"
    assert span("2026-05-05T19:00:00Z", "2026-05-10T10:00:00Z", NY) == (
        "May 5 15:00 to May 10 06:00"
    )


def test_an_inspection_after_an_event_is_overdue_after_it_not_at_it() -> None:
    names = {"drive": "Access drive", "stockpile": "Topsoil stockpile"}

    def overdue(reason: str, subject: str, kind: str = "inspection_overdue") -> Alert:
        return Alert.model_validate(
            {"id": "al-1", "kind": kind, "subject": "du-1", "severity": "critical",
             "opened_at": "2026-05-10T04:00:00Z", "resolved_at": None, "escalations": [],
             "rule": "r", "message": "m",
             "evidence": {"reason": reason, "subject": subject,
                          "due_at": "2026-05-10T04:00:00Z"}}
        )  # fmt: skip

    assert alert_place(overdue("phase", "drive:graded"), names, NY) == (
        "after grading of Access drive"
    )
    assert alert_place(overdue("storm", "gauge-yard@2026-05-08T12:25:00Z"), names, NY) == (
        "after the storm of May 8 08:25"
    )
    assert alert_place(overdue("routine", "site-1"), names, NY) == "at site-1"
    stabilization = overdue("exposed_24h", "stockpile", "stabilization_overdue")
    assert alert_place(stabilization, names, NY) == "at Topsoil stockpile"


def test_the_inspection_records_are_named_in_words() -> None:
    assert thing_name(inspection_record.SUBJECT, {}, NY) == "the inspection records"
