"""The agent without a broker: time stamping and clock flags, payload building,
backoff, configuration errors, health probes, and the rain gauge's exactly-once
hand-off into the outbox."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from edge.agent import Agent, main
from edge.clock import ClockSync, ManualClock, ScaledClock
from edge.config import AgentConfig, load_config
from edge.health import HealthProbe, cpu_temp_c
from edge.outbox import Outbox
from edge.publisher import Publisher
from hardware.base import Driver, Sample, SensorReadError
from siltwatch import backoff
from siltwatch.configerrors import ConfigError
from siltwatch.schema import QualityFlag, Reading, ReadingBatch
from tests.edge.helpers import agent_toml

T0 = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)


class FakeDriver:
    def __init__(self, values: list[float | None]) -> None:
        self.values = values

    def read(self) -> Sample:
        value = self.values.pop(0)
        if value is None:
            raise SensorReadError("timeout")
        return Sample(value, "NTU", value)

    def close(self) -> None:
        pass


def config(tmp_path: Path, **kw: object) -> AgentConfig:
    path = tmp_path / "agent.toml"
    path.write_text(agent_toml(outbox=tmp_path / "o.sqlite", port=1883, **kw))  # type: ignore[arg-type]
    return load_config(path)


def fake_agent(cfg: AgentConfig, clock: ManualClock, drivers: dict[str, Driver]) -> Agent:
    """An agent on ``clock`` (synced once it reads a plausible year) with these drivers."""
    return Agent(cfg, clock, clock_sync=ClockSync(clock, "year"), drivers=drivers)


def test_readings_before_clock_sync_keep_their_time_and_are_flagged(tmp_path: Path) -> None:
    clock = ManualClock(datetime(1970, 1, 1, 0, 1, tzinfo=UTC))  # Pi booted without RTC
    cfg = config(tmp_path, sensors=1)
    agent = fake_agent(cfg, clock, {"s0": FakeDriver([1.0, 2.0])})
    box = Outbox(cfg.outbox.path)
    agent.sample_once("s0", box)
    clock.set_wall(T0)  # NTP steps the clock
    agent.sample_once("s0", box)
    first, second = box.pending()
    assert first.time == "1970-01-01T00:01:00Z" and first.quality == ["clock_unsynced"]
    assert second.time == "2026-05-01T12:00:00Z" and second.quality == []


def test_failed_read_stores_nothing_and_consumes_no_seq(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    cfg = config(tmp_path, sensors=1)
    agent = fake_agent(cfg, clock, {"s0": FakeDriver([None, 5.0])})
    box = Outbox(cfg.outbox.path)
    assert agent.sample_once("s0", box) is None
    assert agent.sample_once("s0", box) == 0
    assert agent.sensors["s0"].errors == 1


def test_payload_single_reading_then_batch_with_backfilled_flag(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    cfg = config(tmp_path, sensors=2)
    box = Outbox(cfg.outbox.path)
    box.append("s1", T0, Sample(1.0, "NTU", 0.5))
    pub = Publisher(cfg, clock)
    topic, payload = pub._payload(box.pending())
    assert topic == "siltwatch/v1/site1/st1/s1/reading"
    one = Reading.model_validate_json(payload)
    assert (one.sensor, one.seq, one.value, one.raw, one.quality) == ("s1", 0, 1.0, 0.5, [])

    box.append("s0", T0 + timedelta(seconds=100), Sample(2.0, "NTU"))
    clock.advance(120)  # the first reading is now 120 s old: backfilled (> 60 s)
    topic, payload = pub._payload(box.pending())
    batch = ReadingBatch.model_validate_json(payload)
    assert topic.endswith("/s1/reading")  # the first (oldest) reading's sensor
    assert [(r.sensor, r.seq) for r in batch.readings] == [("s1", 0), ("s0", 0)]
    assert batch.readings[0].quality == [QualityFlag.BACKFILLED]
    assert batch.readings[1].quality == []


def test_backoff_grows_exponentially_is_capped_and_jittered() -> None:
    rng = random.Random(1)
    delays = [backoff.delay(n, 1.0, 60.0, jitter_fraction=0.5, rng=rng) for n in range(10)]
    for n, delay in enumerate(delays):
        base = min(60.0, 2.0**n)
        assert base / 2 <= delay <= base
    assert len({round(d, 6) for d in delays[6:]}) > 1  # capped but not in lockstep
    assert max(delays) <= 60.0


def test_config_errors_name_file_and_key_path(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text("""
site = "site1"
station = "st 1"
[[sensors]]
id = "rain"
unit = "mm"
interval_s = 0
[sensors.driver]
kind = "tipping_bucket"
pinn = 17
""")
    with pytest.raises(ConfigError) as err:
        load_config(path)
    text = "\n".join(err.value.lines)
    assert f"{path}: station:" in text
    assert f"{path}: sensors[0].interval_s:" in text
    assert f"{path}: sensors[0].driver.pinn: is not a known key (check its spelling)" in text
    assert f"{path}: sensors[0].driver.pin: is required but missing" in text
    assert main(["--config", str(path)]) == 2


def test_check_flag_validates_without_running(tmp_path: Path) -> None:
    path = tmp_path / "agent.toml"
    path.write_text(agent_toml(outbox=tmp_path / "o.sqlite", port=1883))
    assert main(["--config", str(path), "--check"]) == 0


def test_health_reports_probes_and_backlog(tmp_path: Path) -> None:
    zone = tmp_path / "temp"
    zone.write_text("48312\n")
    assert cpu_temp_c(zone) == pytest.approx(48.312)
    assert cpu_temp_c(tmp_path / "missing") is None
    clock = ManualClock(T0)
    probe = HealthProbe(tmp_path / "o.sqlite", zone, ClockSync(clock, "year"), lambda: 12.6)
    health = probe.collect(backlog=7, dropped=2)
    assert (health.battery_v, health.backlog, health.dropped) == (12.6, 7, 2)
    assert health.clock_synced is True and health.cpu_temp_c == pytest.approx(48.312)
    assert health.disk_free_mb is not None and health.disk_free_mb > 0


def test_scaled_clock_runs_faster_than_real_time() -> None:
    clock = ScaledClock(1000.0, start=T0)
    clock.sleep(50.0)  # 50 simulated seconds = 0.05 real seconds
    assert 50.0 <= clock.monotonic() < 500.0
    assert clock.now() >= T0 + timedelta(seconds=50)


def test_rain_gauge_tips_are_marked_reported_in_the_readings_transaction(
    tmp_path: Path,
) -> None:
    from gpiozero.pins.mock import MockFactory

    factory = MockFactory()
    clock = ManualClock(T0)
    path = tmp_path / "agent.toml"
    path.write_text(f"""
