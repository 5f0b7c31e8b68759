"""MaxBotix serial frames, and sediment depth from distance."""

from __future__ import annotations

import pytest

from hardware.base import SensorReadError
from hardware.ultrasonic import (
    MaxBotixRanger,
    UltrasonicParams,
    depth_from_distance,
    parse_frames,
)
from siltwatch.schema import QualityFlag


def test_parse_frames_skips_noise_and_keeps_the_tail() -> None:
    values, tail = parse_frames(b"234\rR1234\rR1240\rxxR0999\rR12")
    assert values == [1234, 1240, 999]
    assert tail == b"R12"
    values, tail = parse_frames(tail + b"50\r")
    assert values == [1250] and tail == b""


def test_depth_is_mount_height_minus_distance() -> None:
    assert depth_from_distance(1200.0, 1500.0) == (300.0, frozenset())
    depth, flags = depth_from_distance(1550.0, 1500.0)
    assert depth == 0.0 and flags == frozenset({QualityFlag.OUT_OF_RANGE})


class FakeSerial:
    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks

    def read_available(self) -> bytes:
        return self.chunks.pop(0) if self.chunks else b""

    def close(self) -> None:
        pass


class FakeTime:
    def __init__(self) -> None:
        self.t = 0.0

    def sleep(self, s: float) -> None:
        self.t += s

    def monotonic(self) -> float:
        return self.t


def ranger(chunks: list[bytes], **kw: object) -> MaxBotixRanger:
    t = FakeTime()
    params = UltrasonicParams(mount_height_mm=1500.0, window_s=0.5, **kw)
    return MaxBotixRanger(params, FakeSerial(chunks), sleep=t.sleep, monotonic=t.monotonic)


def test_median_of_the_window_rejects_a_splash() -> None:
    stale = b"R0100\r"  # buffered before this read: discarded
    sample = ranger([stale, b"R1200\rR1201\r", b"R0300\r", b"R1199\rR1202\r"]).read()
    assert sample.raw == 1200.0 and sample.value == 300.0 and sample.unit == "mm"


def test_no_target_is_a_sensor_fault() -> None:
    sample = ranger([b"", b"R5000\rR5000\rR5000\r"]).read()
    assert QualityFlag.SENSOR_FAULT in sample.quality


def test_inch_frames_of_lv_models() -> None:
    sample = ranger([b"", b"R047\rR047\rR047\r"], frame_unit="in").read()
    assert sample.raw == pytest.approx(47 * 25.4)


def test_too_few_frames_is_a_read_error() -> None:
    with pytest.raises(SensorReadError, match="frames"):
        ranger([b"", b"R1200\r"]).read()


def test_serial_port_reads_frames_from_a_real_tty() -> None:
    import os
    import time

    from hardware.ultrasonic import SerialPort

    master, slave = os.openpty()
    port = SerialPort(os.ttyname(slave), 9600)
    try:
        assert port.read_available() == b""  # non-blocking: nothing yet
        os.write(master, b"R1234\rR1236\r")
        data = b""
        for _ in range(50):
            data += port.read_available()
            if data.count(b"\r") == 2:
                break
            time.sleep(0.01)
        assert parse_frames(data)[0] == [1234, 1236]  # raw mode: CR kept, no translation
    finally:
        port.close()
        os.close(slave)
        os.close(master)
