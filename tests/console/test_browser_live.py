"""The live console in a real browser, on a laptop (1400 px) and on a phone (390 × 844).

Debian's Chromium, headless, driven by selenium, over the Lake George week
(tests/console/live_world.py) with the console's clock the day after it and
the real delivery side (the site's escalation chain, follow-ups, outbox and
worker behind the silences) over the console's book. At each width the
operator:

1. opens the overview;
2. filters the list of every alert of their sites to critical ones (the
   filter is in the URL: the view can be bookmarked);
3. watches the site page update by itself when a reading arrives (no reload:
   a mark left in the page's window survives), with the alerts above the plots
   and, on the phone, no table scrolling sideways;
4. opens the storm's plume, announced through the chain with nobody
   answering: the page shows the operator's SMS sent, the officer's step
   scheduled and then fired, the plot of the episode, and its critical peak
   as history (it has ended);
5. silences the downstream probe for servicing; a new plume at its outfall
   is recorded and listed, marked silenced, and nobody is texted;
6. opens the duties, the audit log (the silence is in it) and a refused filter.

axe-core (tests/console/vendor/axe.min.js, injected by the driver, never
served) checks every page opened: no serious or critical violation. Each step
is a full-page PNG in the test's folder and, when ``SILTWATCH_ARTIFACTS`` is
set, in that folder too (named by width).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

import pytest
from selenium.common.exceptions import StaleElementReferenceException
from starlette.applications import Starlette

from console.server import ConsoleServer
from console.web import Console
from ingest.store.from_url import open_store
from tests.console.app_world import OPERATOR, PASSWORD, SID, SITE
from tests.console.browser import (
    By,
    Select,
    Shots,
    WebDriver,
    WebDriverWait,
    chrome,
    require_browser,
    wait_for,
)
from tests.console.live_world import OFFICER_NAME, Delivery, LiveWorld, make_live_world, new_episode

pytestmark = pytest.mark.integration

AXE = Path(__file__).with_name("vendor") / "axe.min.js"
OPERATOR_PHONE, OFFICER_PHONE = "+15185550101", "+15185550199"
WIDTHS = {"laptop": (1400, 1000), "phone": (390, 844)}
MIN_TEXT_PX = 12.0


def axe_violations(driver: WebDriver) -> list[dict[str, Any]]:
    """axe-core's serious and critical violations of the page as it is now."""
    driver.execute_script(AXE.read_text(encoding="utf-8"))
    found: list[dict[str, Any]] = driver.execute_async_script(
        """
        const done = arguments[arguments.length - 1];
        axe.run(document, {resultTypes: ["violations"]}).then(
          r => done(r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
                                             nodes: v.nodes.slice(0, 4).map(n => n.target.join(" "))}))),
          e => done([{id: "axe-failed", impact: "critical", help: String(e), nodes: []}]));
        """
    )
    return [v for v in found if v["impact"] in ("serious", "critical")]


class Visit:
    """The operator's browser at one width: every page checked by axe and kept as a PNG."""

    def __init__(self, driver: WebDriver, url: str, shots: Shots, phone: bool) -> None:
        self.driver, self.url, self.shots, self.phone = driver, url, shots, phone
        self.pages: list[str] = []

    def check(self, name: str) -> None:
        """axe on the page, readable text, nothing wider than the screen; then its shot."""
        bad = axe_violations(self.driver)
        assert bad == [], f"{name}: axe-core found {bad}"
        small = self.driver.execute_script(
            """
            const out = [];
            for (const el of document.querySelectorAll("main p, main li, main td, main th, main label, main a")) {
              if (el.closest("svg") || !el.offsetParent || !el.textContent.trim()) continue;
              const px = parseFloat(getComputedStyle(el).fontSize);
              if (px < arguments[0]) out.push(el.tagName + " " + px + "px: " + el.textContent.trim().slice(0, 40));
            }
            return out.slice(0, 5);
            """,
            MIN_TEXT_PX,
        )
        assert small == [], f"{name}: text smaller than {MIN_TEXT_PX} px: {small}"
        wide = self.driver.execute_script(
            """
            const w = document.documentElement.clientWidth, out = [];
            for (const el of document.querySelectorAll("body *")) {
              const r = el.getBoundingClientRect();
              if (r.right > w + 0.5 && !el.closest("svg")) out.push(el.tagName + "." + el.className + " " + Math.round(r.right));
            }
            return [document.documentElement.scrollWidth, w, out.slice(0, 5)];
            """
        )
        assert wide[0] <= wide[1], f"{name}: the page scrolls sideways: {wide}"
        self.pages.append(name)
        self.shots(self.driver, name)

    def open(self, path: str, ready: str) -> None:
        self.driver.get(self.url + path)
        wait_for(self.driver, ready)

    def body(self) -> str:
        text: str = self.driver.find_element(By.TAG_NAME, "body").text
        return text


