"""deploy/systemd: the live service's unit reloads with SIGHUP and runs a command the CLI takes."""

from __future__ import annotations

import configparser
import shlex
from pathlib import Path

from app.cli import build_parser

UNIT = Path(__file__).resolve().parents[2] / "deploy" / "systemd" / "siltwatch-serve.service"


def _service() -> configparser.SectionProxy:
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    text = UNIT.read_text(encoding="utf-8").replace("\\\n", " ")
    parser.read_string(text)
    return parser["Service"]


def test_systemctl_reload_sends_sighup_to_the_service() -> None:
    assert _service()["ExecReload"] == "/bin/kill -HUP $MAINPID"


def test_the_units_commands_are_ones_the_cli_accepts() -> None:
    service = _service()
    for key in ("ExecStartPre", "ExecStart"):
        argv = shlex.split(service[key])
        assert argv[0].endswith("/siltwatch"), argv
        build_parser().parse_args(argv[1:])  # SystemExit (a failure) for an unknown option
