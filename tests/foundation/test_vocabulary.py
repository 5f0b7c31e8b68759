"""The typed vocabulary (siltwatch/vocabulary.py): kinds, reasons and the order of severity.

The enums must cover what the engine produces, order severity one way everywhere,
and leave the JSON outputs byte for byte as they were. The expected files in
``replay_expected/`` are the outputs of the example replays from before the
enums existed; when a change of the rule maths changes them on purpose,
regenerate them with ``siltwatch replay`` (see ``test_replay_outputs_unchanged``).
"""

from __future__ import annotations

import json
import re
from enum import StrEnum
from pathlib import Path

import pytest

import siltwatch.detections as registry
from analytics import drain, health, inspections, sediment, turbidity
from ingest.recordings.replay import ReplayResult, replay_file
from siltwatch.detections import drain as drain_described
from siltwatch.detections.inspections import INSPECTION
from siltwatch.detections.sediment import SEDIMENT_CAPACITY
from siltwatch.detections.sensor_health import DATA_QUALITY, SENSOR_OFFLINE
from siltwatch.detections.turbidity import TURBIDITY_CONTRAST
from siltwatch.schema import Alert, Duty, Escalation
from siltwatch.vocabulary import DutyReason, Severity, severity_rank

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
EXPECTED = Path(__file__).resolve().parent / "replay_expected"
SITES = ("lake-george", "lake-lure")

_replays: dict[str, ReplayResult] = {}


def replay(site: str) -> ReplayResult:
    if site not in _replays:
        _replays[site] = replay_file(
            EXAMPLES / f"{site}-site.toml",
            EXAMPLES / f"{site}-storm.csv",
            EXAMPLES / f"{site}-inspections.csv",
            site_log=EXAMPLES / f"{site}-site-log.csv",
        )
    return _replays[site]


@pytest.mark.parametrize("site", SITES)
def test_every_kind_and_reason_the_examples_produce_is_a_member(site: str) -> None:
    """Every kind is described: declared once, by its detection's description
    (siltwatch/detections/), which the registry knows."""
    result = replay(site)
    assert result.alerts and result.duties  # an empty replay would prove nothing
    assert all(registry.alert_spec(a.kind) is not None for a in result.alerts)
    assert {e.severity for a in result.alerts for e in a.escalations} <= set(Severity)
    assert all(described_duty(d.kind, d.reason) for d in result.duties)


def described_duty(kind: str, reason: str) -> bool:
    spec = registry.duty_spec(kind)
    return spec is not None and reason in spec.reasons


def test_the_examples_exercise_several_members() -> None:
    kinds = {a.kind for site in SITES for a in replay(site).alerts}
    reasons = {d.reason for site in SITES for d in replay(site).duties}
    assert {TURBIDITY_CONTRAST.kind, SEDIMENT_CAPACITY.kind} <= kinds
    assert {"stabilization_overdue", "notice_missing"} <= kinds  # from the site logs
    assert set(DutyReason) <= reasons
    assert {"exposed_24h", "revegetation", "inactive_area", "graded_slopes"} <= reasons


def test_the_producers_constants_are_the_described_kinds() -> None:
    assert turbidity.KIND == TURBIDITY_CONTRAST.kind == "turbidity_contrast"
    assert turbidity.DATA_QUALITY == health.DATA_QUALITY == DATA_QUALITY.kind == "data_quality"
    assert health.OFFLINE == SENSOR_OFFLINE.kind == "sensor_offline"
    assert sediment.KIND == SEDIMENT_CAPACITY.kind == "sediment_capacity"
    assert drain.KIND == drain_described.DRAIN_TIME.kind == "drain_time"
    assert drain_described.DRAIN_TIME_FORECAST.kind == drain.FORECAST_KIND
    assert inspections.ALERT_KIND == INSPECTION.overdue_kind == "inspection_overdue"
    assert inspections.KIND == INSPECTION.kind == "inspection"


