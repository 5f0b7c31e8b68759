"""The store refuses a write under an older owner token, on SQLite and PostgreSQL alike.

Issue 23, item 3: the broker lease (tests/ingest/test_split_brain.py) keeps two
``serve`` processes from both serving; the store's ``site_owner`` token makes a
replaced owner's commit fail inside its own transaction even when it shares the
store with the new owner, so not one reading is written under the old token.
"""

from __future__ import annotations

import pytest

from analytics.events import SensorReading
from ingest.service import IngestService
from ingest.store.queries import Fenced, SqlStore
from tests.ingest.conftest import BACKENDS
from tests.ingest.live import reading_messages
from tests.ingest.test_event_time import SITE, SITE_ID, START

both = pytest.mark.parametrize("store_db", BACKENDS, indirect=True)


def _reading(minute: int) -> tuple[str, bytes, int]:
    t = START + minute * 60_000
    (m,) = reading_messages(SITE, [SensorReading("turb-up", t, 6.0 + minute)])
    return m.topic, m.payload, t + 1_000


@both
def test_a_write_under_an_older_token_is_refused_and_stores_nothing(store: SqlStore) -> None:
    old = IngestService(SITE, store)
    old.fence(1_000, "serve-a")
    old.handle_message(*_reading(0))
    new = IngestService(SITE, store)
    new.fence(2_000, "serve-b")
    with pytest.raises(Fenced) as info:
        old.handle_message(*_reading(1))
    assert str(info.value) == (
        f"site {SITE_ID!r} is now owned by serve-b (token 2000); a write under the older "
        "token 1000 is refused"
    )
    assert store.reading_count(SITE_ID) == 1 and store.rejection_count() == 0
    new.handle_message(*_reading(2))
    assert store.reading_count(SITE_ID) == 2


@both
def test_a_claim_older_than_the_stored_one_is_refused(store: SqlStore) -> None:
    IngestService(SITE, store).fence(5_000, "serve-b")
    late = IngestService(SITE, store)
    with pytest.raises(Fenced, match=r"this claim's token 4000 is older than the store's owner"):
        late.fence(4_000, "serve-a")
    assert late.fence_token is None
