"""Messages refused for the configuration alone are held, and taken back when it changes.

Why: a reading refused as "unknown station" or "unknown sensor" is not bad
data; the site file did not (yet) name its station or sensor. A file cut down
by mistake for a few seconds used to turn every acknowledged reading of that
time into a rejection for good (issue 23: 1,960 readings). Such rejections
keep the whole payload (ingest/store/queries.py ``HELD_REASONS``), and when the
service starts or its configuration changes, :func:`readmit` runs them through
the normal path again, with their original arrival times: decoded against the
current configuration, committed (duplicates dropped), the rejection rows
forgotten in the same commit, then judged. What arrives late for the engine
is a late reading like any other, so the alerts become what a replay of
everything finds.

What the current configuration still does not know stays held, untouched.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from analytics.events import EngineEvent
from ingest.decode import Rejected, decode_message
from ingest.service import Incoming, IngestService
from ingest.store.queries import HELD_REASONS

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Readmitted:
    """What :func:`readmit` did: messages taken back, and messages still held."""

    messages: int
    held: int
    events: list[EngineEvent]


def readmit(service: IngestService) -> Readmitted:
    """Take back what ``service``'s site now knows of its held messages."""
    store = service.store
    with service.lock:
        held = store.held_rejections(service.site_id)
        back: list[tuple[int, Incoming]] = []
        for ident, topic, payload, received_at in held:
            result = decode_message(topic, payload, service.site)
            if isinstance(result, Rejected) and result.reason.startswith(HELD_REASONS):
                continue  # still unknown: stays held
            back.append((ident, Incoming(topic, payload, received_at)))
        if not back:
            return Readmitted(0, len(held), [])
        with store.transaction():  # the readings and the forgetting commit together
            committed = service.commit_batch([msg for _i, msg in back])
            store.drop_rejections([ident for ident, _msg in back])
        events = service.judge_committed(committed)
        now = max(msg.received_at for _i, msg in back)
        service.rebuild_now(max(now, service.engine.clock or now))
    log.warning(
        "site %s: %d held messages taken back under the new configuration; %d still held",
        service.site_id,
        len(back),
        len(held) - len(back),
    )
    return Readmitted(len(back), len(held) - len(back), events)
