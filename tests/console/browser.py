"""Debian's Chromium, headless, driven by selenium: what the console's browser tests share.

``chrome`` opens a laptop window or emulates a phone (below 600 px wide: its viewport,
its pixel ratio, touch); ``Shots`` keeps a full-page PNG of each step in the test's
folder and, when ``SILTWATCH_ARTIFACTS`` is set, in that folder too. Selenium's names
are imported only where Chromium and its driver are installed; a test asks
``require_browser()`` first, which skips it elsewhere.
"""

from __future__ import annotations

import base64
import os
import shutil
from pathlib import Path

from tests.conftest import require_server

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")

if CHROMIUM.exists() and CHROMEDRIVER.exists():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.remote.webdriver import WebDriver
    from selenium.webdriver.remote.webelement import WebElement
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import Select, WebDriverWait

__all__ = [
    "By",
    "Select",
    "Shots",
    "WebDriver",
    "WebDriverWait",
    "WebElement",
    "chrome",
    "require_browser",
    "wait_for",
]


def require_browser() -> None:
    """Skip the test without Chromium and its driver here (fail it under CI=true)."""
    require_server("chromium and chromedriver", CHROMIUM.exists() and CHROMEDRIVER.exists())


def chrome(width: int, height: int) -> WebDriver:
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu"):
        options.add_argument(arg)
    if width < 600:  # a phone: its viewport, its pixel ratio, touch
        metrics = {"width": width, "height": height, "pixelRatio": 2.0}
        options.add_experimental_option("mobileEmulation", {"deviceMetrics": metrics})
    else:
        options.add_argument(f"--window-size={width},{height}")
    driver = webdriver.Chrome(options=options, service=Service(str(CHROMEDRIVER)))
    driver.set_page_load_timeout(20)
    driver.set_script_timeout(30)
    return driver


class Shots:
    """Full-page screenshots of each step, in the test's folder and $SILTWATCH_ARTIFACTS,
    numbered in order (after ``prefix``, when there is one)."""

    def __init__(self, folder: Path, prefix: str = "") -> None:
        self.folder, self.prefix, self.count = folder, prefix, 0
        folder.mkdir(parents=True, exist_ok=True)
        extra = os.environ.get("SILTWATCH_ARTIFACTS")
        self.extra = Path(extra) if extra else None

    def __call__(self, driver: WebDriver, name: str) -> Path:
        self.count += 1
        stem = f"{self.count:02d}-{name}.png"
        path = self.folder / (f"{self.prefix}-{stem}" if self.prefix else stem)
        shot = driver.execute_cdp_cmd(
            "Page.captureScreenshot", {"captureBeyondViewport": True, "fromSurface": True}
        )
        path.write_bytes(base64.b64decode(shot["data"]))
        if self.extra is not None:
            self.extra.mkdir(parents=True, exist_ok=True)
            shutil.copy(path, self.extra / path.name)
        return path


def wait_for(driver: WebDriver, css: str, timeout: float = 10) -> WebElement:
    found: WebElement = WebDriverWait(driver, timeout).until(
        ec.presence_of_element_located((By.CSS_SELECTOR, css))
    )
    return found
