"""``serve --log-json``: one JSON object per log line, for a log collector.

A collector (Loki, Elasticsearch, CloudWatch) indexes fields; a human-readable
line has to be parsed back with a regular expression that breaks on the first
message with a colon in it. Each record becomes one line of JSON with ``time``
(UTC, ISO 8601 with milliseconds and ``Z``), ``level``, ``logger`` and
``message``, then any ``extra={...}`` fields the call passed, then
``exception`` (the formatted traceback) when there is one. A value JSON cannot
hold is written as its ``str``. The default stays the human-readable format.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any

from siltwatch.timefmt import utc_iso

# What every LogRecord has; anything else on a record came in through ``extra=``.
_STANDARD = frozenset(vars(logging.LogRecord("", logging.INFO, "", 0, "", None, None)).keys()) | {
    "message",
    "asctime",
    "taskName",
}


class JsonFormatter(logging.Formatter):
    """Formats a record as one line of JSON (see the module docstring)."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": utc_iso(datetime.fromtimestamp(record.created, UTC), timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD and key not in entry:
                entry[key] = value
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            entry["exception"] = record.exc_text
        if record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
        return json.dumps(entry, ensure_ascii=False, default=str)


def configure_logging(*, json_lines: bool, level: int = logging.INFO) -> None:
    """The root logger on stderr: JSON lines, or ``time LEVEL logger: message``."""
    handler = logging.StreamHandler()
    if json_lines:
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)


def adopt_uvicorn_logs() -> None:
    """Send uvicorn's records through the root handler (JSON) instead of its own.

    uvicorn installs plain-text handlers on its loggers when a server is configured
    (console/server.py); call this after that, or its rare lines break the JSON stream.
    """
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logger = logging.getLogger(name)
        for old in list(logger.handlers):
            logger.removeHandler(old)
        logger.propagate = True
