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
(console/server.py), over the week's store (tests/console/app_world.py).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from alerts.dispatch import Dispatcher
from alerts.followups import FollowUps
from alerts.outbox import Outbox
from alerts.worker import DeliveryWorker, OutboxSink
from analytics.events import AlertEvent
from console.app import make_app
from console.book import ConsoleBook
from console.server import ConsoleServer
from ingest.store.sqlite import SqliteStore
from siltwatch.config import EscalationStep, Notifications
from siltwatch.schema import Alert
from tests.alerts.helpers import SITE as LABEL
from tests.alerts.helpers import RecordingChannel
from tests.conftest import require_server
from tests.console.app_world import (
    OPERATOR,
    PASSWORD,
    SID,
    SITE,
    FakeClock,
    FakeReports,
    RecordingDesk,
    week_store,
)

pytestmark = pytest.mark.integration

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
OPERATOR_PHONE, OFFICER_NAME, OFFICER_PHONE = "+15185550101", "Sam Okafor", "+15185550199"
ACTION = "Rebuilt the silt fence at outfall A and added a row of straw wattles."

if CHROMIUM.exists() and CHROMEDRIVER.exists():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.remote.webdriver import WebDriver
    from selenium.webdriver.remote.webelement import WebElement
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait


@dataclass
class Served:
    url: str
    book: ConsoleBook
    desk: RecordingDesk
    plume_id: str
    clock: FakeClock
    store: SqliteStore


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    require_server("chromium and chromedriver", CHROMIUM.exists() and CHROMEDRIVER.exists())
    db = week_store(tmp_path)
    desk = RecordingDesk()
    clock = FakeClock()
    app = make_app({SID: SITE}, db, desk=desk, clock=clock, report_renderer=FakeReports())
    server = ConsoleServer(app, "127.0.0.1", 0)
    server.start()
    console = app.state.console
    (plume,) = [
        a.id
        for a in console.store.alerts(SID)
        if a.kind == "turbidity_contrast" and a.subject == "outfall-a"
    ]
    try:
        yield Served(server.url, console.book, desk, plume, clock, console.store)
    finally:
        server.stop()
        console.close()


class Escalation:
    """The delivery side over the console's book: the site's chain (the operator at once,
    the officer after 30 min), the real follow-ups, outbox and worker on the same clock as
    the console, and a recording SMS channel (the gateway is a third-party cloud)."""

    CHAIN = (
        EscalationStep(role="operator", after_min=0),
        EscalationStep(role="officer", after_min=30),
    )

    def __init__(self, served: Served, folder: Path) -> None:
        self.site = SITE.model_copy(
            update={"notifications": Notifications(escalation=list(self.CHAIN))}
        )
        self.clock = served.clock
        self.channel = RecordingChannel()
        self.channel.clock = self.clock
        self.outbox = Outbox(folder / "outbox.sqlite3")
        sink = OutboxSink(self.outbox, [self.channel], self.clock, site=self.site)
        self.followups = FollowUps(self.outbox, self.site, sink, served.book, self.clock)
        self.worker = DeliveryWorker(
            self.outbox, [self.channel], clock=self.clock, site=LABEL, scheduled=[self.followups]
        )
        self.dispatcher = Dispatcher(self.site, [self.followups])

    def announce(self, plume: Alert) -> None:
        """The plume as it was opened (critical, not yet resolved), announced now."""
        opened = plume.model_copy(update={"resolved_at": None})
        now_ms = int(self.clock() * 1000)
        self.dispatcher.handle([AlertEvent(type="opened", at=now_ms, alert=opened)])
        self.worker.run_once()

    def run_for(self, seconds: float) -> None:
        end = self.clock() + seconds
        while (due := self.worker.next_due()) is not None and due <= end:
            self.clock.t = max(self.clock(), due)
            self.worker.run_once()
        self.clock.t = end

    def officer_lines(self) -> list[tuple[str, str]]:
        """(result, why) of every audit row about the escalation to the officer."""
        return [
            (e.result, e.error or "")
            for e in self.outbox.audit()
            if e.channel == "escalation" and e.recipient == OFFICER_NAME
        ]


def chrome() -> WebDriver:
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1280,1000"):
        options.add_argument(arg)
    driver = webdriver.Chrome(options=options, service=Service(str(CHROMEDRIVER)))
    driver.set_page_load_timeout(20)
    return driver


class Shots:
    """Screenshots of each step, in the test's folder and in $SILTWATCH_ARTIFACTS."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.extra = (
            Path(os.environ["SILTWATCH_ARTIFACTS"])
            if os.environ.get("SILTWATCH_ARTIFACTS")
            else None
        )
        self.count = 0
        folder.mkdir(parents=True, exist_ok=True)

    def __call__(self, driver: WebDriver, name: str) -> Path:
        self.count += 1
        path = self.folder / f"{self.count:02d}-{name}.png"
        driver.save_screenshot(str(path))
        if self.extra is not None:
            self.extra.mkdir(parents=True, exist_ok=True)
            shutil.copy(path, self.extra / path.name)
        return path


def wait_for(driver: WebDriver, css: str) -> WebElement:
    found: WebElement = WebDriverWait(driver, 10).until(
        ec.presence_of_element_located((By.CSS_SELECTOR, css))
    )
    return found


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
    fresh = chrome()
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
    book, alert_id = served.book, served.plume_id
    escalation = Escalation(served, tmp_path)
    (plume,) = [a for a in served.store.alerts(SID) if a.id == alert_id]
    escalation.announce(plume)
    assert [phone for _t, phone, _d, _b in escalation.channel.sent] == [OPERATOR_PHONE]
    assert [r for r, _ in escalation.officer_lines()] == ["scheduled"]
    driver = chrome()
    try:
        log_in_and_find_the_plume(driver, served, shots)
        acknowledge_and_record_the_action(driver, shots)
        ack = book.acknowledged(SID, alert_id)
        assert ack is not None and (ack.by, ack.via) == (OPERATOR, "console")
        logged = [json.loads(p) for _t, p in served.desk.submitted]
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
    escalation.run_for(31 * 60)
    assert escalation.officer_lines() == [
        ("scheduled", "officer at 2026-05-12 12:30 EDT unless acknowledged"),
        ("not_sent", "acknowledged by Dana Ruiz at 2026-05-12 12:00 EDT (console)"),
    ]
    assert OFFICER_PHONE not in [phone for _t, phone, _d, _b in escalation.channel.sent]
    escalation.outbox.close()
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
