"""The demo in a real browser: an inspection typed into its console completes its duty
within 10 s, on a laptop (1400 px) and on a phone (390 × 844).

Issue 25 asked that "a form submitted in the demo completes a duty within 10 s"
be seen as a person sees it. ``siltwatch demo --web`` runs as the README shows
it (a subprocess: the embedded broker, both reference sites' week, the services
running on behind the console in the demo's time, app/demo.py). Debian's
Chromium, headless, logs in with the printed demo account, opens a site's
duties, picks an open inspection duty in the form, leaves the time at the demo's
now as the form offers it, fills in the record the law asks for and signs it;
within 10 s of the click the duty's row on the duties page says it is done, and
the store agrees. Lake George at 1400 px, Lake Lure on the phone. axe-core
checks every page (no serious or critical violation), with the same readable
text and no sideways scrolling as tests/console/test_browser_live.py; each page
is a PNG in the test's folder and, with ``SILTWATCH_ARTIFACTS``, in that folder.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.console import browser
from tests.console.browser import By, Select
from tests.console.test_browser_live import WIDTHS, Visit
from tests.demo_process import demo_process

pytestmark = pytest.mark.integration

FORM_WITHIN_S = 10.0  # issue 25: a form submitted in the demo completes its duty this fast
SITE_OF_WIDTH = {"laptop": "lg-route9n", "phone": "ll-boulevard"}


@dataclass
class Demo:
    url: str
    password: str
    db: Path


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Demo]:
    """``siltwatch demo --web`` on a free port, until the module's tests are done."""
    browser.require_browser()
    out = tmp_path_factory.mktemp("demo")
    with demo_process(out) as running:
        assert running.serves(), running.stdout()[-3000:]
        yield Demo(running.url, running.password(), out / "siltwatch.sqlite3")
    assert "error:" not in running.stdout(), running.stdout()[-3000:]


def _stored_duty(db: Path, site: str, duty: str) -> dict[str, str | None]:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as con:
        (body,) = con.execute(
            "SELECT body FROM duties WHERE site = ? AND id = ?", (site, duty)
        ).fetchone()
    found: dict[str, str | None] = json.loads(body)
    return found


def _log_in(visit: Visit, password: str) -> None:
    visit.open("/", "#login")
    visit.driver.find_element(By.NAME, "name").send_keys("demo")
    visit.driver.find_element(By.NAME, "password").send_keys(password)
    visit.driver.find_element(By.ID, "login").click()
    browser.wait_for(visit.driver, "#site-lg-route9n")
    visit.check("demo-overview")


def _row_state(visit: Visit, duty: str) -> str:
    rows = visit.driver.find_elements(By.ID, f"duty-{duty}")
    return rows[0].get_attribute("class") or "" if rows else ""


@pytest.mark.parametrize("width", list(WIDTHS))
def test_an_inspection_typed_in_the_demo_completes_its_duty_within_10_s(
    demo: Demo, tmp_path: Path, width: str
) -> None:
    sid = SITE_OF_WIDTH[width]
    driver = browser.chrome(*WIDTHS[width])
    visit = Visit(driver, demo.url, browser.Shots(tmp_path / "screenshots", f"demo-{width}"), False)
    try:
        _log_in(visit, demo.password)
        visit.open(f"/sites/{sid}/duties", "#inspection")
        duties = Select(driver.find_element(By.NAME, "duty"))
        open_ids = [o.get_attribute("value") for o in duties.options if o.get_attribute("value")]
        assert open_ids, "the demo week leaves an inspection duty open"
        duty = str(open_ids[0])
        assert _row_state(visit, duty) in ("duty-open", "duty-due_soon", "duty-overdue")
        assert _stored_duty(demo.db, sid, duty)["completed_at"] is None
        visit.check("demo-duties-before")
        duties.select_by_value(duty)
        typed_time = driver.find_element(By.NAME, "time").get_attribute("value")
        assert typed_time and typed_time.startswith("2026-05-1"), typed_time  # the demo's now
        for name, value in (
            ("affiliation", "Whitaker Erosion Control"),
            ("address", "12 Canada St, Lake George NY"),
            ("phone", "+15185550102"),
            ("deviations", "none"),
            ("corrective_actions", "none needed"),
        ):
            driver.find_element(By.NAME, name).send_keys(value)
        driver.find_element(By.NAME, "signed").click()
        clicked = time.monotonic()
        driver.find_element(By.ID, "record-inspection").click()
        state = ""
        while time.monotonic() - clicked < FORM_WITHIN_S:
            browser.wait_for(driver, f"#duty-{duty}")
            state = _row_state(visit, duty)
            if state == "duty-done":
                break
            time.sleep(0.5)
            driver.refresh()
        took = time.monotonic() - clicked
        assert state == "duty-done", f"{duty} still {state!r} {took:.1f} s after the form"
        assert took <= FORM_WITHIN_S
        assert _stored_duty(demo.db, sid, duty)["completed_at"] is not None
        assert "done " in driver.find_element(By.ID, f"duty-{duty}").text
        visit.check("demo-duty-done")
        print(f"{width}: {duty} of {sid} done {took:.1f} s after the click")
    finally:
        driver.quit()
    assert visit.pages == ["demo-overview", "demo-duties-before", "demo-duty-done"]
