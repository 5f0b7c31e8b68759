"""``siltwatch replay`` refuses what it cannot replay in words, with exit 1.

Before (issue 23, item 6): a capture line nested thousands deep died with a
RecursionError traceback; a header-only recording exited 0 with "0 readings"
and empty outputs, which reads like a quiet site.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.ingest.live import ROOT, run_cli

SITE = str(ROOT / "examples" / "lake-george-site.toml")
GOOD = {
    "topic": "siltwatch/v1/lg-route9n/up-1/turb-up/reading",
    "payload": {
        "v": 1,
        "type": "reading",
        "site": "lg-route9n",
        "station": "up-1",
        "sensor": "turb-up",
        "time": "2026-05-04T13:00:00Z",
        "seq": 1,
        "value": 8.2,
        "unit": "NTU",
    },
}


def _replay(tmp_path: Path, recording: Path) -> tuple[int, str, list[Path]]:
    outs = [tmp_path / "alerts.jsonl", tmp_path / "duties.jsonl"]
    done = run_cli(
        "replay",
        "--site",
        SITE,
        str(recording),
        "--alerts-out",
        str(outs[0]),
        "--duties-out",
        str(outs[1]),
    )
    return done.returncode, done.stdout + done.stderr, outs


def test_a_deeply_nested_capture_line_is_file_line_and_exit_1(tmp_path: Path) -> None:
    capture = tmp_path / "c.jsonl"
    nested = '{"topic": "x", "payload": ' + "[" * 100_000 + "]" * 100_000 + "}"
    capture.write_text(json.dumps(GOOD) + "\n" + nested + "\n", encoding="utf-8")
    code, out, outs = _replay(tmp_path, capture)
    assert code == 1, out
    assert "Traceback" not in out and "RecursionError" not in out
    assert f"{capture}:2: not a capture line: its JSON is nested too deeply to read" in out
    assert not any(p.exists() for p in outs)


@pytest.mark.parametrize(
    ("name", "content"),
    [("r.csv", "time,sensor,value\n"), ("c.jsonl", "\n")],
    ids=["a header-only recording", "an empty capture"],
)
def test_a_file_without_data_says_it_held_none_and_writes_nothing(
    tmp_path: Path, name: str, content: str
) -> None:
    source = tmp_path / name
    source.write_text(content, encoding="utf-8")
    code, out, outs = _replay(tmp_path, source)
    assert code == 1, out
    assert f"{source}: holds no data" in out and "nothing to replay" in out
    assert not any(p.exists() for p in outs)


def test_one_reading_still_replays(tmp_path: Path) -> None:
    capture = tmp_path / "c.jsonl"
    capture.write_text(json.dumps(GOOD) + "\n", encoding="utf-8")
    code, out, outs = _replay(tmp_path, capture)
    assert code == 0, out
    assert "replayed 1 readings" in out
    assert all(p.exists() for p in outs)
