"""A driver that is opened on first use and reopened after it failed to open.

Why: one missing piece of hardware (no I2C bus enabled, an RS-485 adapter
unplugged, pyserial not installed) must not take the whole station down in a
systemd restart loop. Opening errors become read errors for that sensor only;
the other sensors keep sampling, and the sensor recovers when the hardware
appears.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from hardware.base import Driver, Sample, SensorReadError

log = logging.getLogger(__name__)


class LazyDriver:
    def __init__(self, sensor_id: str, build: Callable[[], Driver]) -> None:
        self.sensor_id = sensor_id
        self._build = build
        self._driver: Driver | None = None
        self.open_failures = 0

    def open(self) -> Driver:
        if self._driver is None:
            try:
                self._driver = self._build()
            except Exception as exc:  # any failure to open is this sensor's problem only
                self.open_failures += 1
                if self.open_failures == 1 or self.open_failures % 100 == 0:
                    log.error(
                        "sensor %s: cannot open its driver (%s: %s); will retry",
                        self.sensor_id,
                        type(exc).__name__,
                        exc,
                    )
                raise SensorReadError(f"driver not available: {exc}") from exc
        return self._driver

    def read(self) -> Sample:
        return self.open().read()

    def close(self) -> None:
        if self._driver is not None:
            self._driver.close()
            self._driver = None
