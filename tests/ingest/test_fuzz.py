"""Whatever arrives on the wire, the pipeline keeps going and accounts for every message."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from ingest.service import IngestService
from ingest.store.sqlite import SqliteStore
from siltwatch.schema import reading_topic
from tests.ingest.test_service import SITE, T0

TOPICS = st.sampled_from(
    [
        reading_topic("lg-route9n", "up-1", "turb-up"),
        reading_topic("lg-route9n", "basin-1", "rain-1"),
        "siltwatch/v1/lg-route9n/inspections",
        "siltwatch/v1/lg-route9n/up-1/status",
        "siltwatch/v1/other/up-1/turb-up/reading",
        "not/a/siltwatch/topic",
    ]
)
JSON = st.recursive(
    st.none() | st.booleans() | st.floats(allow_nan=False) | st.integers() | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)


def near_valid_reading() -> st.SearchStrategy[dict[str, Any]]:
    """Readings with some fields right and some wrong: the interesting middle ground."""
    return st.fixed_dictionaries(
        {
            "type": st.sampled_from(["reading", "batch", "status", "nonsense"]),
            "site": st.sampled_from(["lg-route9n", "other", ""]),
            "station": st.sampled_from(["up-1", "down-1"]),
            "sensor": st.sampled_from(["turb-up", "turb-down", "ghost"]),
            "time": st.sampled_from(["2026-05-04T13:00:00Z", "2026-05-04 13:00", "yesterday", 5]),
            "seq": st.integers(min_value=-2, max_value=5),
            "value": st.one_of(
                st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=3)
            ),
            "unit": st.sampled_from(["NTU", ""]),
        }
    )


PAYLOADS = st.one_of(
    st.binary(max_size=64),
    JSON.map(lambda v: json.dumps(v).encode()),
    near_valid_reading().map(lambda v: json.dumps(v).encode()),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(TOPICS, PAYLOADS), min_size=1, max_size=20))
def test_every_message_is_stored_or_rejected_and_nothing_raises(
    messages: list[tuple[str, bytes]],
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = SqliteStore(Path(tmp) / "s.sqlite3")
        service = IngestService(SITE, store)
        for topic, payload in messages:
            before = (
                (s.rejected, s.readings_stored + s.duplicates, s.inspections)
                if (s := service.stats)
                else None
            )
            service.handle_message(topic, payload, T0)
            after = (s.rejected, s.readings_stored + s.duplicates, s.inspections)
            assert before is not None
            rejected, readings, inspections = (x - y for x, y in zip(after, before, strict=True))
            # Exactly one outcome per message: refused with a reason, or it delivered data
            # (readings stored or recognised as duplicates, or an inspection), or it was a
            # valid station status (not data).
            delivered = readings > 0 or inspections > 0
            status = topic.endswith("/status") and rejected == 0
            outcomes = [rejected == 1, delivered, status]
            assert outcomes.count(True) == 1, (topic, payload, outcomes)
        s = service.stats
        assert s.messages == len(messages)
        assert len(store.rejections()) == s.rejected
        assert store.reading_count("lg-route9n") == s.readings_stored
        store.close()
