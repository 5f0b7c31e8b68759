"""The console in a real browser: Debian's Chromium, headless, driven by selenium.

The operator logs in, finds the plume alert of the Lake George storm by
clicking from the overview to the site page to the alert, acknowledges it and
records a corrective action; the page then shows both. The plume was announced
through the real follow-ups and outbox with the site's escalation chain (the
operator at once, the officer after 30 min) over the console's book: half an
hour on, the delivery audit shows the escalation to the officer not sent,
because the operator acknowledged. A site page asked for
without a session is refused (the browser lands on the login form, and the
server's answer is a 303 with none of the page), and a form posted with a
forged CSRF token is refused with 403. Each step is saved as a PNG in the
test's folder and, when ``SILTWATCH_ARTIFACTS`` is set, in that folder too.

The console runs under uvicorn in a thread on a free loopback port
(console/server.py), over the week's store with the real delivery side over its
book (tests/console/live_world.py).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from console.server import ConsoleServer
from tests.console.app_world import OPERATOR, PASSWORD, SID, SITE
from tests.console.browser import By, Shots, WebDriver, chrome, require_browser, wait_for
from tests.console.live_world import OFFICER_NAME, Delivery, LiveWorld, make_live_world

pytestmark = pytest.mark.integration

OPERATOR_PHONE, OFFICER_PHONE = "+15185550101", "+15185550199"
ACTION = "Rebuilt the silt fence at outfall A and added a row of straw wattles."


@dataclass
class Served:
    url: str
    world: LiveWorld
    plume_id: str


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    require_browser()
    world = make_live_world(tmp_path)
    server = ConsoleServer(world.app, "127.0.0.1", 0)
    server.start()
    try:
        yield Served(server.url, world, world.plume().id)
    finally:
        server.stop()
        world.console.close()


def officer_lines(delivery: Delivery) -> list[tuple[str, str]]:
    """(result, why) of every audit row about the escalation to the officer."""
    return [
        (e.result, e.error or "")
        for e in delivery.outbox.audit()
        if e.channel == "escalation" and e.recipient == OFFICER_NAME
    ]


def log_in_and_find_the_plume(driver: WebDriver, served: Served, shots: Shots) -> None:
    """Log in as the operator, click to the site, open the plume alert from its list."""
    driver.get(served.url + "/")
    wait_for(driver, "#login")
    shots(driver, "login")
    driver.find_element(By.NAME, "name").send_keys(OPERATOR)
    driver.find_element(By.NAME, "password").send_keys(PASSWORD)
    driver.find_element(By.ID, "login").click()
    wait_for(driver, f"#site-{SID}")
    shots(driver, "overview")
    driver.find_element(By.LINK_TEXT, SITE.site.name).click()
    wait_for(driver, "figure.chart svg")
    # The plume cleared on the storm's evening: it is among all episodes, not the open ones.
    driver.find_element(By.XPATH, "//summary[starts-with(., 'All alert episodes')]").click()
    plume = driver.find_element(
        By.CSS_SELECTOR, 'a.alert-link[data-kind="turbidity_contrast"][data-subject="outfall-a"]'
    )
    shots(driver, "site-page")
    plume.click()
    wait_for(driver, "#acknowledge")
    assert "turbidity contrast at outfall-a" in driver.title
    shots(driver, "plume-alert")


def acknowledge_and_record_the_action(driver: WebDriver, shots: Shots) -> None:
    driver.find_element(By.ID, "acknowledge").click()
    status = wait_for(driver, "p.acked#ack-status")
    assert "Acknowledged by Dana Ruiz in the console" in status.text
    shots(driver, "acknowledged")
    driver.find_element(By.ID, "action-text").send_keys(ACTION)
    driver.find_element(By.ID, "record-action").click()
    wait_for(driver, "li.tl-corrective_action")
    page = driver.find_element(By.TAG_NAME, "body").text
    assert "Acknowledged by Dana Ruiz in the console" in page
    assert f"corrective action by Dana Ruiz: {ACTION}" in page
    assert "Corrective action recorded and entered in the site log." in page
    shots(driver, "corrective-action")


def post_with_a_forged_token(driver: WebDriver, served: Served, shots: Shots) -> None:
    """The comment form with its CSRF field rewritten in the page, then the same by httpx."""
    driver.execute_script(
        "document.querySelectorAll('input[name=csrf]').forEach(e => e.value = 'forged')"
    )
    driver.find_element(By.ID, "comment-text").send_keys("This should not be saved.")
    driver.find_element(By.ID, "add-comment").click()
    refusal = wait_for(driver, "p.refusal")
    assert "not sent from your console page" in refusal.text
    shots(driver, "forged-csrf-refused")
    cookie = driver.get_cookie("siltwatch_session")
    assert cookie is not None and cookie["httpOnly"]
    forged = httpx.post(
        f"{served.url}/sites/{SID}/alerts/{served.plume_id}/comment",
        data={"csrf": "forged", "text": "nope"},
        cookies={"siltwatch_session": cookie["value"]},
    )
    assert forged.status_code == 403


def a_site_page_without_a_session(served: Served, shots: Shots) -> None:
    """A fresh browser (no cookie) lands on the login form; the server said 303, nothing more."""
    fresh = chrome(1280, 1000)
    try:
        fresh.get(f"{served.url}/sites/{SID}")
        wait_for(fresh, "#login")
        assert "/login?next=" in fresh.current_url
        assert "Station health" not in fresh.find_element(By.TAG_NAME, "body").text
        shots(fresh, "no-session-refused")
    finally:
        fresh.quit()
    bare = httpx.get(f"{served.url}/sites/{SID}", follow_redirects=False)
    assert bare.status_code == 303 and "Station health" not in bare.text


def test_the_operator_acknowledges_the_plume_and_records_the_action(
    served: Served, tmp_path: Path
) -> None:
    shots = Shots(tmp_path / "screenshots")
    book, alert_id = served.world.console.book, served.plume_id
    delivery = Delivery(served.world)
    # The plume as it was opened (critical, not yet resolved), announced now.
    delivery.announce("opened", served.world.plume().model_copy(update={"resolved_at": None}))
    assert delivery.texted() == [OPERATOR_PHONE]
    assert [r for r, _ in officer_lines(delivery)] == ["scheduled"]
    driver = chrome(1280, 1000)
    try:
        log_in_and_find_the_plume(driver, served, shots)
        acknowledge_and_record_the_action(driver, shots)
        ack = book.acknowledged(SID, alert_id)
        assert ack is not None and (ack.by, ack.via) == (OPERATOR, "console")
        logged = [json.loads(p) for _t, p in served.world.desk.submitted]
        assert [(e["event"], e["detail"]) for e in logged] == [
            ("corrective_action", f"{alert_id}: {ACTION}")
        ]
        post_with_a_forged_token(driver, served, shots)
        assert [n.kind.value for n in book.notes(SID, alert_id)] == [
            "acknowledged",
            "corrective_action",
        ]
        assert ("csrf_refused", OPERATOR) in [(e.action, e.who) for e in book.audit_log([SID])]
    finally:
        driver.quit()
    a_site_page_without_a_session(served, shots)
    # Half an hour on, the chain's next step falls due: the officer is not called.
    delivery.run_for(31 * 60)
    assert officer_lines(delivery) == [
        ("scheduled", "officer at 2026-05-12 12:30 EDT unless acknowledged"),
        ("not_sent", "acknowledged by Dana Ruiz at 2026-05-12 12:00 EDT (console)"),
    ]
    assert OFFICER_PHONE not in delivery.texted()
    delivery.close()
    assert sorted(p.name for p in shots.folder.glob("*.png")) == [
        "01-login.png",
        "02-overview.png",
        "03-site-page.png",
        "04-plume-alert.png",
        "05-acknowledged.png",
        "06-corrective-action.png",
        "07-forged-csrf-refused.png",
        "08-no-session-refused.png",
    ]
