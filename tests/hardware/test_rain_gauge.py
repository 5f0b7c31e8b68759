"""Tipping-bucket gauge with gpiozero's MockFactory: tips, chatter, reboots."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from gpiozero.pins.mock import MockFactory

from hardware.rain_gauge import TippingBucketGauge, TippingBucketParams

PIN = 17


class FakeMonotonic:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def factory() -> Iterator[MockFactory]:
    f = MockFactory()
    yield f
    f.close()


def make_gauge(
    db: Path, factory: MockFactory, clock: FakeMonotonic, debounce_s: float = 0.05
) -> TippingBucketGauge:
    params = TippingBucketParams(pin=PIN, mm_per_tip=0.2, debounce_s=debounce_s)
    return TippingBucketGauge("rain", params, db, pin_factory=factory, monotonic=clock)


def tip(factory: MockFactory, clock: FakeMonotonic, after_s: float = 1.0) -> None:
    """One reed-switch closure (pull-up: closed = low), ``after_s`` after the last edge."""
    clock.t += after_s
    factory.pin(PIN).drive_low()
    clock.t += 0.005
    factory.pin(PIN).drive_high()


def store(db: Path, gauge: TippingBucketGauge) -> float:
    """What the agent does: read, then commit the driver state with the reading."""
    sample = gauge.read()
    assert sample.commit is not None
    with sqlite3.connect(db) as conn:
        sample.commit(conn)
    return sample.value


def test_each_tip_adds_depth(tmp_path: Path, factory: MockFactory) -> None:
    clock = FakeMonotonic()
    gauge = make_gauge(tmp_path / "g.sqlite", factory, clock)
    for _ in range(4):
        tip(factory, clock)
    sample = gauge.read()
    assert sample.value == pytest.approx(0.8) and sample.unit == "mm" and sample.raw == 4.0
    gauge.close()


def test_chatter_within_the_debounce_window_counts_once(
    tmp_path: Path, factory: MockFactory
) -> None:
    clock = FakeMonotonic()
    gauge = make_gauge(tmp_path / "g.sqlite", factory, clock, debounce_s=0.05)
    pin = factory.pin(PIN)
    clock.t += 1
    for _ in range(5):  # one tip bouncing: 5 closures 4 ms apart
        pin.drive_low()
        clock.t += 0.002
        pin.drive_high()
        clock.t += 0.002
    assert gauge.read().raw == 1.0
    tip(factory, clock, after_s=0.06)  # a real second tip just outside the window
    assert gauge.read().raw == 2.0
    gauge.close()


def test_depth_is_per_interval(tmp_path: Path, factory: MockFactory) -> None:
    db = tmp_path / "g.sqlite"
    clock = FakeMonotonic()
    gauge = make_gauge(db, factory, clock)
    tip(factory, clock)
    tip(factory, clock)
    assert store(db, gauge) == pytest.approx(0.4)
    assert store(db, gauge) == 0.0
    tip(factory, clock)
    assert store(db, gauge) == pytest.approx(0.2)
    gauge.close()


def test_reboot_mid_interval_keeps_the_count_exactly(tmp_path: Path) -> None:
    db = tmp_path / "g.sqlite"
    clock = FakeMonotonic()
    before = MockFactory()
    gauge = make_gauge(db, before, clock)
    tip(before, clock)
    assert store(db, gauge) == pytest.approx(0.2)  # interval 1 reported
    for _ in range(3):
        tip(before, clock)  # interval 2: 3 tips, then the power goes
    gauge.close()
    before.close()

    after = MockFactory()
    gauge = make_gauge(db, after, clock)  # reboot
    tip(after, clock)
    tip(after, clock)
    sample = gauge.read()
    assert sample.raw == 5.0 and sample.value == pytest.approx(1.0)  # 3 + 2, nothing lost
    gauge.close()
    after.close()


def test_crash_between_read_and_store_neither_loses_nor_doubles(
    tmp_path: Path, factory: MockFactory
) -> None:
    db = tmp_path / "g.sqlite"
    clock = FakeMonotonic()
    gauge = make_gauge(db, factory, clock)
    tip(factory, clock)
    tip(factory, clock)
    lost = gauge.read()  # read, but the reading never reached the outbox (crash)
    assert lost.raw == 2.0
    tip(factory, clock)
    assert store(db, gauge) == pytest.approx(0.6)  # the 2 unstored tips are reported now
    assert lost.commit is not None
    with sqlite3.connect(db) as conn:  # a stale commit must not rewind the counter
        lost.commit(conn)
    assert gauge.read().raw == 0.0
    gauge.close()
