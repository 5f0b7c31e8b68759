"""The edge agent's TOML configuration (pydantic), loaded through siltwatch.configerrors.

Why strict (``extra="forbid"``): a misspelt key on a remote station would
silently fall back to a default; instead the technician gets the file, the key
path and what was expected, all mistakes at once.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from edge.clock import SyncMethod
from hardware.calibration import Calibration
from hardware.registry import DriverParams
from siltwatch.configerrors import ConfigError, load_toml_model
from siltwatch.schema import Identifier


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class BrokerConfig(_Strict):
    host: str = "localhost"
    port: int = Field(default=1883, ge=1, le=65535)
    username: str | None = None
    password: str | None = None
    password_file: Path | None = Field(
        default=None, description="read the password from this file (keeps it out of the TOML)"
    )
    tls_ca: Path | None = Field(default=None, description="CA certificate: enables TLS")
    tls_insecure: bool = Field(default=False, description="skip hostname check (never in prod)")
    protocol: Literal["5", "3.1.1"] = "5"
    keepalive_s: int = Field(default=30, ge=5)
    connect_timeout_s: float = Field(default=10.0, gt=0)
    backoff_min_s: float = Field(default=1.0, gt=0)
    backoff_max_s: float = Field(default=300.0, gt=0)
    client_id: str | None = None

    @model_validator(mode="after")
    def _one_password(self) -> BrokerConfig:
        if self.password is not None and self.password_file is not None:
            raise ValueError("give 'password' or 'password_file', not both")
        if self.backoff_min_s > self.backoff_max_s:
            raise ValueError("backoff_min_s must not exceed backoff_max_s")
        return self

    def resolved_password(self) -> str | None:
        if self.password_file is not None:
            return self.password_file.read_text(encoding="utf-8").strip()
        return self.password


class SensorConfig(_Strict):
    id: Identifier
    unit: str = Field(min_length=1, max_length=16)
    interval_s: float = Field(gt=0, description="sampling period")
    driver: DriverParams
    calibration: Calibration | None = None


class OutboxConfig(_Strict):
    path: Path = Path("/var/lib/siltwatch-edge/outbox.sqlite")
    max_readings: int = Field(
        default=2_000_000, ge=10, description="cap; oldest readings are evicted (and counted)"
    )
    batch_max: int = Field(default=500, ge=1, le=10_000, description="readings per batch message")
    batch_threshold: int = Field(
        default=10, ge=2, description="pending readings from which they are sent as batches"
    )
    inflight_max: int = Field(default=20, ge=1, le=1000, description="unacked messages at once")
    backfill_after_s: float = Field(
        default=60.0, gt=0, description="readings older than this when sent are 'backfilled'"
    )
    retention_days: float = Field(
        default=7.0,
        ge=0,
        description="keep readings the broker acknowledged this long, for the service's "
        "resend requests (a broker can lose what it acknowledged); 0: delete at the PUBACK",
    )
    retention_max_readings: int = Field(
        default=500_000,
        ge=0,
        description="at most this many acknowledged readings kept (about 60 MB); the oldest "
        "are evicted first",
    )


class HealthConfig(_Strict):
    interval_s: float = Field(default=60.0, gt=0)
    battery_sensor: str | None = Field(default=None, description="sensor id giving battery volts")
    thermal_zone: Path = Path("/sys/class/thermal/thermal_zone0/temp")
    clock_check: SyncMethod = "auto"


class AgentConfig(_Strict):
    site: Identifier
    station: Identifier
    config_version: str | None = None
    broker: BrokerConfig = BrokerConfig()
    outbox: OutboxConfig = OutboxConfig()
    health: HealthConfig = HealthConfig()
    sensors: list[SensorConfig] = Field(min_length=1)
    drain_timeout_s: float = Field(
        default=10.0, ge=0, description="on SIGTERM, keep publishing the backlog this long"
    )

    @model_validator(mode="after")
    def _unique_sensors(self) -> AgentConfig:
        ids = [s.id for s in self.sensors]
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            raise ValueError(f"sensor ids must be unique; repeated: {dupes}")
        if self.health.battery_sensor is not None and self.health.battery_sensor not in ids:
            raise ValueError(
                f"health.battery_sensor {self.health.battery_sensor!r} is no sensor id"
            )
        return self


# pydantic puts the tag of a discriminated union into an error's location
# ("sensors[0].driver.modbus.port"); the tag is the value of ``kind``/``type``,
# not a key of the file, so it is dropped from the key path people read.
_UNION_TAG = re.compile(
    r"\.(driver)\.(?:tipping_bucket|ads1115|modbus|maxbotix_serial|simulated)\b"
    r"|\.(calibration)\.(?:linear|polynomial)\b"
)


def load_config(path: Path) -> AgentConfig:
    """Read and validate the agent TOML; raises ConfigError (one line per mistake)."""
    try:
        return load_toml_model(path, AgentConfig)
    except ConfigError as exc:
        raise ConfigError(
            [_UNION_TAG.sub(lambda m: "." + (m.group(1) or m.group(2)), line) for line in exc.lines]
        ) from None
