"""A year's report from the console (issue 24): the report takes up to 366 local days, the
site page's plots stay at 92; past either, the page says what it takes."""

from __future__ import annotations

from pathlib import Path

from tests.console.app_world import SID, World, make_world


def test_the_console_makes_the_report_of_a_year(tmp_path: Path) -> None:
    world = make_world(tmp_path, real_reports=True)
    client = world.login()
    report = client.get(f"/sites/{SID}/report?from=2025-05-12&to=2026-05-11")
    assert report.status_code == 200, report.text[:300]
    assert "2025-05-12 to 2026-05-11</title>" in report.text
    assert "<svg" in report.text
    too_long = client.get(f"/sites/{SID}/report?from=2025-05-10&to=2026-05-11")
    assert too_long.status_code == 400 and "choose at most 366 days at once" in too_long.text


def test_the_site_page_still_draws_at_most_92_days(world: World) -> None:
    client = world.login()
    assert client.get(f"/sites/{SID}?from=2026-02-09&to=2026-05-11").status_code == 200
    page = client.get(f"/sites/{SID}?from=2026-02-08&to=2026-05-11")
    assert page.status_code == 400 and "choose at most 92 days at once" in page.text
    assert client.get(f"/sites/{SID}?hours={93 * 24}").status_code == 400
