"""The registry of detection descriptions (siltwatch/detections/).

What a detection kind *is* is said once, in its description; routing, messages,
dashboards, the rule catalogue and the configuration checks loop over the
registry. These tests hold the registry to what the engine really does: every
kind it raises is described once, the typed evidence is what the detectors
write, the rule keys described are the ones the detectors read, and a
description dropped into the package is picked up by everything.
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
import re
import sys
import textwrap
from collections.abc import Iterator
from datetime import UTC
from pathlib import Path

import pytest

import siltwatch.detections as registry
from alerts.messages import how_much
from alerts.routing import NoticeEvent, officer_cares, route
from analytics.detectors import build_detectors
from analytics.engine import Engine
from siltwatch.config import cross_reference_problems, load_site
from siltwatch.detections.base import Officer
from siltwatch.detections.inspections import INSPECTION
from siltwatch.detections.paperwork import Requirement
from siltwatch.officials import OFFICER_TITLE
from siltwatch.rulepacks import PENDING_RULE_KEYS, RULE_KEYS, SCOPE_RULE_KEYS, site_rules
from siltwatch.schema import Alert

ROOT = Path(__file__).resolve().parents[2]
EXPECTED = Path(__file__).resolve().parent / "replay_expected"
SITE = ROOT / "examples" / "lake-george-site.toml"


def expected_alerts() -> list[Alert]:
    return [
        Alert.model_validate_json(line)
        for path in sorted(EXPECTED.glob("*.ALERTS.jsonl"))
        for line in path.read_text().splitlines()
    ]


def test_every_kind_is_described_once() -> None:
    described = registry.alert_kinds()
    assert len(described) == len(set(described))
    for d in registry.descriptions():
        for duty in d.duties:
            assert registry.duty_spec(duty.kind) is duty
            if duty.overdue is not None:
                assert duty.overdue_kind == f"{duty.kind}_overdue" in described
    with pytest.raises(AttributeError, match="raises no alert"):
        _ = registry.duty_spec("appeal").overdue_kind  # type: ignore[union-attr]


def test_descriptions_are_in_build_order_and_name_their_engine_module() -> None:
    found = registry.descriptions()
    assert [d.order for d in found] == sorted(d.order for d in found)
    assert len({d.order for d in found}) == len(found), "two descriptions share an order"
    assert found[0].key == "sensor_health"  # the quality screen comes before every detector
    for d in found:
        assert d.engine_module.startswith("analytics.")


def test_each_description_module_says_what_it_detects_and_cites_its_law() -> None:
    """Said once, in the module's docstring (not again in the description): a section of
    the law (Lake Lure's are numbered without §) or siltwatch's own."""
    modules = [i.name for i in pkgutil.iter_modules(registry.__path__) if i.name != "base"]
    assert len(modules) >= len(registry.descriptions())
    for name in modules:
        doc = importlib.import_module(f"{registry.__name__}.{name}").__doc__ or ""
        cited = "§" in doc or "Lake Lure 96." in doc or "siltwatch" in doc
        assert doc.strip() and cited, name


def test_two_descriptions_sharing_an_order_are_refused() -> None:
    """``order`` decides the byte order of a replay's output, so it may not be shared."""
    found = list(registry.descriptions())
    twin = dataclasses.replace(found[1], key="twin", alerts=(), duties=(), rule_keys=())
    with pytest.raises(ValueError, match=f"share order {found[1].order}"):
        registry._check_unique([*found, twin])


def test_the_evidence_the_detectors_write_reads_as_its_model() -> None:
    alerts = expected_alerts()
    assert {a.kind for a in alerts} >= {"turbidity_contrast", "sediment_capacity"}
    for alert in alerts:
        spec = registry.alert_spec(alert.kind)
        assert spec is not None, alert.kind
        assert spec.read_evidence(alert.evidence) is not None, (alert.id, alert.evidence)
        if spec.regulatory and alert.kind != INSPECTION.overdue_kind:
            assert how_much(alert, UTC), alert.id  # the SMS says by how much


def test_evidence_from_another_release_gives_no_amount_rather_than_a_guess() -> None:
    alert = expected_alerts()[0]
    renamed = dict(alert.evidence)
    renamed["downstream_ntu"] = renamed.pop("downstream_level")
    assert how_much(alert, UTC)
    assert how_much(alert.model_copy(update={"evidence": renamed}), UTC) == ""
    unknown = alert.model_copy(update={"kind": "ph_range"})
    assert how_much(unknown, UTC) == "" and not officer_cares(unknown)


def _rule_keys_in(source: str) -> set[str]:
    reads = (
        r"""(?:rules\.(?:get|number|require)\(|Deadline\.of\(rules, )\s*f?["']([a-z_]+\.[a-z_.]+)"""
    )
    return set(re.findall(reads, source))


def test_the_rule_keys_described_are_those_the_detectors_read() -> None:
    read: set[str] = set()
    for path in (ROOT / "analytics").glob("*.py"):
        read |= _rule_keys_in(path.read_text())
    # Read through the requirement's own flag (analytics/paperwork.py ``required``).
    assert (
        "rules.get(r.rule_key) for r in Requirement"
        in (ROOT / "analytics/paperwork.py").read_text()
    )
    read |= {r.rule_key for r in Requirement}
    described = {rk.name for rk in registry.rule_keys()}
    assert read, "the scan found no rule reads: the pattern is stale"
    # Keys read through a computed name (f"drain.limit_h.{type}", the limit tables) are prefixes.
    assert read <= described | {"drain.limit_h.", "turbidity.limit."}
    unread = {
        k
        for k in described
        if k not in read
        and not any(k.startswith(p) for p in ("drain.limit_h.", "turbidity.limit."))
    }
    # Read elsewhere than analytics/: the limit choice and the narrative standard (rulemath).
    assert unread <= {"turbidity.standard"}, unread
    # officer.title is read by the messages (siltwatch/officials.py), not a detection.
    others = {rk.name for rk in (*PENDING_RULE_KEYS, *SCOPE_RULE_KEYS, OFFICER_TITLE)}
    assert set(RULE_KEYS) == described | others
    assert not described & {rk.name for rk in PENDING_RULE_KEYS}


def test_detectors_are_built_in_registry_order() -> None:
    site = load_site(SITE)
    engine = Engine(site)
    modules = [type(d).__module__ for d in engine.detectors.values()]
    order = [d.engine_module for d in registry.descriptions()]
    firsts = [m for i, m in enumerate(modules) if m in order and m not in modules[:i]]
    assert firsts == [m for m in order if m in modules]
    assert len(build_detectors(site, engine.ctx)) == len(engine.detectors)


PH = """
    from siltwatch.detections.base import Description, Officer, Section, regulatory
    from siltwatch.rulekeys import number
    from tests.ph.detections.ph_range import PhEvidence, amount  # the pH fixture's evidence

    PH_RANGE = regulatory("ph_range", "pH out of range", PhEvidence, amount, Officer.ON_OPEN)

    DESCRIPTION = Description(
        key="ph", order=25, engine_module="analytics.ph_for_test",
        alerts=(PH_RANGE,),
        rule_keys=(number("ph.low"), number("ph.high")),
        section=Section("ph_probes", "pH probe", sensor_refs=(("sensor", "ph"),)),
    )
"""


@pytest.fixture
def ph_description(tmp_path: Path) -> Iterator[None]:
    """A description dropped into the package (as a new module would be)."""
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "ph.py").write_text(textwrap.dedent(PH))
    registry.__path__.append(str(extra))
    registry.rescan()
    try:
        yield
    finally:
        registry.__path__.remove(str(extra))
        sys.modules.pop("siltwatch.detections.ph", None)
        registry.rescan()


