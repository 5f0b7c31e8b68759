"""Modbus drivers against a real pymodbus server on loopback, and register decoding."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hardware.base import SensorReadError
from hardware.modbus import ModbusParams, ModbusSensor
from hardware.registermap import RegisterField, decode, encode, load_map
from tests.hardware.modbus_servers import PymodbusServer, RawTcpServer

# 12.5 as float32 is 0x41480000: big-endian words [0x4148, 0x0000].
F32_ABCD = [0x4148, 0x0000]
F32_CDAB = [0x0000, 0x4148]


REGS = {
    "level_abcd": RegisterField(address=0, datatype="float32", unit="m"),
    "level_cdab": RegisterField(address=2, datatype="float32", word_order="little", unit="m"),
    "temp": RegisterField(address=4, datatype="int16", scale=0.1, unit="degC"),
    "missing": RegisterField(address=40, datatype="uint16", unit="count"),
}


@contextmanager
def sensor(port: int, field: str, timeout_s: float = 1.0) -> Iterator[ModbusSensor]:
    """A Modbus TCP sensor reading ``field`` of :data:`REGS` at device 1; closed on exit."""
    params = ModbusParams(
        transport="tcp",
        port=port,
        device_id=1,
        timeout_s=timeout_s,
        retries=0,
        registers=REGS,
        field=field,
    )
    drv = ModbusSensor(params)
    try:
        yield drv
    finally:
        drv.close()


@pytest.fixture(scope="module")
def server() -> Iterator[PymodbusServer]:
    holding = F32_ABCD + F32_CDAB + [(-123) & 0xFFFF] + [0] * 5
    with PymodbusServer(holding) as srv:
        yield srv


def test_float32_big_endian_word_order(server: PymodbusServer) -> None:
    with sensor(server.port, "level_abcd") as drv:
        sample = drv.read()
    assert (sample.value, sample.unit) == (12.5, "m")


def test_float32_little_endian_word_order(server: PymodbusServer) -> None:
    with sensor(server.port, "level_cdab") as drv:
        assert drv.read().value == 12.5
        # the same registers read with the wrong word order are a different number
        wrong = RegisterField(address=2, datatype="float32", unit="m")
        assert decode(drv.read_registers(), wrong) != 12.5


def test_scaled_signed_int16(server: PymodbusServer) -> None:
    with sensor(server.port, "temp") as drv:
        sample = drv.read()
    assert sample.value == pytest.approx(-12.3) and sample.raw == float((-123) & 0xFFFF)


def test_exception_response_is_a_read_error(server: PymodbusServer) -> None:
    with (
        sensor(server.port, "missing") as drv,
        pytest.raises(SensorReadError, match="exception response"),
    ):
        drv.read()


@pytest.mark.parametrize(
    "reply",
    [None, b"\xde\xad\xbe\xef garbage \x00\x01"],
    ids=["never-answers-times-out", "answers-garbage"],
)
def test_a_device_that_does_not_answer_modbus_is_a_read_error(reply: bytes | None) -> None:
    with RawTcpServer(reply=reply) as device:
        with (
            sensor(device.port, "level_abcd", timeout_s=0.3) as drv,
            pytest.raises(SensorReadError),
        ):
            drv.read()
        assert device.requests >= 1


def test_nobody_listening_is_a_read_error() -> None:
    with RawTcpServer(reply=None) as gone:
        port = gone.port
    with sensor(port, "level_abcd", timeout_s=0.3) as drv, pytest.raises(SensorReadError):
        drv.read()


def test_yosemitech_map_decodes_dcba_floats() -> None:
    y511 = load_map("yosemitech_y511")
    turbidity = y511.fields["turbidity"]
    assert (turbidity.address, turbidity.count) == (0x2602, 2)
    # 87.25 NTU sent least significant byte first: bytes reversed within the value
    be = struct.pack(">f", 87.25)
    dcba = be[::-1]
    registers = [int.from_bytes(dcba[0:2], "big"), int.from_bytes(dcba[2:4], "big")]
    assert decode(registers, turbidity) == 87.25


def test_map_field_must_exist() -> None:
    with pytest.raises(ValueError, match="not in register map"):
        ModbusParams(transport="tcp", register_map="yosemitech_y511", field="ph").resolved_map()


orders = st.sampled_from(["big", "little"])


@given(st.floats(width=32, allow_nan=False, allow_infinity=False), orders, orders)
def test_float32_encode_decode_roundtrip(value: float, byte_order: str, word_order: str) -> None:
    spec = RegisterField(
        address=0,
        datatype="float32",
        byte_order=byte_order,
        word_order=word_order,
        unit="x",
    )
    assert decode(encode(value, spec), spec) == value


@given(st.integers(-(2**31), 2**31 - 1), orders)
def test_int32_word_order_roundtrip(value: int, word_order: str) -> None:
    spec = RegisterField(address=0, datatype="int32", word_order=word_order, unit="x")
    words = encode(value, spec)
    assert all(0 <= w <= 0xFFFF for w in words)
    assert decode(words, spec) == value
