"""``siltwatch dashboards``: files for provisioning, or a push to a Grafana."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.cli import main
from dashboards.build import build_dashboard
from siltwatch.config import load_site
from tests.dashboards.http_standin import StandIn
from tests.dashboards.test_provisioning_push import FakeGrafana

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
LG, LL = EXAMPLES / "lake-george-site.toml", EXAMPLES / "lake-lure-site.toml"


def test_out_writes_provisioning_and_one_dashboard_per_site(tmp_path: Path) -> None:
    assert main(["dashboards", "--site", str(LG), "--site", str(LL), "--out", str(tmp_path)]) == 0
    board = json.loads((tmp_path / "dashboards" / "ll-boulevard.json").read_text())
    assert board == build_dashboard(load_site(LL))
    assert (tmp_path / "provisioning" / "datasources" / "siltwatch.yaml").exists()


def push(tmp_path: Path, token_text: str) -> tuple[int, StandIn]:
    """``siltwatch dashboards --push`` to a stand-in Grafana with this token in the file."""
    token = tmp_path / "token"
    token.write_text(token_text, encoding="utf-8")
    with StandIn(FakeGrafana()) as grafana:
        code = main(
            ["dashboards", "--site", str(LG), "--push", grafana.url, "--token-file", str(token)]
        )
    return code, grafana


def test_push_sends_to_grafana_with_the_token_from_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, grafana = push(tmp_path, "glsa_test\n")
    assert code == 0
    assert [r.path for r in grafana.requests][-1] == "/api/dashboards/db"
    assert "data source created" in capsys.readouterr().out


def test_a_bad_token_exits_1_with_the_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _ = push(tmp_path, "nope")
    assert code == 1
    assert "HTTP 401" in capsys.readouterr().err
