"""The duties page's forms: an inspection record and a site-log entry, handed to the desk.

The desk here records what it is handed (the real one, console/desk.py
``ServiceDesk``, is wired by ``serve``): the console must hand it exactly the
wire message a field tablet would publish.
"""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest

from tests.console.app_world import INSPECTOR, OFFICER, OPERATOR, SID, VIEWER, World, make_world

DUTIES = f"/sites/{SID}/duties"


def submit(world: World, who: str, path: str, data: dict[str, str]) -> httpx.Response:
    """Post a form of the duties page."""
    return world.post_form(who, path, data, page=DUTIES)


def site_log_entry(world: World, **form: str) -> httpx.Response:
    """The site-log form, posted by the operator at 11:00 (site time) the day after the week."""
    return submit(world, OPERATOR, f"/sites/{SID}/site-log", {"time": "2026-05-12T11:00", **form})


def open_inspection_duty(world: World) -> str:
    (duty,) = [
        d
        for d in world.console.store.duties(SID)
        if d.kind == "inspection" and d.completed_at is None
    ]
    return duty.id


def test_the_duties_page_lists_due_overdue_and_done(world: World) -> None:
    page = world.login(VIEWER).get(DUTIES).text
    assert "overdue by" in page and "done 2026-05-06 09:30 EDT" in page
    assert "Record an inspection" not in page, "a viewer records nothing"


def test_an_inspection_reaches_the_desk_as_the_record_a_tablet_would_send(world: World) -> None:
    duty = open_inspection_duty(world)
    form = {
        "time": "2026-05-12T09:30",
        "duty": duty,
        "inspector": "Quinn Hale, CPESC",
        "affiliation": "Adirondack SWPPP Services",
        "address": "12 Canada St, Lake George NY",
        "phone": "+1 518 555 0142",
        "signed": "yes",
        "deviations": "Stockpile not covered.",
        "corrective_actions": "Covered the stockpile 2026-05-12 10:15.",
        "notes": "Outfall A fence repaired.",
    }
    response = submit(world, INSPECTOR, f"/sites/{SID}/inspections", form)
    assert response.status_code == 303
    assert world.handed_to_desk("inspections", "inspection") == {
        "time": "2026-05-12T13:30:00Z",  # 09:30 EDT
        "inspector": "Quinn Hale, CPESC",
        "duty": duty,
        "notes": "Outfall A fence repaired.",
        "affiliation": "Adirondack SWPPP Services",
        "address": "12 Canada St, Lake George NY",
        "phone": "+1 518 555 0142",
        "signed": True,
        "deviations": "Stockpile not covered.",
        "corrective_actions": "Covered the stockpile 2026-05-12 10:15.",
    }
    (who, _a, _i, detail) = world.actions("inspection")[-1]
    assert who == INSPECTOR and duty in detail
    assert "at 2026-05-12 09:30 EDT" in detail  # the audit log is read in the site's time


def test_a_full_site_inspection_names_no_duty_and_defaults_to_the_person(world: World) -> None:
    page = world.login(OPERATOR).get(DUTIES).text
    assert 'name="inspector" value="Dana Ruiz"' in page
    submit(
        world,
        OPERATOR,
        f"/sites/{SID}/inspections",
        {"time": "2026-05-12T08:00", "inspector": OPERATOR},
    )
    record = world.handed_to_desk("inspections", "inspection")
    assert "duty" not in record and record["signed"] is False and record["inspector"] == OPERATOR


@pytest.mark.parametrize(
    ("form", "why"),
    [
        ({"time": "2026-05-13T09:00", "inspector": "Q"}, "the time is in the future"),
        ({"time": "yesterday", "inspector": "Q"}, "expected a date and time"),
        ({"time": "2026-05-12T09:00", "inspector": ""}, "inspector"),
        (
            {"time": "2026-05-12T09:00", "inspector": "Q", "duty": "du-nope"},
            "not an open inspection duty",
        ),
    ],
)
def test_a_wrong_inspection_is_explained_and_not_sent(
    world: World, form: dict[str, str], why: str
) -> None:
    response = submit(world, INSPECTOR, f"/sites/{SID}/inspections", form)
    assert response.status_code == 400
    assert "Not recorded:" in response.text and why in response.text
    assert world.desk.submitted == []


