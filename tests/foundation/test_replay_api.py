"""The developers' replay API: files, DataFrames, assertion helpers, and in-order feeding."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from ingest.recordings.replay import replay_file, replay_frame
from siltwatch.config import load_site

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_replay_file_feeds_everything_on_time_and_helpers_assert() -> None:
    result = replay_file(
        EXAMPLES / "lake-george-site.toml",
        EXAMPLES / "lake-george-storm.csv",
        EXAMPLES / "lake-george-inspections.csv",
    )
    # Inspections are fed between the readings of their time: nothing is processed late.
    assert result.stats.late_processed == 0 and result.stats.late_dropped == 0
    assert result.stats.inspections == 1
    [plume] = result.assert_alert(
        "turbidity_contrast", subject="outfall-a", severity="critical", count=1
    )
    assert "Lake George §148-9 B" in plume.rule
    with pytest.raises(AssertionError, match="expected some 'no_such_kind' alert"):
        result.assert_alert("no_such_kind")
    with pytest.raises(AssertionError):
        result.assert_no_alert("drain_time")
    assert "turbidity_contrast outfall-a critical" in result.summary()
    lines = result.alerts_jsonl().splitlines()
    assert len(lines) == len(result.alerts)


def test_replay_frame_matches_replay_file() -> None:
    site = load_site(EXAMPLES / "lake-lure-site.toml")
    frame = pd.read_csv(EXAMPLES / "lake-lure-storm.csv")
    from_frame = replay_frame(site, frame)
    from_file = replay_file(site, EXAMPLES / "lake-lure-storm.csv")
    assert from_frame.alerts_jsonl() == from_file.alerts_jsonl()
    assert from_frame.duties_jsonl() == from_file.duties_jsonl()