def test_a_new_description_reaches_routing_messages_and_config_checks(ph_description: None) -> None:
    keys = [d.key for d in registry.descriptions()]
    assert keys.index("ph") == keys.index("drain") + 1  # by its order (25, after drain's 20)
    site = load_site(SITE)
    alert = Alert.model_validate(
        {
            "id": "ph_range:p1:1",
            "kind": "ph_range",
            "subject": "p1",
            "severity": "warning",
            "escalations": [{"at": "2026-05-05T16:26:00Z", "severity": "warning"}],
            "opened_at": "2026-05-05T16:26:00Z",
            "resolved_at": None,
            "rule": "test",
            "message": "pH 9.5",
            "evidence": {"sensor": "p1", "ph": 9.5, "low": 6.5, "high": 8.5},
        }
    )
    assert how_much(alert, UTC) == "pH 9.5 outside 6.5-8.5"
    assert officer_cares(alert)  # ON_OPEN: the officer hears it from its opening
    officers = [c for c in site.contacts if c.role == "officer"]
    assert officers and set(officers) <= set(
        route(site, NoticeEvent.OPENED, "2026-05-05T16:26:00Z", alert).recipients
    )
    data = {"ph_probes": [{"id": "p1", "sensor": "nowhere"}, {"id": "p1", "sensor": "x"}]}
    problems = dict(cross_reference_problems(data))
    assert "no sensor 'nowhere'" in problems["ph_probes[0].sensor"]
    assert "duplicate pH probe id 'p1'" in problems["ph_probes[1].id"]


def test_officer_policies_follow_the_law() -> None:
    """Regulatory kinds reach the officer; siltwatch's own diagnostics never do."""
    for kind in registry.alert_kinds():
        spec = registry.alert_spec(kind)
        assert spec is not None
        assert spec.regulatory == (spec.officer != Officer.NEVER), kind


def test_dashboard_rows_come_from_the_descriptions_in_their_position() -> None:
    rows = registry.dashboard_rows(load_site(SITE), site_rules(load_site(SITE)))
    assert [title for title, _panels in rows] == [
        "Turbidity",
        "Rain",
        "Infiltration practices",
        "Sediment traps",
    ]
    assert all(panels for _title, panels in rows)
