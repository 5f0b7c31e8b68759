"""The inspector's report of the Lake Lure week with the field desk's checklist in it.

A checklist with two photos and a finding is recorded through the console
(real app, real SQLite store of the week); ``siltwatch report`` prints the
week as a PDF with real Chromium; ``pdftotext`` and ``pdfimages`` read it back:
the checklist section, the signature block (who signed, when, intact), both
photos as images and the corrective action. The pages are rendered to PNG
with ``pdftoppm`` (in the test's folder, and in $SILTWATCH_ARTIFACTS/report-field
when set).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from app.cli import main
from tests.conftest import require_server
from tests.console.app_world import INSPECTOR, csrf_of
from tests.console.field_world import LURE_ID, checklist_form, jpeg, lure_world

pytestmark = pytest.mark.integration


def test_the_lake_lure_weeks_report_prints_the_checklist_photos_and_signature(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tools = ("chromium", "pdftoppm", "pdftotext", "pdfimages")
    require_server("chromium and poppler-utils", all(shutil.which(t) for t in tools))
    world = lure_world(tmp_path)
    client = world.login(INSPECTOR)
    page = client.get(f"/sites/{LURE_ID}/field")
    form = checklist_form(
        "report-key-0123456789",
        csrf_of(page.text),
        **{"p.sf-lot1.maintenance": "yes", "p.sf-lot1.note": "undercut at the low point"},
    )
    files = [
        ("p.sf-lot1.photos", ("fence.jpg", jpeg(800, 600, "saddlebrown"), "image/jpeg")),
        ("a.drive.photos", ("drive.jpg", jpeg(800, 600, "olivedrab"), "image/jpeg")),
    ]
    assert client.post(f"/sites/{LURE_ID}/field", data=form, files=files).status_code == 303
    world.console.close()

    pdf = tmp_path / "report.pdf"
    site_file = tmp_path / "lake-lure-field.toml"
    args = ["report", "--site", str(site_file), "--db", str(world.db), "--out", str(pdf)]
    assert main([*args, "--from", "2026-05-04", "--to", "2026-05-12"]) == 0, capsys.readouterr()
    text = subprocess.run(["pdftotext", "-layout", str(pdf), "-"], capture_output=True,
                          text=True, check=True).stdout  # fmt: skip
    flat = " ".join(text.split())
    assert "Inspection checklists" in flat
    assert "Signed by Quinn Hale at 2026-05-12 12:00 EDT" in flat and "intact" in flat
    assert (
        "needs maintenance:" in flat  # the table cell wraps: its words checked apart
        and "undercut at the low point" in flat
        and "Silt fence below Lot 1" in flat
        and "2026-05-20 00:00 EDT (site default, 7 days" in flat
    )
    assert "Blue Ridge Erosion Control LLC" in flat and "+1 828 555 0142" in flat
    listed = subprocess.run(["pdfimages", "-list", str(pdf)], capture_output=True, text=True,
                            check=True).stdout.splitlines()[2:]  # fmt: skip
    sizes = {(line.split()[3], line.split()[4]) for line in listed}
    assert ("800", "600") in sizes and sum(
        1 for line in listed if (line.split()[3], line.split()[4]) == ("800", "600")
    ) == 2
    pngs = tmp_path / "pages"
    pngs.mkdir()
    subprocess.run(["pdftoppm", "-png", "-r", "60", str(pdf), str(pngs / "page")], check=True,
                   timeout=120)  # fmt: skip
    images = sorted(pngs.glob("page-*.png"))
    assert images
    artifacts = os.environ.get("SILTWATCH_ARTIFACTS")
    if artifacts:  # the pages read back as images, kept for people to look at
        shutil.copytree(pngs, Path(artifacts) / "report-field", dirs_exist_ok=True)