site = "site1"
station = "st1"
[outbox]
path = "{tmp_path / "o.sqlite"}"
[health]
clock_check = "year"
[[sensors]]
id = "rain"
unit = "mm"
interval_s = 60
[sensors.driver]
kind = "tipping_bucket"
pin = 17
""")
    cfg = load_config(path)
    agent = Agent(cfg, clock, clock_sync=ClockSync(clock, "year"), pin_factory=factory)
    box = Outbox(cfg.outbox.path)
    pin = factory.pin(17)
    for _ in range(3):
        clock.advance(1.0)
        pin.drive_low()
        pin.drive_high()
    agent.sample_once("rain", box)
    agent.sample_once("rain", box)  # no new tips: 0 mm, not 0.6 again
    rows = box.pending()
    assert [(r.value, r.raw) for r in rows] == [(pytest.approx(0.6), 3.0), (0.0, 0.0)]
    for state in agent.sensors.values():
        state.driver.close()


def test_a_driver_that_cannot_open_fails_only_its_sensor(tmp_path: Path) -> None:
    from edge.lazy_driver import LazyDriver

    attempts: list[int] = []

    def build() -> FakeDriver:
        attempts.append(1)
        if len(attempts) < 3:
            raise FileNotFoundError("/dev/i2c-1")
        return FakeDriver([7.0])

    clock = ManualClock(T0)
    cfg = config(tmp_path, sensors=2)
    agent = fake_agent(cfg, clock, {"s0": LazyDriver("s0", build), "s1": FakeDriver([1.0])})
    box = Outbox(cfg.outbox.path)
    assert agent.sample_once("s0", box) is None  # bus missing: a read error, not a crash
    assert agent.sample_once("s1", box) == 0  # the other sensor is unaffected
    assert agent.sample_once("s0", box) is None
    assert agent.sample_once("s0", box) == 0  # the hardware appeared: reopened
    assert len(attempts) == 3


def test_non_finite_values_are_not_stored(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    cfg = config(tmp_path, sensors=1)
    agent = fake_agent(cfg, clock, {"s0": FakeDriver([float("nan"), 3.0])})
    box = Outbox(cfg.outbox.path)
    assert agent.sample_once("s0", box) is None
    assert agent.sample_once("s0", box) == 0


def test_a_row_the_wire_schema_rejects_is_quarantined_not_blocking(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    cfg = config(tmp_path, sensors=1)
    box = Outbox(cfg.outbox.path)
    box.append("s0", T0, Sample(1.0, "NTU"))
    box.conn.execute("UPDATE outbox SET unit = 'a-unit-name-far-too-long' WHERE seq = 0")
    box.append("s0", T0, Sample(2.0, "NTU"))
    pub = Publisher(cfg, clock)
    pub._quarantine_invalid(box.pending())
    assert [r.seq for r in box.pending()] == [1]
    reason = box.conn.execute("SELECT reason FROM quarantine").fetchone()[0]
    assert reason.startswith("invalid: ")


def test_evictions_at_the_cap_are_reported_as_dropped_in_health(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    cfg = config(tmp_path, sensors=1, max_readings=10)
    agent = fake_agent(cfg, clock, {"s0": FakeDriver([float(i) for i in range(15)])})
    box = Outbox(cfg.outbox.path, cfg.outbox.max_readings)
    for _ in range(15):
        agent.sample_once("s0", box)
    health = agent._health(box)
    assert (health.backlog, health.dropped) == (10, 5)
