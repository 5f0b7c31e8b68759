"""A pH probe and a pH range detection, added as three modules and nothing else.

The fixture (tests/ph/registered.py) is what shipping them would be: a sensor kind
(siltwatch/sensorkinds/), a description (siltwatch/detections/) and a detector
(analytics/). Each test shows one thing a user sees follow from those three files:
the site file accepts the probe, ingest refuses an impossible pH, the dashboard and
the console chart it, a replay raises the alert, and its SMS is one segment.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from alerts.gsm7 import is_gsm7, segments
from alerts.messages import SiteLabel, sms_text
from alerts.routing import NoticeEvent, route
from analytics.events import AlertEvent, SensorReading
from console.charts.plots import site_charts, subject_chart
from dashboards.build import build_dashboard
from ingest.recordings.replay import replay_site
from ingest.store.from_url import open_store
from siltwatch.config import ConfigError, SiteConfig, load_site
from siltwatch.sensorkinds import impossible
from siltwatch.timefmt import utc_iso
from tests.ph.registered import ph_registered

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "lake-george-site.toml"
PROBE = """
[[stations]]
id = "outfall-ph"
name = "Outfall pH"

[[stations.sensors]]
id = "ph-1"
kind = "ph"
unit = "{unit}"
interval_s = 300
"""
T0 = datetime(2026, 5, 4, 13, 0, tzinfo=UTC)


def _ms(at: datetime) -> int:
    return round(at.timestamp() * 1000)


def site_file(tmp_path: Path, unit: str = "pH") -> Path:
    path = tmp_path / "site.toml"
    path.write_text(EXAMPLE.read_text() + PROBE.format(unit=unit))
    return path


@pytest.fixture
def ph() -> Iterator[None]:
    with ph_registered():
        yield


@pytest.fixture
def site(ph: None, tmp_path: Path) -> SiteConfig:
    return load_site(site_file(tmp_path))


def readings(values: list[float]) -> list[SensorReading]:
    """One pH reading every 5 minutes from T0."""
    return [
        SensorReading("ph-1", _ms(T0 + timedelta(minutes=5 * i)), v) for i, v in enumerate(values)
    ]


def test_without_the_fixture_a_ph_sensor_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        load_site(site_file(tmp_path))
    assert (
        "stations[3].sensors[0].kind: expected 'rain', 'sediment_depth', 'turbidity' or "
        "'water_level', got 'ph'"
    ) in str(err.value)


def test_the_site_file_takes_the_probe_and_checks_its_unit(ph: None, tmp_path: Path) -> None:
    assert load_site(site_file(tmp_path)).sensor("ph-1").kind == "ph"
    with pytest.raises(ConfigError) as err:
        load_site(site_file(tmp_path, unit="NTU"))
    assert "unit 'NTU' does not fit a ph sensor (expected one of pH)" in str(err.value)


def test_ingest_refuses_a_ph_beyond_the_scale(ph: None) -> None:
    assert impossible("ph", 7.2, "pH") is None
    assert impossible("ph", 15.0, "pH") == "15 pH, impossible for pH (possible: 0 .. 14 pH)"


def test_the_dashboard_draws_the_probe_in_its_kinds_panel(site: SiteConfig) -> None:
    panels = build_dashboard(site)["panels"]
    titles = [p["title"] for p in panels]
    assert titles[-2:] == ["Sensors", "ph-1: pH"]
    (query,) = [t["query"] for t in panels[-1]["targets"]]
    assert "ph-1" in query and "mean" in query


def test_the_console_charts_the_probe(site: SiteConfig, tmp_path: Path) -> None:
    store = open_store(tmp_path / "store.db")
    try:
        store.add_readings(site.site.id, [("outfall-ph", r) for r in readings([7.1, 7.3, 9.4])], 0)
        start, end = _ms(T0 - timedelta(hours=1)), _ms(T0 + timedelta(hours=1))
        charts = {c.id: c for c in site_charts(site, store, start, end)}
        chart = charts["sensor-ph-1"]
        assert (chart.title, chart.unit) == ("ph-1: pH", "pH")
        assert [v for _t, v in chart.series[0].points] == [7.1, 7.3, 9.4]
        assert subject_chart(site, store, "ph-1", start, end) == chart
    finally:
        store.close()


def test_a_replay_raises_a_sustained_ph_excursion_and_texts_it_in_one_segment(
    site: SiteConfig,
) -> None:
    # 25 min outside (not yet), back in range, then 35 min outside: one alert, at 30 min.
    values = [7.0] + [9.2] * 6 + [7.4] + [9.5] * 8 + [7.2]
    result = replay_site(site, readings(values))
    alerts = [a for a in result.alerts if a.kind == "ph_range"]
    assert len(alerts) == 1
    (alert,) = alerts
    assert (alert.subject, alert.severity) == ("ph-1", "warning")
    assert alert.opened_at == T0 + timedelta(minutes=5 * 8 + 30)
    assert alert.resolved_at == T0 + timedelta(minutes=5 * 16)
    opened = next(
        e for e in result.events if isinstance(e, AlertEvent) and e.alert.kind == "ph_range"
    )
    note = route(site, NoticeEvent.OPENED, utc_iso(opened.at), opened.alert)
    sms = sms_text(note, SiteLabel.of(site))
    assert "pH 9.5 outside 6.5-8.5" in sms
    assert is_gsm7(sms) and segments(sms) == 1, sms
