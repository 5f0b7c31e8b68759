"""The pages people read and the answers they give: overview, site page, an alert.

Over the Lake George week in a real SQLite store. An acknowledgement is what
the delivery worker reads back (``ConsoleBook.acknowledged``, alerts/acks.py),
so the tests read it there; a corrective action is both a note and a
site-log entry handed to the field desk.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path

from alerts.acks import Acknowledgement
from console.notes import NoteKind
from tests.console.app_world import INSPECTOR, OFFICER, OPERATOR, SID, VIEWER, World, make_world


def test_the_overview_shows_open_alerts_duties_station_health_and_last_readings(
    world: World,
) -> None:
    page = world.login().get("/").text
    assert "1 warning" not in page or "critical" in page
    assert "drain time</strong> at basin-a" in page
    assert "stabilization overdue</strong>" in page
    # Station health from the stations' last statuses: battery, disk, backlog, clock offset.
    assert (
        "12.43 V" in page and "8123 MB free" in page and "17 waiting" in page and "+0.4 s" in page
    )
    assert "offline" in page and "no status yet" in page  # down-1 went offline; up-1 never said
    # The last reading of each sensor, in the site's local time.
    assert "turb-down" in page and "2026-05-11 00:00 EDT" in page


def test_a_duty_alert_is_named_by_its_area_and_late_as_of_now(world: World) -> None:
    """No duty id in a heading; lateness counted to the console's now (the day after the
    week: 2026-05-12 16:00Z), not the "0 h overdue" frozen at the opening."""
    client = world.login()
    page = client.get("/").text
    assert "stabilization overdue</strong> at Topsoil stockpile by West Brook" in page
    assert "du-" not in page.split("stabilization overdue</strong>")[1][:200]
    assert "6.0 days overdue (due May 6 11:00)" in page and "0 h overdue" not in page
    duty_alert = next(
        a for a in world.console.store.alerts(SID) if a.kind == "stabilization_overdue"
    )
    alert_page = client.get(f"/sites/{SID}/alerts/{duty_alert.id}").text
    assert "stabilization overdue at Topsoil stockpile by West Brook</h1>" in alert_page


def test_the_site_page_opens_on_the_week_before_the_newest_reading(world: World) -> None:
    page = world.login().get(f"/sites/{SID}")
    assert page.status_code == 200
    # The newest reading is 2026-05-11 00:00 EDT: the 7 days before it, not the clock's week.
    assert "2026-05-04 to 2026-05-11 (local days)" in page.text
    assert page.text.count("<svg") >= 4, "turbidity, rain, basin level and trap fill plots"
    assert "Report (PDF)" in page.text


def test_a_chosen_window_and_a_bad_one(world: World) -> None:
    client = world.login()
    page = client.get(f"/sites/{SID}?from=2026-05-05&to=2026-05-06")
    assert "2026-05-05 to 2026-05-06 (local days)" in page.text
    bad = client.get(f"/sites/{SID}?from=2026-05-07&to=2026-05-06")
    assert bad.status_code == 400 and "is after" in bad.text
    assert client.get(f"/sites/{SID}?hours=lots").status_code == 400


def test_the_report_button_opens_the_windows_report_in_the_browser(world: World) -> None:
    client = world.login()
    html = client.get(f"/sites/{SID}/report?from=2026-05-04&to=2026-05-10")
    assert html.status_code == 200
    assert "report of lg-route9n 2026-05-04 .. 2026-05-10" in html.text
    assert html.headers["content-disposition"].startswith("inline;")  # shown, not downloaded
    pdf = client.get(f"/sites/{SID}/report?from=2026-05-04&to=2026-05-10&format=pdf")
    assert pdf.headers["content-type"] == "application/pdf" and pdf.content.startswith(b"%PDF")
    assert world.reports.asked[-1] == (SID, date(2026, 5, 4), date(2026, 5, 10))


def test_the_report_button_serves_the_inspectors_report(tmp_path: Path) -> None:
    world = make_world(tmp_path, real_reports=True)
    plume = world.plume_id()
    world.post_form(OPERATOR, f"/sites/{SID}/alerts/{plume}/acknowledge")
    report = world.login(VIEWER).get(f"/sites/{SID}/report?from=2026-05-04&to=2026-05-10")
    assert report.status_code == 200 and report.headers["content-type"].startswith("text/html")
    assert "Route 9N mixed-use" in report.text and "<svg" in report.text
    assert "Dana Ruiz" in report.text, "the acknowledgement recorded in the console is in it"
    assert "· generated 2026-05-12 12:00 EDT" in report.text  # the footer, on the console's clock


def test_the_alert_page_reads_as_evidence_citation_and_timeline(world: World) -> None:
    page = world.login(VIEWER).get(f"/sites/{SID}/alerts/{world.plume_id()}").text
    assert "26.7 NTU vs limit 33.7 (peak 170.6 vs 54.3)" in page  # the registry's "by how much"
    assert "peak downstream level</th><td>170.58 NTU" in page
    assert "Citation:</strong> site proxy for Lake George §148-9 B" in page
    assert "2026-05-05 12:56 EDT</span> <strong>opened as critical" in page
    assert "2026-05-05 20:58 EDT</span> <strong>resolved" in page
    assert "duration</th><td>8 h 32 min" in page
    assert 'id="acknowledge"' not in page, "a viewer is offered no Acknowledge button"


def test_the_operator_acknowledges_the_plume(world: World) -> None:
    plume = world.plume_id()
    response = world.post_form(OPERATOR, f"/sites/{SID}/alerts/{plume}/acknowledge")
    assert response.status_code == 303
    at_ms = int(world.clock() * 1000)
    assert world.book.acknowledged(SID, plume) == Acknowledgement(OPERATOR, at_ms, "console")
    assert (OPERATOR, "acknowledged", plume, "via console") in world.actions()
    page = world.login(VIEWER).get(f"/sites/{SID}/alerts/{plume}").text
    assert "Acknowledged by Dana Ruiz in the console at 2026-05-12 12:00 EDT" in page


def test_the_first_acknowledgement_stands(world: World) -> None:
    plume = world.plume_id()
    world.post_form(OPERATOR, f"/sites/{SID}/alerts/{plume}/acknowledge")
    world.clock.advance(600)
    again = world.post_form(OFFICER, f"/sites/{SID}/alerts/{plume}/acknowledge")
    assert again.headers["location"].endswith("done=already")
    ack = world.book.acknowledged(SID, plume)
    assert ack is not None and ack.by == OPERATOR
    assert [n.kind for n in world.book.notes(SID, plume)] == [NoteKind.ACKNOWLEDGED]


def test_a_viewer_cannot_acknowledge(world: World) -> None:
    plume = world.plume_id()
    response = world.post_form(VIEWER, f"/sites/{SID}/alerts/{plume}/acknowledge")
    assert response.status_code == 403
    assert "As viewer on lg-route9n you may not acknowledge" in response.text
    assert world.book.acknowledged(SID, plume) is None


def test_a_corrective_action_is_a_note_and_a_site_log_entry(world: World) -> None:
    plume = world.plume_id()
    text = "Replaced the silt fence at outfall A and added a second row of wattles."
    response = world.post_form(
        INSPECTOR, f"/sites/{SID}/alerts/{plume}/corrective-action", {"text": text}
    )
    assert response.status_code == 303
    assert world.handed_to_desk("log", "site_log") == {
        "time": "2026-05-12T16:00:00Z",
        "event": "corrective_action",
        "by": INSPECTOR,
        "detail": f"{plume}: {text}",
    }
    (note,) = world.book.notes(SID, plume)
    assert (note.kind, note.by, note.text) == (NoteKind.CORRECTIVE_ACTION, INSPECTOR, text)
    assert (INSPECTOR, "corrective_action", plume, text) in world.actions()
    page = world.login(VIEWER).get(f"/sites/{SID}/alerts/{plume}").text
    assert f'corrective action by {INSPECTOR}</strong>: <span class="note-text">{text}' in page


def test_a_refused_site_log_entry_is_shown_and_the_note_kept(world: World) -> None:
    plume = world.plume_id()
    world.desk.refuse = "the broker is unreachable"
    response = world.post_form(
        OPERATOR,
        f"/sites/{SID}/alerts/{plume}/corrective-action",
        {"text": "Swept the road."},
    )
    assert response.status_code == 200
    assert "the site log did not take it: the broker is unreachable" in response.text
    assert [n.text for n in world.book.notes(SID, plume)] == ["Swept the road."]
    assert world.actions("site_log_refused")


def test_a_comment_is_kept_and_shown(world: World) -> None:
    plume = world.plume_id()
    world.post_form(
        OFFICER,
        f"/sites/{SID}/alerts/{plume}/comment",
        {"text": "Seen on site visit <b>Tuesday</b>."},
    )
    (note,) = world.book.notes(SID, plume)
    assert (note.kind, note.by) == (NoteKind.COMMENT, OFFICER)
    page = world.login().get(f"/sites/{SID}/alerts/{plume}").text
    assert "Seen on site visit &lt;b&gt;Tuesday&lt;/b&gt;." in page, "what people type is escaped"


def test_an_unknown_alert_is_not_found(world: World) -> None:
    response = world.login().get(f"/sites/{SID}/alerts/al-nope")
    assert response.status_code == 404 and "No alert" in response.text


def test_the_site_log_on_the_site_page_names_areas_and_milestones_in_words(world: World) -> None:
    page = world.login().get(f"/sites/{SID}").text
    log = page.split('id="site-log"')[1]
    assert "Building B pad" in log and ">pad-b<" not in log
    assert ">clearing completed<" in log and "clearing_completed" not in log
