"""How an alert says it was found late or withdrawn, so every channel can say so too.

A reading that arrives after the engine judged its window makes the service
rebuild that history from the store (ingest/service.py): an alert it should
have raised is raised then, *found late*, and one it disproves is *withdrawn*.
The stored alert carries that in the first words of its message (the replay
contract's fields have no flag for it), so the text, the email subject and the
console read it back from there with :func:`found_late` and
:func:`withdrawn_reason`, the one place that knows the words.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from siltwatch.schema import Alert

LATE_PREFIX = "Raised late: the readings behind this alert arrived after its window had closed. "
WITHDRAWN_PREFIX = "Withdrawn: readings that arrived late show this did not happen. "
# A withdrawal at start or after a configuration change: no late reading caused it.
WITHDRAWN_REBUILT_PREFIX = (
    "Withdrawn: the engine was rebuilt from the store under the site's current "
    "configuration, and the stored readings no longer show this. "
)
# The reasons a withdrawal gives, short enough for an SMS.
WITHDRAWN_REASON = "late readings disprove it"
WITHDRAWN_REBUILT_REASON = "site configuration changed"


def found_late(alert: Alert) -> bool:
    """The alert was raised from readings that arrived after its window had closed."""
    message = alert.message.removeprefix(WITHDRAWN_PREFIX).removeprefix(WITHDRAWN_REBUILT_PREFIX)
    return message.startswith(LATE_PREFIX)


def withdrawn_reason(alert: Alert) -> str | None:
    """Why the alert was withdrawn, or None when it was not."""
    if alert.message.startswith(WITHDRAWN_PREFIX):
        return WITHDRAWN_REASON
    if alert.message.startswith(WITHDRAWN_REBUILT_PREFIX):
        return WITHDRAWN_REBUILT_REASON
    return None
