"""deploy/: the production broker ACL (generated for the example sites, see
tests/foundation/test_broker_acl.py) really confines each station to its own topics
(run on a real Mosquitto), and the compose file runs commands the CLI accepts."""

from __future__ import annotations

import queue
import shlex
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from app.cli import build_parser
from tests.conftest import require_server
from tests.servers import MosquittoServer
from tests.test_servers import Probe

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
USERS = {
    "ingest": "ingest-secret",
    "lg-route9n/up-1": "up1-secret",
    "lg-route9n/down-1": "down1-secret",
    "dana.ruiz": "op",  # the Lake George site's operator (deploy/mosquitto/operators.toml)
}


@pytest.fixture(scope="module")
def broker() -> Iterator[MosquittoServer]:
    require_server("mosquitto", MosquittoServer.available())
    acl = (DEPLOY / "mosquitto" / "acl").read_text()
    with (
        tempfile.TemporaryDirectory(prefix="siltwatch-deploy-") as tmp,
        MosquittoServer(Path(tmp), users=USERS, acl=acl) as server,
    ):
        yield server


@pytest.mark.integration
def test_the_acl_confines_each_station_to_its_own_topics(broker: MosquittoServer) -> None:
    ingest, station, operator = Probe(), Probe(), Probe()
    try:
        assert not ingest.connect(broker.host, broker.port, ("ingest", USERS["ingest"])).is_failure
        station_user = "lg-route9n/up-1"
        assert not station.connect(
            broker.host, broker.port, (station_user, USERS[station_user])
        ).is_failure
        assert not operator.connect(
            broker.host, broker.port, ("dana.ruiz", USERS["dana.ruiz"])
        ).is_failure
        ingest.subscribe("siltwatch/#")
        own = "siltwatch/v1/lg-route9n/up-1/turb-up/reading"
        assert not station.publish(own, b"{}").is_failure
        assert ingest.messages.get(timeout=5).topic == own
        # Another station's topic, another site, the site's inspections and alerts: 135.
        for topic in (
            "siltwatch/v1/lg-route9n/down-1/turb-down/reading",
            "siltwatch/v1/ll-boulevard/up-1/turb-up/reading",
            "siltwatch/v1/lg-route9n/inspections",
            "siltwatch/v1/lg-route9n/alerts",
        ):
            assert station.publish(topic, b"{}").value == 135, topic
        assert operator.publish("siltwatch/v1/ll-boulevard/inspections", b"{}").value == 135
        assert not operator.publish("siltwatch/v1/lg-route9n/inspections", b"{}").is_failure
        assert ingest.messages.get(timeout=5).topic == "siltwatch/v1/lg-route9n/inspections"
        with pytest.raises(queue.Empty):
            ingest.messages.get(timeout=0.5)  # nothing refused leaked through
    finally:
        for probe in (ingest, station, operator):
            probe.close()


def test_compose_runs_commands_the_cli_accepts() -> None:
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    services = compose["services"]
    assert "mosquitto" in services
    serve = [s for s in services.values() if "command" in s]
    assert serve
    parser = build_parser()
    for service in serve:
        args = parser.parse_args(service["command"])
        assert args.command == "serve"
    conf = (DEPLOY / "mosquitto" / "mosquitto.conf").read_text()
    settings = {
        shlex.split(line)[0]: line
        for line in conf.splitlines()
        if line and not line.startswith("#")
    }
    assert settings["allow_anonymous"].endswith("false")
    assert settings["max_queued_messages"].endswith(" 0")  # never drop a queued reading


def test_compose_grafana_reads_the_provisioned_dashboards_from_the_influxdb_service() -> None:
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    services = compose["services"]
    provider = yaml.safe_load(
        (DEPLOY / "grafana/provisioning/dashboards/siltwatch.yaml").read_text()
    )
    datasource = yaml.safe_load(
        (DEPLOY / "grafana/provisioning/datasources/siltwatch.yaml").read_text()
    )
    mounts = {
        v.split(":")[1]: v.split(":")[0]
        for v in services["grafana"]["volumes"]
        if v.startswith("./")
    }
    path = provider["providers"][0]["options"]["path"]
    assert mounts[path] == "./grafana/dashboards"
    assert sorted(p.name for p in (DEPLOY / "grafana" / "dashboards").iterdir()) == [
        "lg-route9n.json",
        "ll-boulevard.json",
        "siltwatch-service.json",
    ]
    url = datasource["datasources"][0]["url"]
    assert url == "http://influxdb:8086" and "influxdb" in services
    serve = services["siltwatch-lg-route9n"]["command"]
    assert "--influx-url=http://influxdb:8086" in serve
    assert f"--influx-db={datasource['datasources'][0]['jsonData']['dbName']}" in serve
