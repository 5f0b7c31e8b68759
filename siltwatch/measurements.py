"""The InfluxDB measurements siltwatch writes and its Grafana dashboards read.

ingest/influx/mirror.py writes them and dashboards/ queries them, but dashboards may
not import ingest (README.md, "Folders"): the names live here, in the one
package both may import, so a renamed field breaks at import time on both sides
instead of silently emptying a panel.

Series identity in InfluxDB is measurement + tag set, and a point is replaced by
a later point with the same series and time. So tags hold only what never changes
for one reading, alert episode or duty, and everything that changes (an alert's
severity escalates, a duty is completed) is a field: rewriting the episode at
its opening time then updates the one point instead of adding a second.
"""

from __future__ import annotations

from typing import Final

# One point per sensor reading, at the reading's event time (epoch ms).
READING: Final = "reading"
READING_TAGS: Final = ("site", "station", "sensor", "kind", "unit")
READING_VALUE: Final = "value"  # float, in the sensor's declared unit
READING_SEQ: Final = "seq"  # integer, the per-sensor sequence number (absent when unknown)
READING_FLAGS: Final = "flags"  # string, sorted quality flags joined by ","

# One point per alert episode, at its opening time; rewritten as it escalates or resolves.
ALERT: Final = "alert"
ALERT_TAGS: Final = ("site", "kind", "subject")
ALERT_FIELDS: Final = (
    "id",
    "severity",
    "state",
    "message",
    "rule",
    "opened_ms",
    "resolved_ms",
)

# One point per duty, at its creation time; rewritten when it is completed or overdue.
DUTY: Final = "duty"
DUTY_TAGS: Final = ("site", "kind", "subject")
DUTY_FIELDS: Final = (
    "id",
    "reason",
    "rule",
    "state",
    "created_ms",
    "due_ms",
    "completed_ms",
)

# Values of the ``state`` fields.
ALERT_OPEN: Final = "open"
ALERT_RESOLVED: Final = "resolved"
DUTY_OPEN: Final = "open"
DUTY_OVERDUE: Final = "overdue"
DUTY_COMPLETED: Final = "completed"
