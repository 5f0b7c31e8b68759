"""The inspector's report of the demo week, printed to PDF by a real Chromium.

``siltwatch report`` runs on the Lake George storm week (the week the demo
publishes, stored as ``serve`` stores it: tests/console/app_world.py), after
the operator acknowledged the plume and recorded a corrective action in the
console's book. The PDF's pages are rendered to PNG with ``pdftoppm`` and
read back: the verdict is the first thing on page 1, the sections flow in
order (a week fits in a few pages, none a third full), every page carries the
footer and "Page n of N", dates are never wrapped, the certification and
signature lines are on the last page, every plot's title is on a page whose
pixels carry the plot's colours, and the acknowledgement and the corrective
action are in the printed text, once. The PNGs stay in the test's folder (and
in ``SILTWATCH_ARTIFACTS`` when set).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from app.cli import main
from console.book import ConsoleBook
from console.charts.model import DESIGN_BLUE, LIMIT_RED, PALETTE
from console.notes import NoteKind
from ingest.store.sqlite import SqliteStore
from tests.conftest import require_server
from tests.console.app_world import OPERATOR, SID, SITE_FILE, week_store
from tests.pngread import decode

pytestmark = pytest.mark.integration

WEEK = ("2026-05-04", "2026-05-11")
SECTIONS = (
    "Inspector's report",
    "Daily rain log",
    "Storm events",
    "Inspections",
    "Duties met and missed",
    "Alerts",
    "Station health",
    "Plots (appendix)",
    "Certification",
)
# One plot per turbidity pair, rain gauge, infiltration practice and trap of the site.
PLOT_TITLES = (
    "Turbidity outfall-a",
    "Rain gauge-1",
    "Water level basin-a",
    "Sediment trap trap-1",
)
ACTION = "Rebuilt the silt fence at outfall A; added straw wattles below the haul road."
ACK_MS = 1778248800000  # 2026-05-08T14:00:00Z


def _hex(colour: str) -> tuple[int, int, int]:
    return int(colour[1:3], 16), int(colour[3:5], 16), int(colour[5:7], 16)


def _near(rows: list[bytes], colour: tuple[int, int, int], tolerance: int = 40) -> int:
    """How many pixels lie within ``tolerance`` of ``colour`` on every channel."""
    r0, g0, b0 = colour
    found = 0
    for row in rows:
        for i in range(0, len(row), 3):
            if (
                abs(row[i] - r0) <= tolerance
                and abs(row[i + 1] - g0) <= tolerance
                and abs(row[i + 2] - b0) <= tolerance
            ):
                found += 1
    return found


def _page_text(pdf: Path, page: int) -> str:
    done = subprocess.run(
        ["pdftotext", "-layout", "-f", str(page), "-l", str(page), str(pdf), "-"],
        capture_output=True,
        check=True,
        text=True,
    )
    return done.stdout


def _heading_on(heading: str, text: str) -> bool:
    """A heading is a line of its own (the summary's "Alerts: 6 ..." lines are not)."""
    lines = [line.strip() for line in text.splitlines()]
    if heading == SECTIONS[0]:
        return any(line.startswith(heading + ":") for line in lines)
    return heading in lines


def _page_count(pdf: Path) -> int:
    info = subprocess.run(["pdfinfo", str(pdf)], capture_output=True, check=True, text=True)
    found = re.search(r"^Pages:\s+(\d+)$", info.stdout, re.MULTILINE)
    assert found, info.stdout
    return int(found.group(1))


def test_the_demo_weeks_report_prints_to_pdf_with_every_section_and_plot(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    require_server("chromium", shutil.which("chromium") is not None)
    require_server("poppler-utils (pdftoppm)", shutil.which("pdftoppm") is not None)
    db = week_store(tmp_path)
    book = ConsoleBook(db)
    try:
        store = SqliteStore(db)
        try:
            (plume,) = [
                a.id
                for a in store.alerts(SID)
                if a.kind == "turbidity_contrast" and a.subject == "outfall-a"
            ]
        finally:
            store.close()
        book.acknowledge(SID, plume, OPERATOR, ACK_MS)
        book.add_note(
            SID, plume, NoteKind.CORRECTIVE_ACTION, OPERATOR, ACK_MS + 3_600_000, ACTION, "console"
        )
    finally:
        book.close()

    pdf = tmp_path / "report.pdf"
    args = ["report", "--site", str(SITE_FILE), "--db", str(db), "--out", str(pdf)]
    code = main([*args, "--from", WEEK[0], "--to", WEEK[1]])
    assert code == 0, capsys.readouterr().err
    assert pdf.read_bytes()[:5] == b"%PDF-"

    pages = _page_count(pdf)
    pngs = tmp_path / "pages"
    pngs.mkdir()
    subprocess.run(
        ["pdftoppm", "-png", "-r", "72", str(pdf), str(pngs / "page")], check=True, timeout=120
    )
    images = sorted(pngs.glob("page-*.png"))
    assert len(images) == pages
    artifacts = os.environ.get("SILTWATCH_ARTIFACTS")
    if artifacts:
        target = Path(artifacts) / "report"
        target.mkdir(parents=True, exist_ok=True)
        for image in images:
            shutil.copy(image, target / image.name)

    texts = [_page_text(pdf, n) for n in range(1, pages + 1)]
    # The sections flow, in the report's order: no page is spent on a section heading.
    starts = []
    for heading in SECTIONS:
        on = [n for n, text in enumerate(texts) if _heading_on(heading, text)]
        assert on, f"section {heading!r} is on no page"
        starts.append(on[0])
    assert starts == sorted(starts), starts
    assert len(set(starts)) < len(SECTIONS)  # sections share pages
    assert pages <= 7, pages  # was 10, a section a page
    # The verdict comes first: the line under the title says what was missed and what is open.
    first_lines = [line.strip() for line in texts[0].splitlines() if line.strip()]
    verdict = " ".join(first_lines[1:4])
    assert "Mon 2026-05-04 – Mon 2026-05-11:" in verdict
    assert "1 duty missed" in verdict and "regulatory alerts" in verdict, verdict
    # What the station part holds, in words (it said "N stations reporting", 0 for a log
    # of readings without status reports).
    whole = " ".join(" ".join(texts).split())
    assert "Station health: the last status report of 2 stations" in whole
    # Every page: the footer (site, period, when generated) and its number.
    for n, text in enumerate(texts, start=1):
        flat = " ".join(text.split())
        assert f"Page {n} of {pages}" in flat, (n, flat[-200:])
        assert "Route 9N mixed-use, Town of Lake George · Mon 2026-05-04 – Mon 2026-05-11" in flat
        assert "· generated " in flat
    # The last page: the certification the NY permit asks for, with its signature lines.
    last = " ".join(texts[-1].split())
    assert "I certify under penalty of law" in last and "40 CFR 122.22(d)" in last
    for line in ("Qualified inspector's name", "Signature", "Date"):
        assert line in last
    # Dates on one line: no "2026-05-" left at the end of a printed line.
    assert not [
        line for text in texts for line in text.splitlines() if line.rstrip().endswith("2026-05-")
    ]
    # People's names, not hashes, in the headings.
    everything_flat = " ".join(" ".join(texts).split())
    assert "stabilization overdue: Topsoil stockpile by West Brook" in everything_flat
    assert "stabilization overdue: du-" not in everything_flat

    # Every plot: its title is printed, and its page carries the plot's drawn colours.
    plot_pages = set()
    for title in PLOT_TITLES:
        on = [n for n, text in enumerate(texts) if title in text and n >= starts[-2]]
        assert on, f"plot {title!r} is on no page of the Plots section"
        plot_pages.add(on[0])
    plotted = [decode(images[n].read_bytes())[2] for n in sorted(plot_pages)]
    for colour in (PALETTE[0], PALETTE[1], LIMIT_RED, DESIGN_BLUE):
        assert sum(_near(rows, _hex(colour)) for rows in plotted) > 8, colour
    # The pages before the plots are text and tables: none of the series colours there.
    first_text = decode(images[starts[1]].read_bytes())[2]
    assert _near(first_text, _hex(PALETTE[1]), tolerance=20) == 0

    everything = "\n".join(texts)
    assert f"acknowledged by {OPERATOR}, 2026-05-08 10:00 EDT (console)" in everything
    assert " ".join(everything.split()).count("Rebuilt the silt fence at outfall A") == 1
    assert "Lake George §148-9" in everything  # the plume's citation
