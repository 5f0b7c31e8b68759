"""The site page's plots in a real browser: readable at a desktop's and a phone's width.

Debian's headless Chromium opens the Lake George storm week's site page at
1400 x 1000 and at 390 x 844 (a phone, emulated as one: its viewport is 390
CSS px wide). For every chart the page shows, the rendered size of each axis,
tick and legend text is measured (its computed font size times the scale the
page draws the SVG at): none is under 11 px, no chart is wider than the
screen, the limit is a labelled reference line, and the points carry hover
titles. Screenshots of both widths are kept in the test's folder (and in
``SILTWATCH_ARTIFACTS`` when set).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.console.app_world import OPERATOR, PASSWORD, SID
from tests.console.browser import Shots, chrome, wait_for
from tests.console.test_browser import Served, served  # noqa: F401  (served is a fixture)

pytestmark = pytest.mark.integration

MIN_TEXT_PX = 11.0
WIDTHS = (("desktop", 1400, 1000, False), ("phone", 390, 844, True))

# Each visible chart: its width on screen, the screen's width, and per text its rendered size.
MEASURE = """
const out = [];
for (const svg of document.querySelectorAll('svg.chart')) {
  const box = svg.getBoundingClientRect();
  if (box.width === 0 || getComputedStyle(svg.parentElement).display === 'none') continue;
  const scale = box.width / svg.viewBox.baseVal.width;
  const texts = [];
  for (const t of svg.querySelectorAll('text')) {
    if (!t.textContent.trim()) continue;
    texts.push([t.textContent, parseFloat(getComputedStyle(t).fontSize) * scale,
                t.getAttribute('class') || '']);
  }
  out.push({chart: svg.dataset.chart, right: box.right, screen: document.documentElement.clientWidth,
            texts: texts, hovers: svg.querySelectorAll('g.hover use title').length,
            reflines: Array.from(svg.querySelectorAll('g.refline')).map(g => g.dataset.label)});
}
return out;
"""


def test_plot_text_is_at_least_11_px_at_a_desktops_and_a_phones_width(
    served: Served,  # noqa: F811  (the fixture imported above)
    tmp_path: Path,
) -> None:
    shots = Shots(tmp_path / "screenshots")
    driver = chrome(1280, 1000)
    try:
        driver.get(served.url + "/")
        wait_for(driver, "#login")
        driver.find_element("name", "name").send_keys(OPERATOR)
        driver.find_element("name", "password").send_keys(PASSWORD)
        driver.find_element("id", "login").click()
        wait_for(driver, f"#site-{SID}")
        for name, width, height, mobile in WIDTHS:
            driver.execute_cdp_cmd(
                "Emulation.setDeviceMetricsOverride",
                {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile},
            )
            driver.get(f"{served.url}/sites/{SID}?from=2026-05-04&to=2026-05-11")
            wait_for(driver, "figure.chart svg")
            charts: list[dict[str, Any]] = driver.execute_script(MEASURE)
            assert len(charts) == 4, (name, [c["chart"] for c in charts])  # one drawing each
            for chart in charts:
                small = [(text, round(px, 2)) for text, px, _ in chart["texts"] if px < MIN_TEXT_PX]
                assert not small, (name, chart["chart"], small)
                ticks = [px for _text, px, cls in chart["texts"] if cls == "xtick"]
                assert ticks, (name, chart["chart"])  # a time axis
                assert chart["right"] <= chart["screen"] + 0.5, (name, chart["chart"])
                assert chart["hovers"] > 0, (name, chart["chart"])
            trap = next(c for c in charts if c["chart"] == "trap-trap-1")
            assert any(label.startswith("clean out 50 %") for label in trap["reflines"])
            legend = [text for text, _px, _cls in trap["texts"]]
            assert any(text.startswith("clean out 50 %") for text in legend)  # labelled
            shots.folder.mkdir(parents=True, exist_ok=True)
            driver.execute_script("document.querySelector('figure.chart').scrollIntoView()")
            shots(driver, f"plots-{name}")
    finally:
        driver.quit()
    assert sorted(p.name for p in shots.folder.glob("*.png")) == [
        "01-plots-desktop.png",
        "02-plots-phone.png",
    ]
