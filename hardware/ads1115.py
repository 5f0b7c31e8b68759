"""A small register-level driver for the TI ADS1115 16-bit ADC on I2C (smbus2).

Why our own: the ADS1115 has two registers that matter and a single-shot
protocol that fits in a page; owning it means no unmaintained Adafruit
dependency on the Pi and a driver we can test bit for bit against the
datasheet (TI SBAS444, section 9.6 "Register Map").

Single-shot conversion (datasheet 9.4.2): write the Config register with
OS=1 (start), MUX (input), PGA (full-scale range), MODE=1 (single shot), DR
(data rate) and the comparator disabled (COMP_QUE=11); wait until OS reads 1
again (conversion done) or 1/DR has passed; read the Conversion register, a
big-endian two's-complement 16-bit number where 32767 = +FSR.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Literal, Protocol

from hardware.base import SensorReadError

REG_CONVERSION = 0x00
REG_CONFIG = 0x01

OS_START = 1 << 15  # write: start a single conversion; read: 1 = not converting
MODE_SINGLE_SHOT = 1 << 8
COMP_QUE_DISABLE = 0b11

# MUX[14:12]: single-ended inputs AINn against GND, and the AIN0-AIN1 differential pair.
MUX_SINGLE: dict[int, int] = {0: 0b100, 1: 0b101, 2: 0b110, 3: 0b111}
MUX_DIFF_0_1 = 0b000

# PGA[11:9]: full-scale range in volts.
PGA_FSR: dict[float, int] = {
    6.144: 0b000,
    4.096: 0b001,
    2.048: 0b010,
    1.024: 0b011,
    0.512: 0b100,
    0.256: 0b101,
}

# DR[7:5]: samples per second.
DATA_RATE: dict[int, int] = {
    8: 0b000,
    16: 0b001,
    32: 0b010,
    64: 0b011,
    128: 0b100,
    250: 0b101,
    475: 0b110,
    860: 0b111,
}

Input = int | Literal["diff01"]


class I2CBus(Protocol):
    """The two smbus2.SMBus calls we use (so tests can emulate the chip)."""

    def write_i2c_block_data(self, i2c_addr: int, register: int, data: list[int]) -> None: ...

    def read_i2c_block_data(self, i2c_addr: int, register: int, length: int) -> list[int]: ...


def config_word(channel: Input, fsr: float, data_rate: int) -> int:
    """The Config register value that starts one single-shot conversion."""
    if channel == "diff01":
        mux = MUX_DIFF_0_1
    elif channel in MUX_SINGLE:
        mux = MUX_SINGLE[channel]
    else:
        raise ValueError(f"ADS1115 channel must be 0-3 or 'diff01', got {channel!r}")
    if fsr not in PGA_FSR:
        raise ValueError(f"ADS1115 full-scale range must be one of {sorted(PGA_FSR)}, got {fsr}")
    if data_rate not in DATA_RATE:
        raise ValueError(f"ADS1115 data rate must be one of {sorted(DATA_RATE)}, got {data_rate}")
    return (
        OS_START
        | (mux << 12)
        | (PGA_FSR[fsr] << 9)
        | MODE_SINGLE_SHOT
        | (DATA_RATE[data_rate] << 5)
        | COMP_QUE_DISABLE
    )


def counts_to_volts(counts: int, fsr: float) -> float:
    """Signed conversion counts to volts at the given full-scale range."""
    return counts * fsr / 32768.0


def decode_conversion(msb: int, lsb: int) -> int:
    """Big-endian two's complement 16-bit to a Python int."""
    value = (msb << 8) | lsb
    return value - 0x10000 if value & 0x8000 else value


class ADS1115:
    """One ADS1115 chip at an I2C address; ``read_volts()`` does a single-shot conversion."""

    def __init__(
        self,
        bus: I2CBus,
        address: int = 0x48,
        *,
        sleep: Callable[[float], None] = time.sleep,
        max_polls: int = 50,
    ) -> None:
        self.bus = bus
        self.address = address
        self._sleep = sleep
        self._max_polls = max_polls

    def read_counts(self, channel: Input, fsr: float = 4.096, data_rate: int = 128) -> int:
        word = config_word(channel, fsr, data_rate)
        try:
            self.bus.write_i2c_block_data(self.address, REG_CONFIG, [word >> 8, word & 0xFF])
            self._sleep(1.0 / data_rate + 0.0005)
            for _ in range(self._max_polls):
                msb, _lsb = self.bus.read_i2c_block_data(self.address, REG_CONFIG, 2)
                if msb & 0x80:  # OS bit: conversion finished
                    break
                self._sleep(1.0 / data_rate / 4)
            else:
                raise SensorReadError(f"ADS1115 at 0x{self.address:02x}: conversion did not finish")
            msb, lsb = self.bus.read_i2c_block_data(self.address, REG_CONVERSION, 2)
        except OSError as exc:  # smbus2 raises OSError (e.g. errno 121 Remote I/O) on NACK
            raise SensorReadError(f"ADS1115 at 0x{self.address:02x}: I2C error {exc}") from exc
        return decode_conversion(msb, lsb)

    def read_volts(self, channel: Input, fsr: float = 4.096, data_rate: int = 128) -> float:
        return counts_to_volts(self.read_counts(channel, fsr, data_rate), fsr)
