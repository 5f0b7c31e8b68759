"""How the console gets the inspector's report: a seam over console/report/document.py.

The report itself (HTML with its plots, PDF through a real renderer) is
console/report/document.py's; the console only asks for it. The seam lets a test give
the app a fast stand-in, and keeps the PDF renderer (a browser or WeasyPrint)
out of the import of every page: it is loaded on the first report asked for.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Protocol

from console.notes import NotesSource
from ingest.store.queries import SqlStore
from siltwatch.config import SiteConfig


@dataclass(frozen=True)
class ReportInputs:
    """What a report is made of: the site's local days ``start`` .. ``end`` (inclusive),
    read from its store and notes; ``generated_at`` (the console's clock) is printed in
    its footer. One object, so the real report and a test's stand-in share one signature."""

    site: SiteConfig
    store: SqlStore
    notes: NotesSource
    start: date
    end: date
    generated_at: datetime | None = None


class ReportRenderer(Protocol):
    def html(self, inputs: ReportInputs) -> str:
        """The report as one HTML page."""
        ...

    def pdf(self, html: str, out_path: Path) -> None:
        """Render the HTML report to a PDF file."""
        ...


class InspectorReport:
    """The real report (console/report/document.py ``build_report`` and ``render_pdf``)."""

    def html(self, inputs: ReportInputs) -> str:
        from console.report.document import build_report

        i = inputs
        return build_report(i.site, i.store, i.notes, i.start, i.end, generated_at=i.generated_at)

    def pdf(self, html: str, out_path: Path) -> None:
        from console.report.document import render_pdf

        render_pdf(html, out_path)
