"""What a console page reads from the store is bounded by what it shows (issue 24), on both
backends: the site page's latest log entries are the whole log's last ones, in its order."""

from __future__ import annotations

import pytest

from analytics.events import SiteLogEntry
from ingest.store.queries import SqlStore
from tests.ingest.conftest import BACKENDS

both = pytest.mark.parametrize("store_db", BACKENDS, indirect=True)


@both
def test_the_latest_site_log_entries_are_the_whole_logs_last_in_its_order(
    store: SqlStore,
) -> None:
    # Stored out of order, two at one instant, another site's in between.
    for n, t in enumerate([50, 10, 30, 30, 70, 20, 60, 40]):
        store.add_site_log("a", SiteLogEntry(t, "inspection", None, f"p{n}", ""), n)
        store.add_site_log("b", SiteLogEntry(t + 1, "inspection", None, "other", ""), n)
    whole = store.site_log("a")
    for count in (0, 1, 3, 8, 20):
        assert store.latest_site_log("a", count) == whole[len(whole) - count :]
    assert [e.t for e in store.latest_site_log("a", 4)] == [40, 50, 60, 70]
