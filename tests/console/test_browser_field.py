"""The field desk in a real Chromium on a phone (390 x 844): the issue's must-shows.

The qualified inspector fills the Lake Lure checklist and attaches two photos
from the "camera" (file inputs with ``capture``); the phone loses its signal,
the inspector submits another checklist, which waits on the phone (IndexedDB)
and is sent once the signal is back: exactly one record more is stored; the
signed record is amended from its page, its form filled in with what it says; the silt-fence finding is a corrective
action that goes overdue and is closed with a photo of the repair. Every page
is checked by axe-core (no serious or critical violation), for text of at
least 12 px and for no sideways scrolling; each step is kept as a PNG in the
test's folder and in $SILTWATCH_ARTIFACTS when set.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import require_server
from tests.console.app_world import INSPECTOR, PASSWORD, World
from tests.console.browser import CHROMEDRIVER, CHROMIUM, Shots, chrome, wait_for
from tests.console.field_world import LURE_ID, gps_exif, jpeg, lure_world
from tests.console.test_browser_live import WIDTHS, Visit, serving

pytestmark = pytest.mark.integration

if CHROMIUM.exists() and CHROMEDRIVER.exists():
    from selenium.webdriver.common.by import By
    from selenium.webdriver.remote.webdriver import WebDriver
    from selenium.webdriver.support.ui import WebDriverWait

FIELD = f"/sites/{LURE_ID}/field"


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[World, str]]:
    require_server("chromium and chromedriver", CHROMIUM.exists() and CHROMEDRIVER.exists())
    world = lure_world(tmp_path, engine=True)  # a real ingest service behind the desk
    with serving(world) as url:
        yield world, url


def _log_in(visit: Visit) -> None:
    visit.open("/login", "#login")
    visit.driver.find_element(By.NAME, "name").send_keys(INSPECTOR)
    visit.driver.find_element(By.NAME, "password").send_keys(PASSWORD)
    visit.driver.find_element(By.ID, "login").click()
    wait_for(visit.driver, f"#site-{LURE_ID}")


def _fill_inspector(visit: Visit) -> None:
    d = visit.driver
    d.find_element(By.NAME, "affiliation").send_keys("Blue Ridge Erosion Control LLC")
    d.find_element(By.NAME, "address").send_keys("412 Memorial Hwy, Lake Lure NC 28746")
    d.find_element(By.NAME, "phone").send_keys("+1 828 555 0142")
    d.find_element(By.NAME, "sign").click()


def _action_duty(world: World, practice: str) -> str:
    """The engine's corrective_action duty for the practice."""
    duties = world.console.store.duties(LURE_ID)
    (duty,) = [d for d in duties if d.kind == "corrective_action" and d.subject == practice]
    return duty.id


def _network(driver: WebDriver, *, offline: bool) -> None:
    """The phone's signal off or on (CDP; chromedriver's set_network_conditions works too)."""
    driver.execute_cdp_cmd("Network.enable", {})
    conditions = {
        "offline": offline,
        "latency": 0,
        "downloadThroughput": -1,
        "uploadThroughput": -1,
    }
    driver.execute_cdp_cmd("Network.emulateNetworkConditions", conditions)


def _banner(visit: Visit, text: str, timeout: float = 20) -> str:
    WebDriverWait(visit.driver, timeout).until(
        lambda d: text in d.find_element(By.ID, "field-queue").text
    )
    shown: str = visit.driver.find_element(By.ID, "field-queue").text
    return shown


