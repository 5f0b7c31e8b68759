"""People's names for what alerts and duties are about (siltwatch/naming.py)."""

from __future__ import annotations

from pathlib import Path
from zoneinfo import ZoneInfo

from siltwatch.config import load_site
from siltwatch.naming import day_time, duty_name, names_of, span, thing_name

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
