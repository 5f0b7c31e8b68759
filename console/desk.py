"""How the console hands what people record to the live pipeline.

An inspection or a site-log entry typed into the console is the same message a
field tablet publishes (siltwatch/schema.py: ``InspectionRecord`` on
``siltwatch/v1/{site}/inspections``, ``SiteLogRecord`` on
``siltwatch/v1/{site}/log``), and it takes the same road: validated, stored,
then judged by the engine in event time. The console never writes the store's
input tables itself, so a form cannot do what a message may not.
"""

from __future__ import annotations

from typing import Protocol


class DeskError(Exception):
    """The entry was not accepted; the text says why, for the person at the form."""


class FieldDesk(Protocol):
    def submit(self, topic: str, payload: bytes) -> None:
        """Hand one wire message to the pipeline; return once it is stored (or raise DeskError)."""
        ...