def test_the_field_desk_on_a_phone(served: tuple[World, str], tmp_path: Path) -> None:
    world, url = served
    store = world.console.store
    photos = tmp_path / "camera"
    photos.mkdir()
    (photos / "fence.jpg").write_bytes(jpeg(640, 480, "saddlebrown"))
    (photos / "drive.jpg").write_bytes(jpeg(640, 480, "olivedrab", exif=gps_exif()))
    (photos / "repair.jpg").write_bytes(jpeg(640, 480, "slategray"))
    driver = chrome(*WIDTHS["phone"])
    visit = Visit(driver, url, Shots(tmp_path / "screenshots", "field"), phone=True)
    try:
        _log_in(visit)
        # 1. The Lake Lure checklist with two photos.
        visit.open(FIELD, "#checklist-form")
        assert [
            e.get_attribute("capture")
            for e in driver.find_elements(By.CSS_SELECTOR, "input[type=file]")
        ][:1] == ["environment"]
        visit.check("checklist-empty")
        _fill_inspector(visit)
        driver.find_element(By.NAME, "p.sf-lot1.maintenance").click()
        driver.find_element(By.NAME, "p.sf-lot1.note").send_keys("undercut at the low point")
        driver.find_element(By.NAME, "p.sf-lot1.photos").send_keys(str(photos / "fence.jpg"))
        driver.find_element(By.NAME, "a.drive.photos").send_keys(str(photos / "drive.jpg"))
        driver.find_element(By.NAME, "a.drive.cover_pct").clear()
        driver.find_element(By.NAME, "a.drive.cover_pct").send_keys("100")
        visit.check("checklist-filled")
        driver.find_element(By.ID, "submit-checklist").click()
        shown = _banner(visit, "Sent: inspection record")
        (first,) = store.field_records(LURE_ID)
        assert first.record_id in shown and first.signed_at is not None
        assert len(store.field_photo_ids(LURE_ID, first.record_id)) == 2
        visit.open(f"{FIELD}/records/{first.record_id}", ".signature")
        loaded = driver.execute_script(
            "return [...document.querySelectorAll('img.field-photo')].map(i => i.naturalWidth)"
        )
        assert loaded == [640, 640]
        assert f"Signed by {INSPECTOR}" in visit.body() and "intact" in visit.body()
        visit.check("record-signed")

        # 2. Offline: submitted with no signal, kept on the phone, sent once: one record.
        visit.open(FIELD, "#checklist-form")
        _fill_inspector(visit)
        driver.find_element(By.NAME, "p.ce-main.photos").send_keys(str(photos / "repair.jpg"))
        _network(driver, offline=True)
        driver.find_element(By.ID, "submit-checklist").click()
        waiting = _banner(visit, "waiting to be sent")
        assert "1 inspection with 1 photo waiting to be sent" in waiting
        visit.check("offline-waiting")
        assert len(store.field_records(LURE_ID)) == 1
        _network(driver, offline=False)
        _banner(visit, "Sent: inspection record", timeout=45)
        visit.shots(driver, "online-sent")
        driver.execute_script("window.dispatchEvent(new Event('online'))")  # a second try
        assert len(store.field_records(LURE_ID)) == 2

        # 3. The signed record cannot change; it is amended from its page, the form
        # filled in with what it says (the edit's refusal: test_field_desk.py).
        visit.open(f"{FIELD}/records/{first.record_id}", "#amend-record")
        driver.find_element(By.ID, "amend-record").click()
        wait_for(driver, "#amending")
        note = driver.find_element(By.NAME, "p.sf-lot1.note")
        assert note.get_attribute("value") == "undercut at the low point"
        assert driver.find_element(By.NAME, "p.sf-lot1.maintenance").is_selected()
        visit.check("amend-filled")
        note.send_keys(", 3 m long")
        driver.find_element(By.NAME, "sign").click()
        driver.find_element(By.ID, "submit-checklist").click()
        _banner(visit, "Sent: inspection record")
        amendment = store.field_records(LURE_ID)[-1]
        assert amendment.amends == first.record_id
        assert "undercut at the low point, 3 m long" in amendment.body
        assert store.field_record(LURE_ID, first.record_id) == first
        visit.open(f"{FIELD}/records/{first.record_id}", "#amended-by")
        visit.check("record-amended")

        # 4. The finding is a corrective action; it goes overdue; it closes with a photo.
        (action,) = [a for a in store.corrective_actions(LURE_ID) if a.practice == "sf-lot1"]
        world.clock.t += 8 * 86_400
        service = world.desk.service  # type: ignore[attr-defined]
        service.tick(int(world.clock() * 1000))  # the engine's clock passes the due date
        _log_in(visit)
        visit.open("/alerts", "main")
        overdue = driver.find_element(
            By.CSS_SELECTOR, 'a.alert-link[data-kind="corrective_action_overdue"]'
        )
        assert overdue.get_attribute("data-subject") == _action_duty(world, "sf-lot1")
        visit.check("action-alert")
        visit.open(FIELD + "#actions", f"#action-{action.action_id}")
        item = driver.find_element(By.ID, f"action-{action.action_id}")
        assert (
            "Overdue." in item.text and "needs maintenance: undercut at the low point" in item.text
        )
        visit.check("action-overdue")
        item.find_element(By.NAME, "note").send_keys("fence re-trenched and staked")
        item.find_element(By.NAME, "photo").send_keys(str(photos / "repair.jpg"))
        item.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
        closed = wait_for(driver, f"#action-{action.action_id} .ok")
        assert "fence re-trenched and staked" in closed.text
        visit.check("action-closed")
        service.tick(int(world.clock() * 1000) + 16 * 60_000)  # the engine judges the closure
        alerts = world.console.store.alerts(LURE_ID)
        (resolved,) = [a for a in alerts if a.kind == "corrective_action_overdue"]
        assert resolved.resolved_at is not None
    finally:
        driver.quit()
    assert len(store.field_records(LURE_ID)) == 3  # the two inspections and the amendment
