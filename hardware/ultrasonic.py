"""Ultrasonic ranger over a dry sediment trap: sediment depth = mount height - distance.

A MaxBotix sensor (HRXL-MaxSonar: TTL serial "R" + 4 digits in mm + CR, 9600
8N1; LV-MaxSonar: "R" + 3 digits in inches) looks straight down at the trap
floor from a fixed mount. Sediment depth is the mount height above the
original floor minus the measured distance.

Each reading is the median of the frames the sensor sent over ``window_s``:
wind, rain drops and vegetation make single frames jump. HRXL models report
their maximum range (e.g. 5000 mm) when no target is seen: that is
``sensor_fault``, not a depth. A distance longer than the mount height (the
floor eroded or the mount moved) is reported clamped at 0 with
``out_of_range``.
"""

from __future__ import annotations

import os
import re
import statistics
import termios
import time
from collections.abc import Callable
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from hardware.base import Sample, SensorReadError
from siltwatch.schema import QualityFlag

_FRAME = re.compile(rb"R(\d{3,4})\r")
_BAUD = {9600: termios.B9600, 19200: termios.B19200, 57600: termios.B57600}
_MM_PER_UNIT = {"mm": 1.0, "cm": 10.0, "in": 25.4}


class UltrasonicParams(BaseModel):
    """Driver parameters (``kind = "maxbotix_serial"``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["maxbotix_serial"] = "maxbotix_serial"
    serial_port: str = "/dev/serial0"
    baudrate: int = 9600
    frame_unit: Literal["mm", "cm", "in"] = "mm"
    mount_height_mm: float = Field(gt=0, description="sensor face to original trap floor")
    max_range_mm: float = Field(default=5000.0, gt=0, description="no-target report of the model")
    window_s: float = Field(default=1.0, gt=0, description="collect frames this long per read")
    min_frames: int = Field(default=3, ge=1)


def parse_frames(buffer: bytes) -> tuple[list[int], bytes]:
    """Complete ``R####\\r`` frames in ``buffer`` and the unparsed tail.

    Bytes before a frame that do not form one (line noise, a frame cut at start
    of reading) are skipped.
    """
    values = [int(m.group(1)) for m in _FRAME.finditer(buffer)]
    last_cr = buffer.rfind(b"\r")
    return values, buffer[last_cr + 1 :] if last_cr >= 0 else buffer[-16:]


def depth_from_distance(
    distance_mm: float, mount_height_mm: float
) -> tuple[float, frozenset[QualityFlag]]:
    """Sediment depth (mm) and flags from a measured distance."""
    depth = mount_height_mm - distance_mm
    if depth < 0:
        return 0.0, frozenset({QualityFlag.OUT_OF_RANGE})
    return depth, frozenset()


class ByteSource(Protocol):
    def read_available(self) -> bytes: ...

    def close(self) -> None: ...


class SerialPort:
    """A raw, non-blocking tty at 8N1 using only termios (no pyserial on the Pi needed)."""

    def __init__(self, path: str, baudrate: int = 9600) -> None:
        self.fd = os.open(path, os.O_RDONLY | os.O_NOCTTY | os.O_NONBLOCK)
        attrs = termios.tcgetattr(self.fd)
        attrs[0] = 0  # iflag: no CR/NL translation, no flow control
        attrs[1] = 0  # oflag
        attrs[2] = termios.CS8 | termios.CREAD | termios.CLOCAL  # 8N1
        attrs[3] = 0  # lflag: raw (no canonical line editing, no echo)
        attrs[4] = attrs[5] = _BAUD[baudrate]
        termios.tcsetattr(self.fd, termios.TCSANOW, attrs)

    def read_available(self) -> bytes:
        try:
            return os.read(self.fd, 4096)
        except BlockingIOError:
            return b""

    def close(self) -> None:
        os.close(self.fd)


class MaxBotixRanger:
    """Median distance over a window of serial frames, turned into sediment depth (mm)."""

    def __init__(
        self,
        params: UltrasonicParams,
        source: ByteSource | None = None,
        *,
        sleep: Callable[[float], None] = time.sleep,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.params = params
        if source is None:
            source = SerialPort(params.serial_port, params.baudrate)
        self.source = source
        self._sleep = sleep
        self._monotonic = monotonic
        self._tail = b""

    def read_distances(self) -> list[int]:
        """Frames (in the sensor's unit) received during one window."""
        self.source.read_available()  # drop bytes buffered since the last read: stale frames
        self._tail = b""
        values: list[int] = []
        deadline = self._monotonic() + self.params.window_s
        while self._monotonic() < deadline:
            self._sleep(0.05)
            frames, self._tail = parse_frames(self._tail + self.source.read_available())
            values += frames
        return values

    def read(self) -> Sample:
        p = self.params
        frames = self.read_distances()
        if len(frames) < p.min_frames:
            raise SensorReadError(
                f"MaxBotix on {p.serial_port}: {len(frames)} frames in {p.window_s} s "
                f"(need {p.min_frames}); check wiring and baud rate"
            )
        distance_mm = statistics.median(frames) * _MM_PER_UNIT[p.frame_unit]
        if distance_mm >= p.max_range_mm:
            return Sample(0.0, "mm", distance_mm, frozenset({QualityFlag.SENSOR_FAULT}))
        depth, flags = depth_from_distance(distance_mm, p.mount_height_mm)
        return Sample(depth, "mm", distance_mm, flags)

    def close(self) -> None:
        self.source.close()
