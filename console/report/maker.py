"""How the console gets the inspector's report: a seam over console/report/document.py.

The report itself (HTML with its plots, PDF through a real renderer) is
console/report/document.py's; the console only asks for it. The seam lets a test give
the app a fast stand-in, and keeps the PDF renderer (a browser or WeasyPrint)
out of the import of every page: it is loaded on the first report asked for.
"""

from __future__ import annotations

from datetime import date, datetime
from pathlib import Path
from typing import Protocol

from console.notes import NotesSource
from ingest.store.queries import SqlStore
from siltwatch.config import SiteConfig


class ReportRenderer(Protocol):
    def html(
        self,
        site: SiteConfig,
        store: SqlStore,
        notes: NotesSource,
        start: date,
        end: date,
        *,
        generated_at: datetime | None = None,
    ) -> str:
        """The report of the local days ``start`` .. ``end`` (inclusive) as one HTML page;
        ``generated_at`` (the console's clock) is printed in its footer."""
        ...

    def pdf(self, html: str, out_path: Path) -> None:
        """Render the HTML report to a PDF file."""
        ...


class InspectorReport:
    """The real report (console/report/document.py ``build_report`` and ``render_pdf``)."""

    def html(
        self,
        site: SiteConfig,
        store: SqlStore,
        notes: NotesSource,
        start: date,
        end: date,
        *,
        generated_at: datetime | None = None,
    ) -> str:
        from console.report.document import build_report

        return build_report(site, store, notes, start, end, generated_at=generated_at)

    def pdf(self, html: str, out_path: Path) -> None:
        from console.report.document import render_pdf

        render_pdf(html, out_path)
