"""The files a field technician installs: the example config must validate, the
systemd unit must run the documented entry point and give the drain time to finish,
and the install script must at least parse."""

from __future__ import annotations

import configparser
import subprocess
from pathlib import Path

from edge.config import load_config

EDGE = Path(__file__).resolve().parents[2] / "edge"


def test_example_config_is_valid_and_uses_every_driver_kind() -> None:
    config = load_config(EDGE / "example.toml")
    kinds = {s.driver.kind for s in config.sensors}
    assert kinds == {"tipping_bucket", "ads1115", "modbus", "maxbotix_serial"}
    assert config.broker.tls_ca is not None and config.broker.protocol == "5"


def test_systemd_unit_runs_the_agent_and_waits_for_the_drain() -> None:
    unit = configparser.ConfigParser(strict=False, interpolation=None)
    unit.optionxform = str  # type: ignore[assignment,method-assign]
    unit.read(EDGE / "siltwatch-edge.service")
    service = unit["Service"]
    assert service["ExecStart"].endswith("-m edge --config /etc/siltwatch/edge.toml")
    assert service["Restart"] == "always"
    drain = load_config(EDGE / "example.toml").drain_timeout_s
    assert float(service["TimeoutStopSec"]) > drain + 5
    assert "/var/lib/siltwatch-edge" in service["ReadWritePaths"]


def test_install_script_parses() -> None:
    result = subprocess.run(
        ["bash", "-n", str(EDGE / "install.sh")], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
