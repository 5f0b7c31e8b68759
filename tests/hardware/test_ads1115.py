"""ADS1115 register driver against an emulated chip, and the analog sensor on top."""

from __future__ import annotations

import pytest

from hardware.ads1115 import ADS1115, REG_CONFIG, REG_CONVERSION, config_word, decode_conversion
from hardware.analog import AnalogParams, AnalogSensor
from hardware.base import SensorReadError
from hardware.calibrated import CalibratedDriver
from hardware.calibration import LinearCalibration
from siltwatch.schema import QualityFlag

FSR_BITS = {0b000: 6.144, 0b001: 4.096, 0b010: 2.048, 0b011: 1.024, 0b100: 0.512, 0b101: 0.256}


class FakeADS1115:
    """Emulates the chip's two registers: a config write starts a conversion of the
    voltage on the selected input at the selected PGA, as the datasheet describes."""

    def __init__(self, volts: dict[int, float], address: int = 0x48) -> None:
        self.volts = volts
        self.address = address
        self.config = 0x8583  # power-on default
        self.conversion = 0
        self.writes: list[int] = []
        self.busy_polls = 0
        self.fail = False

    def write_i2c_block_data(self, addr: int, register: int, data: list[int]) -> None:
        if self.fail:
            raise OSError(121, "Remote I/O error")
        assert addr == self.address and register == REG_CONFIG and len(data) == 2
        word = data[0] << 8 | data[1]
        self.writes.append(word)
        mux = (word >> 12) & 0b111
        fsr = FSR_BITS[(word >> 9) & 0b111]
        volts = self.volts[mux - 0b100]
        counts = max(-32768, min(32767, round(volts / fsr * 32768)))
        self.conversion = counts & 0xFFFF
        self.config = word & 0x7FFF  # OS reads 0 while converting

    def read_i2c_block_data(self, addr: int, register: int, length: int) -> list[int]:
        if register == REG_CONFIG:
            if self.busy_polls:
                self.busy_polls -= 1
            else:
                self.config |= 0x8000
            return [self.config >> 8, self.config & 0xFF]
        assert register == REG_CONVERSION
        return [self.conversion >> 8, self.conversion & 0xFF]


def no_sleep(_: float) -> None:
    pass


def test_config_word_matches_the_datasheet() -> None:
    # power-on default 0x8583 = OS, AIN0-AIN1, +-2.048 V, single shot, 128 SPS, comparator off
    assert config_word("diff01", 2.048, 128) == 0x8583
    # AIN0 vs GND (MUX 100), +-4.096 V (PGA 001), single shot, 860 SPS (DR 111), COMP_QUE 11
    assert config_word(0, 4.096, 860) == 0b1_100_001_1_111_0_0_0_11
    assert config_word(3, 6.144, 8) == 0b1_111_000_1_000_0_0_0_11
    with pytest.raises(ValueError):
        config_word(4, 4.096, 128)
    with pytest.raises(ValueError):
        config_word(0, 5.0, 128)


def test_conversion_is_twos_complement() -> None:
    assert decode_conversion(0x7F, 0xFF) == 32767
    assert decode_conversion(0x80, 0x00) == -32768
    assert decode_conversion(0xFF, 0xFF) == -1


def test_single_shot_read_waits_for_the_os_bit() -> None:
    chip = FakeADS1115({0: 1.5, 1: -0.25, 2: 0.0, 3: 0.0})
    chip.busy_polls = 3
    adc = ADS1115(chip, sleep=no_sleep)
    assert adc.read_volts(0, 4.096) == pytest.approx(1.5, abs=0.000125)
    assert adc.read_volts(1, 0.512) == pytest.approx(-0.25, abs=0.00002)
    assert chip.writes[0] >> 15 == 1 and (chip.writes[0] >> 8) & 1 == 1  # OS and single shot


def test_conversion_that_never_finishes_and_bus_errors_are_read_errors() -> None:
    chip = FakeADS1115({0: 1.0, 1: 0, 2: 0, 3: 0})
    chip.busy_polls = 10_000
    with pytest.raises(SensorReadError, match="did not finish"):
        ADS1115(chip, sleep=no_sleep, max_polls=5).read_volts(0)
    chip.fail = True
    with pytest.raises(SensorReadError, match="I2C error"):
        ADS1115(chip, sleep=no_sleep).read_volts(0)


def loop_sensor(milliamps: float, shunt: float = 150.0) -> AnalogSensor:
    chip = FakeADS1115({0: milliamps / 1000 * shunt, 1: 0, 2: 0, 3: 0})
    params = AnalogParams(channel=0, shunt_ohms=shunt, fsr=4.096)
    return AnalogSensor(params, bus=chip, sleep=no_sleep)


def test_4_20_ma_level_transducer_calibrated_to_metres() -> None:
    cal = LinearCalibration(points=[(4.0, 0.0), (20.0, 5.0)], range=(0.0, 5.0))
    level = CalibratedDriver(loop_sensor(12.0), "m", cal)
    sample = level.read()
    assert sample.value == pytest.approx(2.5, abs=0.001)
    assert sample.raw == pytest.approx(12.0, abs=0.001) and sample.unit == "m"
    assert sample.quality == frozenset()


def test_broken_loop_is_a_sensor_fault_and_missing_calibration_is_flagged() -> None:
    sample = CalibratedDriver(loop_sensor(0.0), "m").read()
    assert QualityFlag.SENSOR_FAULT in sample.quality
    assert QualityFlag.UNCALIBRATED in sample.quality


def test_voltage_input_through_a_divider_and_overrange() -> None:
    chip = FakeADS1115({0: 2.0, 1: 5.0, 2: 0, 3: 0})
    params = AnalogParams(channel=0, signal="voltage", divider_ratio=2.0, fsr=4.096)
    sample = AnalogSensor(params, bus=chip, sleep=no_sleep).read()
    assert sample.value == pytest.approx(4.0, abs=0.001) and sample.unit == "V"
    over = AnalogSensor(params.model_copy(update={"channel": 1}), bus=chip, sleep=no_sleep)
    assert QualityFlag.OUT_OF_RANGE in over.read().quality
