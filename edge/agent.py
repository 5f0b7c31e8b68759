"""The edge agent: sample every sensor on its own schedule, store, publish.

Entry point: :func:`main` (``python -m edge --config FILE``). The agent is
three kinds of threads around one SQLite outbox:

- one **sampler** per sensor: reads its driver every ``interval_s`` (fixed
  rate on the injected clock), stamps the reading with the Pi's time (flagged
  ``clock_unsynced`` when the clock is not trustworthy) and commits it to the
  outbox together with its sequence number;
- the **publisher** (the thread that calls :meth:`Agent.run`): sends the
  outbox to the broker and deletes only what the broker acknowledged;
- the caller's signal handler, which only sets the stop event.

On SIGTERM the samplers stop, the publisher drains the backlog for
``drain_timeout_s`` and announces ``offline``. On SIGKILL or power loss
nothing is lost: whatever was committed is sent after the restart.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import math
import signal
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from pathlib import Path
from types import FrameType

from edge.clock import Clock, ClockSync, ScaledClock, SystemClock
from edge.config import AgentConfig, SensorConfig, load_config
from edge.health import HealthProbe
from edge.lazy_driver import LazyDriver
from edge.outbox import Outbox
from edge.publisher import Publisher
from hardware.base import Driver, SensorReadError
from hardware.registry import DriverContext, build_driver
from siltwatch.configerrors import ConfigError
from siltwatch.schema import HeldReadings, QualityFlag, StationHealth

log = logging.getLogger(__name__)


@dataclass
class SensorState:
    config: SensorConfig
    driver: Driver
    errors: int = 0
    last_value: float | None = None
    stored: int = 0
    extra: dict[str, float] = field(default_factory=dict)


class Agent:
    """One station. Build it from a config and a clock; ``run()`` blocks until ``stop()``."""

    def __init__(
        self,
        config: AgentConfig,
        clock: Clock | None = None,
        *,
        clock_sync: ClockSync | None = None,
        drivers: dict[str, Driver] | None = None,
        pin_factory: object = None,
    ) -> None:
        self.config = config
        self.clock: Clock = clock or SystemClock()
        self.clock_sync = clock_sync or ClockSync(self.clock, config.health.clock_check)
        self.stop_event = threading.Event()
        context = DriverContext(
            state_db=config.outbox.path,
            now=self.clock.now,
            monotonic=self.clock.monotonic,
            pin_factory=pin_factory,
        )
        Outbox(config.outbox.path, config.outbox.max_readings).close()  # create the schema
        self.sensors: dict[str, SensorState] = {}
        for sensor in config.sensors:
            driver = (drivers or {}).get(sensor.id)
            if driver is None:
                lazy = LazyDriver(
                    sensor.id,
                    partial(
                        build_driver,
                        sensor.id,
                        sensor.driver,
                        sensor.unit,
                        sensor.calibration,
                        context,
                    ),
                )
                with contextlib.suppress(SensorReadError):
                    lazy.open()  # open now when possible: GPIO edges count from the start
                driver = lazy
            self.sensors[sensor.id] = SensorState(sensor, driver)
        self.health_probe = HealthProbe(
            outbox_path=config.outbox.path,
            thermal_zone=config.health.thermal_zone,
            clock_sync=self.clock_sync,
            battery_v=self._battery_v,
        )
        self.publisher = Publisher(config, self.clock, self._health)
        self._threads: list[threading.Thread] = []

    def _battery_v(self) -> float | None:
        name = self.config.health.battery_sensor
        return self.sensors[name].last_value if name is not None else None

    def _health(self, outbox: Outbox) -> StationHealth:
        health = self.health_probe.collect(outbox.backlog(), outbox.dropped(), outbox.quarantined())
        held = [
            HeldReadings(
                sensor=h.sensor,
                oldest_seq=h.oldest_seq,
                oldest_time=None
                if h.oldest_time is None
                else datetime.fromisoformat(h.oldest_time),
                next_seq=h.next_seq,
            )
            for h in outbox.held()
        ]
        retention = outbox.retain_s if outbox.retaining else 0.0
        return health.model_copy(update={"held": held, "retention_s": retention})

    # -- sampling --------------------------------------------------------------------

    def sample_once(self, sensor_id: str, outbox: Outbox) -> int | None:
        """Read one sensor and store the reading; its seq, or None when the read failed."""
        state = self.sensors[sensor_id]
        try:
            sample = state.driver.read()
        except SensorReadError as exc:
            state.errors += 1
            if state.errors == 1 or state.errors % 100 == 0:
                log.warning(
                    "sensor %s: no reading (%s); %d failed reads so far",
                    sensor_id,
                    exc,
                    state.errors,
                )
            return None
        if not math.isfinite(sample.value):
            state.errors += 1
            log.warning("sensor %s: driver returned %r; not a reading", sensor_id, sample.value)
            return None
        when = self.clock.now()
        extra = () if self.clock_sync.state().synced else (QualityFlag.CLOCK_UNSYNCED,)
        seq = outbox.append(sensor_id, when, sample, extra)
        state.last_value = sample.value
        state.stored += 1
        return seq

    def _sampler(self, sensor_id: str) -> None:
        state = self.sensors[sensor_id]
        interval = state.config.interval_s
        outbox = Outbox(self.config.outbox.path, self.config.outbox.max_readings)
        try:
            due = self.clock.monotonic()
            while not self.stop_event.is_set():
                wait = due - self.clock.monotonic()
                if wait > 0:
                    self.clock.wait(self.stop_event, wait)  # one wake-up per reading
                    continue
                try:
                    self.sample_once(sensor_id, outbox)
                except Exception:  # a driver bug must not end sampling for good
                    log.exception("sensor %s: unexpected error while sampling", sensor_id)
                due += interval
                behind = self.clock.monotonic() - due
                if behind > interval:
                    log.warning(
                        "sensor %s: sampling %.1f s behind; skipping ahead", sensor_id, behind
                    )
                    due = self.clock.monotonic()
        finally:
            outbox.close()

    # -- lifecycle -------------------------------------------------------------------

    def start_sampling(self) -> None:
        for sensor_id in self.sensors:
            thread = threading.Thread(
                target=self._sampler, args=(sensor_id,), name=f"sampler-{sensor_id}", daemon=True
            )
            thread.start()
            self._threads.append(thread)

    def stop(self) -> None:
        """Ask the agent to stop (safe from a signal handler)."""
        self.stop_event.set()

    def run(self) -> None:
        """Sample and publish until :meth:`stop`; then drain and close."""
        log.info(
            "station %s/%s starting: %d sensors, outbox %s",
            self.config.site,
            self.config.station,
            len(self.sensors),
            self.config.outbox.path,
        )
        self.start_sampling()
        try:
            self.publisher.run(self.stop_event, self.config.drain_timeout_s)
        finally:
            self.stop_event.set()
            for thread in self._threads:
                thread.join(timeout=10)
            for state in self.sensors.values():
                state.driver.close()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m edge", description="siltwatch edge agent: sample sensors, publish MQTT"
    )
    parser.add_argument("--config", type=Path, required=True, help="agent TOML file")
    parser.add_argument("--log-level", default="INFO", help="DEBUG, INFO, WARNING, ERROR")
    parser.add_argument("--check", action="store_true", help="validate the config and exit")
    parser.add_argument(
        "--time-scale",
        type=float,
        default=None,
        help="demo/benchmark only: run a simulated clock this many times faster than real "
        "time (readings are stamped with simulated time)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the agent; returns the process exit code (2 = bad configuration)."""
    args = _parser().parse_args(argv)
    logging.basicConfig(
        level=args.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        config = load_config(args.config)
    except ConfigError as exc:
        for line in exc.lines:
            log.error("%s", line)
        return 2
    if args.check:
        log.info("%s: configuration is valid (%d sensors)", args.config, len(config.sensors))
        return 0
    clock: Clock = SystemClock() if args.time_scale is None else ScaledClock(args.time_scale)
    agent = Agent(config, clock)

    def _on_signal(signum: int, frame: FrameType | None) -> None:
        log.info(
            "signal %d: stopping (draining the outbox for up to %.0f s)",
            signum,
            config.drain_timeout_s,
        )
        agent.stop()

    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    agent.run()
    return 0
