"""Where notifications go on the embedded defaults: the console and a JSONL log.

Email, SMS and webhooks plug in as further sinks with the same interface.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Protocol, TextIO

from alerts.routing import NoticeEvent, Notification
from siltwatch.vocabulary import Severity


class Sink(Protocol):
    def send(self, note: Notification) -> None: ...


class ConsoleSink:
    """A short block per notification, readable at a glance."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stdout

    def send(self, note: Notification) -> None:
        a = note.alert
        who = ", ".join(f"{c.name} ({c.role})" for c in note.recipients) or "nobody configured"
        print(
            f"[{note.at}] {note.event.upper():9} {a.severity:8} {a.kind} {a.subject} -> {who}",
            file=self.stream,
        )
        if note.event != NoticeEvent.ESCALATED or a.severity == Severity.CRITICAL:
            print(f"    {a.message}", file=self.stream)
            print(f"    rule: {a.rule}", file=self.stream)
        self.stream.flush()


class JsonlSink:
    """Appends one JSON object a line: the durable alert log of the embedded defaults."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)

    def send(self, note: Notification) -> None:
        entry = {
            "at": note.at,
            "event": note.event,
            "recipients": [{"name": c.name, "role": c.role} for c in note.recipients],
            "alert": note.alert.model_dump(mode="json"),
        }
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(entry) + "\n")
