"""The inspector's report of the demo week, printed to PDF by a real Chromium.

``siltwatch report`` runs on the Lake George storm week (the week the demo
publishes, stored as ``serve`` stores it: tests/console/app_world.py), after
the operator acknowledged the plume and recorded a corrective action in the
console's book. The PDF's pages are rendered to PNG with ``pdftoppm`` and
read back: every section starts on its own page in order, every plot's title
is on a page whose pixels carry the plot's colours, and the acknowledgement
and the corrective action are in the printed text. The PNGs stay in the
test's folder (and in ``SILTWATCH_ARTIFACTS`` when set).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from console.book import ConsoleBook
from console.notes import NoteKind
from console.plots import DESIGN_BLUE, LIMIT_RED, PALETTE
from ingest.store import SqliteStore
from siltwatch.cli import main
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
    "Plots",
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
        ["pdftoppm", "-png", "-r", "40", str(pdf), str(pngs / "page")], check=True, timeout=120
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
    # Each section starts a page, in the report's order; a long one may run over several.
    starts = []
    for heading in SECTIONS:
        on = [n for n, text in enumerate(texts) if _heading_on(heading, text)]
        assert on, f"section {heading!r} is on no page"
        starts.append(on[0])
    assert starts == sorted(starts) and len(set(starts)) == len(SECTIONS), starts
    assert pages >= len(SECTIONS)
    assert pages <= 2 * len(SECTIONS)  # a week fits in a few pages a section

    # Every plot: its title is printed, and its page carries the plot's drawn colours.
    plot_pages = set()
    for title in PLOT_TITLES:
        on = [n for n, text in enumerate(texts) if title in text and n >= starts[-1]]
        assert on, f"plot {title!r} is on no page of the Plots section"
        plot_pages.add(on[0])
    plotted = [decode(images[n].read_bytes())[2] for n in sorted(plot_pages)]
    for colour in (PALETTE[0], PALETTE[1], LIMIT_RED, DESIGN_BLUE):
        assert sum(_near(rows, _hex(colour)) for rows in plotted) > 20, colour
    # The pages before the plots are text and tables: none of the series colours there.
    first_text = decode(images[starts[1]].read_bytes())[2]
    assert _near(first_text, _hex(PALETTE[1]), tolerance=20) == 0

    everything = "\n".join(texts)
    assert f"acknowledged by {OPERATOR}, 2026-05-08 10:00 EDT (console)" in everything
    assert "Rebuilt the silt fence at outfall A" in " ".join(everything.split())
    assert "Lake George §148-9" in everything  # the plume's citation
