"""Driver parameters as one tagged union, and building a driver from them.

Why here: the agent's TOML names a driver ``kind`` and its parameters; the
union lets pydantic validate each kind's own keys (so a typo in a Modbus
parameter is reported at the exact key), and :func:`build_driver` is the one
place that knows which class serves which kind.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field

from hardware.analog import AnalogParams, AnalogSensor
from hardware.base import Driver
from hardware.calibrated import CalibratedDriver
from hardware.calibration import LinearCalibration, PolynomialCalibration
from hardware.modbus import ModbusParams, ModbusSensor
from hardware.rain_gauge import TippingBucketGauge, TippingBucketParams
from hardware.simulated import RecordingPlayer, SimulatedParams, SyntheticStorm
from hardware.ultrasonic import MaxBotixRanger, UltrasonicParams

DriverParams = Annotated[
    TippingBucketParams | AnalogParams | ModbusParams | UltrasonicParams | SimulatedParams,
    Field(discriminator="kind"),
]


def _utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class DriverContext:
    """What drivers may need from their host: clocks, a state file, a GPIO factory."""

    state_db: Path
    now: Callable[[], datetime] = _utc_now
    monotonic: Callable[[], float] = time.monotonic
    pin_factory: Any = None


def build_driver(
    sensor_id: str,
    params: DriverParams,
    unit: str,
    calibration: LinearCalibration | PolynomialCalibration | None,
    context: DriverContext,
) -> Driver:
    """The driver for ``params``, wrapped with the sensor's calibration and unit."""
    driver: Driver
    if isinstance(params, TippingBucketParams):
        driver = TippingBucketGauge(
            sensor_id,
            params,
            context.state_db,
            pin_factory=context.pin_factory,
            monotonic=context.monotonic,
        )
    elif isinstance(params, AnalogParams):
        driver = AnalogSensor(params)
    elif isinstance(params, ModbusParams):
        driver = ModbusSensor(params)
    elif isinstance(params, UltrasonicParams):
        driver = MaxBotixRanger(params)
    elif params.mode == "recording":
        driver = RecordingPlayer(params, unit)
    else:
        driver = SyntheticStorm(params, context.now)
    return CalibratedDriver(driver, unit, calibration)