@pytest.fixture
def live(tmp_path: Path) -> Iterator[tuple[LiveWorld, str]]:
    require_browser()
    world = make_live_world(tmp_path, refresh_s=1.0)
    with serving(world) as url:
        yield world, url


class Servable(Protocol):
    @property
    def app(self) -> Starlette: ...

    @property
    def console(self) -> Console: ...


@contextmanager
def serving(world: Servable) -> Iterator[str]:
    """The world's console under uvicorn on a free loopback port (console/server.py); its
    URL. The console is closed after."""
    server = ConsoleServer(world.app, "127.0.0.1", 0)
    server.start()
    try:
        yield server.url
    finally:
        server.stop()
        world.console.close()


def log_in(visit: Visit) -> None:
    visit.open("/", "#login")
    visit.check("login")
    visit.driver.find_element(By.NAME, "name").send_keys(OPERATOR)
    visit.driver.find_element(By.NAME, "password").send_keys(PASSWORD)
    visit.driver.find_element(By.ID, "login").click()
    wait_for(visit.driver, f"#site-{SID}")
    visit.check("overview")


def the_critical_alerts_of_every_site(visit: Visit) -> None:
    visit.open("/alerts?days=all", "#filters")
    Select(visit.driver.find_element(By.ID, "f-severity")).select_by_value("critical")
    visit.driver.find_element(By.ID, "apply-filters").click()
    WebDriverWait(visit.driver, 10).until(lambda d: "severity=critical" in d.current_url)
    rows = visit.driver.find_elements(By.CSS_SELECTOR, "#alert-list li.alert")
    assert rows, "the storm week had critical alerts"
    badges = [r.find_element(By.CSS_SELECTOR, ".badge").text.lower() for r in rows]
    assert all(b in ("critical", "peak critical") for b in badges), badges
    assert f"{len(rows)} shown" in visit.body()
    visit.check("alerts-critical")


def the_site_page_updates_itself(visit: Visit, world: LiveWorld) -> None:
    visit.open(f"/sites/{SID}", "#health")
    driver = visit.driver
    top = driver.execute_script(
        "return [document.getElementById('alerts').getBoundingClientRect().top,"
        " document.getElementById('plots').getBoundingClientRect().top]"
    )
    assert top[0] < top[1], "alerts come before the plots"
    station = SITE.station_of()["turb-up"]
    assert "stale: silent for 36 h 00 min" in visit.body()
    driver.execute_script("window.sameSiltwatchPage = true")
    store = open_store(world.db)  # another process's write, as ingest's
    try:
        now = world.now_ms()
        store.add_readings(SID, [(station, _reading("turb-up", now, 7.77))], now)
    finally:
        store.close()
    # live.js swaps #health in while it is read: a stale element is a retry, not a failure.
    WebDriverWait(driver, 10, ignored_exceptions=(StaleElementReferenceException,)).until(
        lambda d: "7.77 NTU" in d.find_element(By.ID, "health").text
    )
    assert driver.execute_script("return window.sameSiltwatchPage === true"), "not reloaded"
    assert "Up to date (checked" in driver.find_element(By.ID, "live-status").text
    visit.check("site-updated-itself")


def _reading(sensor: str, t: int, value: float) -> Any:
    from analytics.events import SensorReading

    return SensorReading(sensor, t, value)