def test_what_the_desk_refuses_is_shown_to_the_person(world: World) -> None:
    world.desk.refuse = "inspection time is 3 days ahead of the service's clock"
    response = submit(
        world,
        INSPECTOR,
        f"/sites/{SID}/inspections",
        {"time": "2026-05-12T09:00", "inspector": "Q"},
    )
    assert response.status_code == 400
    assert "inspection time is 3 days ahead of the service&#39;s clock" in response.text


@pytest.mark.parametrize("who", [OFFICER, VIEWER])
def test_only_operators_and_inspectors_record(world: World, who: str) -> None:
    response = submit(
        world, who, f"/sites/{SID}/inspections", {"time": "2026-05-12T09:00", "inspector": who}
    )
    assert response.status_code == 403
    assert world.desk.submitted == []


def test_a_site_log_entry_reaches_the_desk(world: World) -> None:
    form = {"event": "temporary_cover", "area": "stockpile", "detail": "straw mulch"}
    response = site_log_entry(world, **form)
    assert response.status_code == 303
    assert world.handed_to_desk("log", "site_log") == {
        "time": "2026-05-12T15:00:00Z",
        "event": "temporary_cover",
        "area": "stockpile",
        "by": OPERATOR,
        "detail": "straw mulch",
    }
    assert world.actions("site_log")[-1][3] == "temporary_cover stockpile straw mulch"


@pytest.mark.parametrize(
    ("form", "why"),
    [
        ({"event": "cleared", "area": ""}, "names the area it concerns"),
        (
            {"event": "milestone", "detail": "lunch"},
            "is not one of the plan&#39;s phases: start of",
        ),
        ({"event": "cleared", "area": "moon"}, "is not an area of lg-route9n"),
        ({"event": "dug", "area": "pad-b"}, "choose one of the listed events"),
    ],
)
def test_a_wrong_site_log_entry_is_explained(world: World, form: dict[str, str], why: str) -> None:
    response = site_log_entry(world, **form)
    assert response.status_code == 400 and why in response.text
    assert world.desk.submitted == []


def test_a_milestone_is_typed_in_words_and_a_refusal_says_the_phases_in_words(
    world: World,
) -> None:
    ok = site_log_entry(world, event="milestone", detail="Clearing completed")
    assert ok.status_code == 303
    assert world.actions("site_log")[-1][3].split() == ["milestone", "clearing_completed"]
    refused = site_log_entry(world, event="notice", detail="clearing done")
    assert refused.status_code == 400
    assert "clearing completed, rough grading completed" in refused.text
    said = re.search(r'<p class="message error"[^>]*>([^<]*)</p>', refused.text)
    assert said is not None and "Value error" not in said[1] and "clearing_completed" not in said[1]
    chosen = submit(
        world,
        OPERATOR,
        f"/sites/{SID}/site-log",
        {"time": "2026-05-12T11:30", "event": "notice", "milestone": "final_grading_completed"},
    )  # chosen from the list, never typed
    assert chosen.status_code == 303
    assert world.actions("site_log")[-1][3].split() == ["notice", "final_grading_completed"]
    page = world.login(OPERATOR).get(DUTIES).text
    assert '<option value="rough_grading_completed">rough grading completed</option>' in page


def test_without_a_desk_the_forms_say_so(tmp_path: Path) -> None:
    world = make_world(tmp_path)
    world.console.desk = None
    page = world.login(OPERATOR).get(DUTIES).text
    assert "This console has no field desk" in page
    response = submit(
        world, OPERATOR, f"/sites/{SID}/inspections", {"time": "2026-05-12T09:00", "inspector": "Q"}
    )
    assert response.status_code == 400 and "no field desk" in response.text