def test_the_replay_contract_kinds_are_members() -> None:
    """Every kind the contract's ALERTS.jsonl table names is described (the registry's)."""
    contract = (ROOT / "docs" / "replay-contract.md").read_text(encoding="utf-8")
    [row] = [line for line in contract.splitlines() if line.startswith("| `kind` |")]
    named = set(re.findall(r"`([a-z_]+)`", row.split("|")[2]))
    assert len(named) >= 7
    assert named <= set(registry.alert_kinds())


def test_severity_order() -> None:
    assert list(Severity) == [Severity.INFO, Severity.WARNING, Severity.CRITICAL]
    assert [severity_rank(s) for s in Severity] == [0, 1, 2]
    # Plain strings (read back from an outbox, a store or a snapshot) rank the same.
    assert [severity_rank(s) for s in ("info", "warning", "critical")] == [0, 1, 2]
    assert severity_rank("bogus") < severity_rank("info")
    assert max(["warning", "critical", "info"], key=severity_rank) == "critical"
    assert sorted(["info", "critical", "warning"], key=severity_rank, reverse=True) == [
        "critical",
        "warning",
        "info",
    ]


def test_members_are_their_strings() -> None:
    for enum in (DutyReason, Severity):
        assert issubclass(enum, StrEnum)
        for member in enum:
            assert member == member.value
            assert str(member) == f"{member}" == member.value
            assert json.dumps(member) == json.dumps(member.value)


def test_a_severity_member_serializes_as_its_string() -> None:
    alert = Alert(
        id="al-1",
        kind=drain_described.DRAIN_TIME.kind,
        subject="basin-a",
        severity=Severity.CRITICAL,
        escalations=[Escalation(at="2026-05-05T12:00:00Z", severity=Severity.WARNING)],
        opened_at="2026-05-05T12:00:00Z",
        resolved_at=None,
        rule="r",
        message="m",
        evidence={"level": Severity.INFO},
    )
    text = alert.model_dump_json()
    assert '"kind":"drain_time"' in text
    assert '"severity":"critical"' in text
    assert '"escalations":[{"at":"2026-05-05T12:00:00Z","severity":"warning"}]' in text
    assert '"evidence":{"level":"info"}' in text
    assert Alert.model_validate_json(text).severity is Severity.CRITICAL
    assert type(alert.model_dump(mode="json")["severity"]) is str


@pytest.mark.parametrize("site", SITES)
def test_replay_outputs_unchanged(site: str) -> None:
    """ALERTS.jsonl and DUTIES.jsonl are byte-identical to the expected files.

    Regenerate (only for an intended change of the outputs) with::

        siltwatch replay examples/SITE-storm.csv --site examples/SITE-site.toml \\
            --inspections examples/SITE-inspections.csv --site-log examples/SITE-site-log.csv \\
            --alerts-out tests/foundation/replay_expected/SITE.ALERTS.jsonl \\
            --duties-out tests/foundation/replay_expected/SITE.DUTIES.jsonl
    """
    result = replay(site)
    assert result.alerts_jsonl() == (EXPECTED / f"{site}.ALERTS.jsonl").read_text("utf-8")
    assert result.duties_jsonl() == (EXPECTED / f"{site}.DUTIES.jsonl").read_text("utf-8")


@pytest.mark.parametrize("site", SITES)
def test_replay_lines_round_trip_with_plain_strings(site: str) -> None:
    result = replay(site)
    for line in result.alerts_jsonl().splitlines():
        assert Alert.model_validate_json(line).model_dump_json() == line
        data = json.loads(line)
        assert registry.alert_spec(data["kind"]) is not None
        assert data["severity"] in {m.value for m in Severity}
        assert all(e["severity"] in {m.value for m in Severity} for e in data["escalations"])
    for line in result.duties_jsonl().splitlines():
        assert Duty.model_validate_json(line).model_dump_json() == line
        data = json.loads(line)
        assert described_duty(data["kind"], data["reason"])