def the_plume_and_who_was_told(visit: Visit, world: LiveWorld, delivery: Delivery) -> None:
    plume = world.plume()
    delivery.announce("opened", plume.model_copy(update={"resolved_at": None}))
    delivery.run_for(31 * 60)  # nobody answered: the officer's step fires
    assert delivery.texted() == [OPERATOR_PHONE, OFFICER_PHONE]
    visit.open(f"/sites/{SID}/alerts/{plume.id}", "#deliveries li")
    told = visit.driver.find_element(By.ID, "deliveries").text
    assert "SMS to Dana Ruiz (opening): sent" in told
    assert f"Escalation step to {OFFICER_NAME}: fired — not acknowledged after 30 min" in told
    assert f"SMS to {OFFICER_NAME} (escalation: not acknowledged in time): sent" in told
    assert "it reached critical at its worst" in visit.body()
    assert visit.driver.find_elements(By.CSS_SELECTOR, "figure.chart.episode svg")
    visit.check("alert-who-was-told")


def a_silence_holds_a_new_plume(visit: Visit, world: LiveWorld, delivery: Delivery) -> None:
    visit.open(f"/sites/{SID}/silences", "#new-silence")
    driver = visit.driver
    Select(driver.find_element(By.ID, "silence-target")).select_by_value("sensor:turb-down")
    hours = driver.find_element(By.ID, "silence-hours")
    hours.clear()
    hours.send_keys("3")
    driver.find_element(By.ID, "silence-reason").send_keys("downstream probe sent for calibration")
    driver.find_element(By.ID, "create-silence").click()
    wait_for(driver, "tr.silence-active")
    assert "Silence recorded." in visit.body()
    visit.check("silence-created")
    held = new_episode(world, world.plume(), f"al-held-{visit.shots.prefix}")
    delivery.announce("opened", held)
    delivery.run_for(45 * 60)
    about = [e for e in delivery.outbox.audit() if e.alert_id == held.id]
    assert about == [], "nobody is texted or emailed about a silenced alert"
    visit.open("/alerts?state=silenced", "#alert-list li.alert.silenced")
    marked = visit.driver.find_element(By.ID, "alert-list").text
    assert "by Dana Ruiz: downstream probe sent for calibration (held from people)" in marked
    visit.check("alerts-silenced")
    visit.open(f"/sites/{SID}/alerts/{held.id}", "#silenced")
    assert "Nobody: a silence held this alert from people" in visit.body()
    visit.check("alert-held")


def the_other_pages(visit: Visit) -> None:
    """The duties and their forms, the audit log, and a refusal, checked the same way."""
    visit.open(f"/sites/{SID}/duties", "#inspection")
    visit.check("duties")
    visit.open("/audit", "main h1")
    assert "of sensor turb-down by Dana Ruiz: downstream probe sent for calibration" in visit.body()
    visit.check("audit-log")
    visit.open("/alerts?severity=dire", "p.refusal")
    assert "expected one of critical, warning, info" in visit.body()
    visit.check("refused")


@pytest.mark.parametrize("width", list(WIDTHS))
def test_the_live_console_at_a_glance(
    live: tuple[LiveWorld, str], tmp_path: Path, width: str
) -> None:
    world, url = live
    driver = chrome(*WIDTHS[width])
    delivery = Delivery(world)
    visit = Visit(driver, url, Shots(tmp_path / "screenshots", width), width == "phone")
    try:
        log_in(visit)
        the_critical_alerts_of_every_site(visit)
        the_site_page_updates_itself(visit, world)
        the_plume_and_who_was_told(visit, world, delivery)
        a_silence_holds_a_new_plume(visit, world, delivery)
        the_other_pages(visit)
    finally:
        driver.quit()
        delivery.close()
    assert visit.pages == [
        "login",
        "overview",
        "alerts-critical",
        "site-updated-itself",
        "alert-who-was-told",
        "silence-created",
        "alerts-silenced",
        "alert-held",
        "duties",
        "audit-log",
        "refused",
    ]
    print(f"screenshots: {visit.shots.folder}")
