"""Wrap any driver with the sensor's calibration and declared unit.

Why a wrapper: calibration belongs to the probe (it is refitted in the field),
not to the driver type; the same ADS1115 driver serves a turbidity probe and a
level transducer with different curves.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from hardware.base import Driver, Sample
from hardware.calibration import LinearCalibration, PolynomialCalibration
from siltwatch.schema import QualityFlag

log = logging.getLogger(__name__)


@dataclass(eq=False)
class CalibratedDriver:
    """``read()`` = the driver's sample, calibrated into ``unit``.

    - with a calibration: value = calibration(driver value); raw = driver value;
      ``uncalibrated`` cleared; ``out_of_range`` when outside the calibration's range.
    - without one: the driver's value as is; flagged ``uncalibrated`` when the
      driver's unit is not the declared unit (the number is volts, not NTU).
    """

    driver: Driver
    unit: str
    calibration: LinearCalibration | PolynomialCalibration | None = None
    _warned: bool = field(default=False, init=False, repr=False)

    def read(self) -> Sample:
        sample = self.driver.read()
        if self.calibration is None:
            flags = set(sample.quality)
            if sample.unit != self.unit:
                flags.add(QualityFlag.UNCALIBRATED)
                if not self._warned:
                    log.warning(
                        "sensor declared in %s but its driver reads %s and no calibration is "
                        "configured: readings are flagged uncalibrated",
                        self.unit,
                        sample.unit,
                    )
                    self._warned = True
            raw = sample.raw if sample.raw is not None else sample.value
            return Sample(sample.value, self.unit, raw, frozenset(flags), sample.commit)
        value = self.calibration.apply(sample.value)
        flags = set(sample.quality) - {QualityFlag.UNCALIBRATED}
        if not self.calibration.in_range(value):
            flags.add(QualityFlag.OUT_OF_RANGE)
        return Sample(value, self.unit, sample.value, frozenset(flags), sample.commit)

    def close(self) -> None:
        self.driver.close()
