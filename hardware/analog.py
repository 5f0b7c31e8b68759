"""Analog sensors through an ADS1115: 4-20 mA loops over a shunt, and 0-5 V outputs.

The driver reports the electrical quantity (mA or V) as the sample value with
``uncalibrated`` set; :class:`hardware.calibrated.CalibratedDriver` turns it
into NTU, metres, ... and clears the flag.

- 4-20 mA (pressure transducers for water level, many turbidity transmitters):
  the loop current flows through a precision shunt to ground; the ADC reads
  ``V = I * R``. 150 ohm keeps 20 mA at 3.0 V, inside a 3.3 V-powered ADS1115's
  input range (inputs must stay below VDD + 0.3 V). Below 3.6 mA or above 21 mA
  is a fault by NAMUR NE 43 (broken wire, failed transmitter): ``sensor_fault``.
- 0-5 V outputs (an OBS3+ on its 5 V range, MaxBotix analog): a resistor divider
  brings 5 V below VDD; ``divider_ratio`` = (R1 + R2) / R2 undoes it.
- A conversion at either rail (+-32767 counts) means the input exceeded the
  chosen full-scale range: ``out_of_range``.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from hardware.ads1115 import ADS1115, DATA_RATE, PGA_FSR, I2CBus, counts_to_volts
from hardware.base import Sample
from siltwatch.schema import QualityFlag

LOOP_FAULT_LOW_MA = 3.6
LOOP_FAULT_HIGH_MA = 21.0


class AnalogParams(BaseModel):
    """Driver parameters (``kind = "ads1115"``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["ads1115"] = "ads1115"
    i2c_bus: int = Field(default=1, ge=0, description="/dev/i2c-N (1 on a Raspberry Pi)")
    address: int = Field(default=0x48, ge=0x48, le=0x4B, description="ADDR pin: 0x48-0x4B")
    channel: int | Literal["diff01"] = 0
    signal: Literal["current_4_20", "voltage"] = "current_4_20"
    shunt_ohms: float = Field(default=150.0, gt=0, description="4-20 mA shunt resistor")
    divider_ratio: float = Field(default=1.0, ge=1.0, description="(R1+R2)/R2 of a divider")
    fsr: float = Field(default=4.096, description="PGA full-scale range, volts")
    data_rate: int = Field(default=128, description="samples per second")
    oversample: int = Field(default=1, ge=1, le=32, description="median of this many conversions")

    def model_post_init(self, __context: Any) -> None:
        if self.fsr not in PGA_FSR:
            raise ValueError(f"fsr must be one of {sorted(PGA_FSR)}")
        if self.data_rate not in DATA_RATE:
            raise ValueError(f"data_rate must be one of {sorted(DATA_RATE)}")


class AnalogSensor:
    """One ADS1115 input, read as loop current (mA) or sensor voltage (V)."""

    def __init__(
        self,
        params: AnalogParams,
        bus: I2CBus | None = None,
        *,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.params = params
        self._own_bus = bus is None
        if bus is None:
            from smbus2 import SMBus  # only on a Pi with I2C enabled

            bus = SMBus(params.i2c_bus)
        self.bus = bus
        self.adc = ADS1115(bus, params.address, sleep=sleep)

    def read(self) -> Sample:
        p = self.params
        counts = statistics.median_low(
            [self.adc.read_counts(p.channel, p.fsr, p.data_rate) for _ in range(p.oversample)]
        )
        volts = counts_to_volts(counts, p.fsr)
        flags = {QualityFlag.UNCALIBRATED}
        if abs(counts) >= 32767:
            flags.add(QualityFlag.OUT_OF_RANGE)
        if p.signal == "current_4_20":
            milliamps = volts / p.shunt_ohms * 1000.0
            if not LOOP_FAULT_LOW_MA <= milliamps <= LOOP_FAULT_HIGH_MA:
                flags.add(QualityFlag.SENSOR_FAULT)
            return Sample(value=milliamps, unit="mA", raw=milliamps, quality=frozenset(flags))
        sensor_volts = volts * p.divider_ratio
        return Sample(value=sensor_volts, unit="V", raw=sensor_volts, quality=frozenset(flags))

    def close(self) -> None:
        if self._own_bus:
            close = getattr(self.bus, "close", None)
            if close is not None:
                close()
