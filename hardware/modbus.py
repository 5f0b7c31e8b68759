"""Digital probes over Modbus RTU (RS-485) or Modbus TCP, via pymodbus.

One driver instance reports one field of a register map (e.g. ``turbidity``
of a Yosemitech Y511). Two probes on the same RS-485 bus are two sensors with
different ``device_id``s. Anything that is not a clean register read — a
timeout, a Modbus exception response, a frame that does not parse — raises
:class:`SensorReadError`, so no invented number ever becomes a reading.

RTU needs pyserial (pymodbus imports it lazily); TCP does not.
"""

from __future__ import annotations

import logging
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from hardware.base import Sample, SensorReadError
from hardware.registermap import RegisterField, RegisterMap, decode, load_map

log = logging.getLogger(__name__)


class ModbusParams(BaseModel):
    """Driver parameters (``kind = "modbus"``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["modbus"] = "modbus"
    transport: Literal["tcp", "rtu"] = "rtu"
    host: str = "127.0.0.1"
    port: int = Field(default=502, ge=1, le=65535)
    serial_port: str = "/dev/ttyUSB0"
    baudrate: int = 9600
    parity: Literal["N", "E", "O"] = "N"
    stopbits: Literal[1, 2] = 1
    device_id: int = Field(default=1, ge=0, le=247)
    timeout_s: float = Field(default=1.0, gt=0)
    retries: int = Field(default=1, ge=0)
    register_map: str | None = Field(
        default=None, description="bundled map name or path to a map TOML"
    )
    registers: dict[str, RegisterField] | None = Field(default=None, description="inline map")
    field: str = Field(description="which field of the map this sensor reports")

    @model_validator(mode="after")
    def _one_map(self) -> ModbusParams:
        if (self.register_map is None) == (self.registers is None):
            raise ValueError("give either 'register_map' or inline 'registers'")
        return self

    def resolved_map(self) -> RegisterMap:
        if self.registers is not None:
            regmap = RegisterMap(name="inline", fields=self.registers)
        else:
            assert self.register_map is not None
            regmap = load_map(self.register_map)
        if self.field not in regmap.fields:
            raise ValueError(
                f"field {self.field!r} is not in register map {regmap.name!r} "
                f"(it has {sorted(regmap.fields)})"
            )
        return regmap


class ModbusSensor:
    """Reads one register-map field per ``read()``; reconnects lazily after errors."""

    def __init__(self, params: ModbusParams, client: Any = None) -> None:
        self.params = params
        self.spec = params.resolved_map().fields[params.field]
        self.client = client if client is not None else self._make_client()

    def _make_client(self) -> Any:
        p = self.params
        if p.transport == "tcp":
            from pymodbus.client import ModbusTcpClient

            return ModbusTcpClient(p.host, port=p.port, timeout=p.timeout_s, retries=p.retries)
        from pymodbus.client import ModbusSerialClient

        return ModbusSerialClient(
            p.serial_port,
            baudrate=p.baudrate,
            parity=p.parity,
            stopbits=p.stopbits,
            bytesize=8,
            timeout=p.timeout_s,
            retries=p.retries,
        )

    def read_registers(self) -> list[int]:
        from pymodbus.exceptions import ModbusException

        p, spec = self.params, self.spec
        where = f"Modbus device {p.device_id} register {spec.address} ({p.field})"
        try:
            if not self.client.connected and not self.client.connect():
                raise SensorReadError(f"{where}: cannot connect")
            reader = (
                self.client.read_holding_registers
                if spec.table == "holding"
                else self.client.read_input_registers
            )
            response = reader(spec.address, count=spec.count, device_id=p.device_id)
        except ModbusException as exc:
            self.client.close()  # a half-read frame would poison the next request
            raise SensorReadError(f"{where}: {exc}") from exc
        except OSError as exc:
            self.client.close()
            raise SensorReadError(f"{where}: I/O error {exc}") from exc
        if response.isError():
            code = getattr(response, "exception_code", None)
            raise SensorReadError(f"{where}: exception response (code {code})")
        registers = list(response.registers)
        if len(registers) != spec.count:
            raise SensorReadError(f"{where}: expected {spec.count} registers, got {registers}")
        return registers

    def read(self) -> Sample:
        registers = self.read_registers()
        try:
            value = decode(registers, self.spec)
        except ValueError as exc:
            raise SensorReadError(f"{self.params.field}: cannot decode {registers}: {exc}") from exc
        if value != value or value in (float("inf"), float("-inf")):
            raise SensorReadError(f"{self.params.field}: device sent a non-finite number")
        raw = float(registers[0]) if self.spec.count == 1 else value
        return Sample(value=value, unit=self.spec.unit, raw=raw)

    def close(self) -> None:
        self.client.close()
