"""The broker ACL generated from site configurations confines every account to its topics.

Against a real Mosquitto (MQTT v5, so a refused QoS 1 publish is visible as PUBACK
reason code 135 "Not authorized"): a station may publish only under its own station
of its own site, not under the same station id at another site (the hole the old
``pattern write siltwatch/v1/+/%u/#`` left) nor another station of its site; a person
may record inspections only for their own sites. Then the command that writes the
files: its output, its error messages, and that deploy/mosquitto/acl is up to date.
"""

from __future__ import annotations

import argparse
import queue
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.brokeraccess_cli import add_broker_acl_parser
from siltwatch.brokeraccess import OperatorAccount, SiteStations, acl_text, station_user
from tests.conftest import require_server
from tests.servers import MosquittoServer
from tests.test_servers import Probe

ROOT = Path(__file__).resolve().parents[2]
NOT_AUTHORIZED = 135

# Two sites with a station id in common: "up-1" exists at both.
SITES = [
    SiteStations("lg-route9n", ("up-1", "down-1")),
    SiteStations("lg-annex", ("up-1",)),
]
OPERATORS = [
    OperatorAccount(user="dana.ruiz", sites=["lg-route9n"]),
    OperatorAccount(user="sam@town.example", sites=["lg-annex"]),
]
USERS = {
    "ingest": "ingest-secret",
    "lg-route9n/up-1": "up1-secret",
    "lg-route9n/down-1": "down1-secret",
    "lg-annex/up-1": "annex-up1-secret",
    "dana.ruiz": "dana-secret",
}
READING = "siltwatch/v1/{site}/{station}/turb/reading"


@pytest.fixture(scope="module")
def broker() -> Iterator[MosquittoServer]:
    require_server("mosquitto", MosquittoServer.available())
    acl = acl_text(SITES, OPERATORS, command="siltwatch broker-acl (test)")
    with (
        tempfile.TemporaryDirectory(prefix="siltwatch-broker-acl-") as tmp,
        MosquittoServer(Path(tmp), users=USERS, acl=acl, persistence=False) as server,
    ):
        yield server


@pytest.fixture
def connect(broker: MosquittoServer) -> Iterator[dict[str, Probe]]:
    """One MQTT v5 client per account, logged in; all closed after the test."""
    probes: dict[str, Probe] = {}
    for user, password in USERS.items():
        probe = Probe()
        probes[user] = probe
        assert not probe.connect(broker.host, broker.port, (user, password)).is_failure, user
    try:
        yield probes
    finally:
        for probe in probes.values():
            probe.close()


def received(probe: Probe) -> list[str]:
    topics = []
    while True:
        try:
            topics.append(probe.messages.get(timeout=0.5).topic)
        except queue.Empty:
            return topics


@pytest.mark.integration
def test_a_station_may_publish_only_under_its_own_station_of_its_own_site(
    connect: dict[str, Probe],
) -> None:
    ingest, station = connect["ingest"], connect["lg-route9n/up-1"]
    ingest.subscribe("siltwatch/#")
    own = READING.format(site="lg-route9n", station="up-1")
    assert not station.publish(own, b"{}").is_failure
    refused = {
        "same station id, other site": READING.format(site="lg-annex", station="up-1"),
        "other station, own site": READING.format(site="lg-route9n", station="down-1"),
        "inspections of its site": "siltwatch/v1/lg-route9n/inspections",
        "alerts of its site": "siltwatch/v1/lg-route9n/alerts",
        "an alert episode of its site": "siltwatch/v1/lg-route9n/alerts/al-1",
    }
    seen = {why: station.publish(topic, b"{}").value for why, topic in refused.items()}
    assert seen == {why: NOT_AUTHORIZED for why in refused}
    assert received(ingest) == [own]  # nothing refused leaked through


@pytest.mark.integration
def test_only_the_service_writes_a_resend_request_and_only_its_station_reads_it(
    connect: dict[str, Probe],
) -> None:
    ingest, up1, down1 = connect["ingest"], connect["lg-route9n/up-1"], connect["lg-route9n/down-1"]
    own = "siltwatch/v1/lg-route9n/up-1/cmd/resend"
    for probe in (up1, down1):
        probe.subscribe("siltwatch/v1/lg-route9n/+/cmd/resend")
    assert up1.publish(own, b"{}").value == NOT_AUTHORIZED  # no forged requests
    assert down1.publish(own, b"{}").value == NOT_AUTHORIZED
    assert not ingest.publish(own, b"{}").is_failure
    assert received(up1) == [own]
    assert received(down1) == []  # another station's requests are not delivered to it


@pytest.mark.integration
def test_a_person_records_inspections_only_for_their_own_sites(connect: dict[str, Probe]) -> None:
    ingest, dana = connect["ingest"], connect["dana.ruiz"]
    ingest.subscribe("siltwatch/#")
    assert not dana.publish("siltwatch/v1/lg-route9n/inspections", b"{}").is_failure
    assert dana.publish("siltwatch/v1/lg-annex/inspections", b"{}").value == NOT_AUTHORIZED
    reading = READING.format(site="lg-route9n", station="up-1")
    assert dana.publish(reading, b"{}").value == NOT_AUTHORIZED  # no forged readings
    assert received(ingest) == ["siltwatch/v1/lg-route9n/inspections"]


@pytest.mark.integration
def test_a_person_reads_the_alerts_of_their_sites_only(connect: dict[str, Probe]) -> None:
    ingest, dana = connect["ingest"], connect["dana.ruiz"]
    dana.subscribe("siltwatch/v1/+/alerts/#")
    for site in ("lg-route9n", "lg-annex"):  # one topic per episode (ingest/mqtt/alert_topic.py)
        episode = f"siltwatch/v1/{site}/alerts/al-1"
        assert not ingest.publish(episode, site.encode()).is_failure
    assert ingest.publish(READING.format(site="lg-annex", station="up-1"), b"{}").value == (
        NOT_AUTHORIZED  # the services read readings, they do not write them
    )
    assert received(dana) == ["siltwatch/v1/lg-route9n/alerts/al-1"]


def test_every_account_is_an_explicit_user_block_without_wildcard_patterns() -> None:
    text = acl_text(SITES, OPERATORS, command="siltwatch broker-acl --site s.toml --out d")
    rules = [line for line in text.splitlines() if line and not line.startswith("#")]
    assert not [line for line in rules if line.startswith("pattern") or "%u" in line]
    block = rules[rules.index("user lg-annex/up-1") :][:4]
    assert block == [
        "user lg-annex/up-1",
        "topic write siltwatch/v1/lg-annex/up-1/+/reading",
        "topic write siltwatch/v1/lg-annex/up-1/status",
        "topic read siltwatch/v1/lg-annex/up-1/cmd/resend",
    ]
    assert "#   siltwatch broker-acl --site s.toml --out d" in text.splitlines()


def test_station_accounts_cannot_collide_although_ids_may_contain_dots() -> None:
    assert station_user("a.b", "c") != station_user("a", "b.c")
    assert station_user("lg-route9n", "up-1") == "lg-route9n/up-1"


# --- the command ----------------------------------------------------------------------


def run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="siltwatch")
    add_broker_acl_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["broker-acl", *argv])
    return int(args.func(args))


EXAMPLES = ["--site", "examples/lake-george-site.toml", "--site", "examples/lake-lure-site.toml"]


def test_deploy_acl_is_what_the_command_generates_for_the_example_sites(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """deploy/mosquitto/acl says how to regenerate it; doing so changes nothing."""
    deploy = ROOT / "deploy" / "mosquitto"
    acl = (deploy / "acl").read_text()
    command = next(line for line in acl.splitlines() if "siltwatch broker-acl" in line)
    assert command.startswith("#   siltwatch broker-acl --site examples/lake-george-site.toml")
    monkeypatch.chdir(ROOT)
    argv = command.removeprefix("#   siltwatch broker-acl ").split()
    out = argv.index("--out")
    assert argv[out + 1] == "deploy/mosquitto"
    argv[out + 1] = str(tmp_path)
    assert run(argv) == 0
    generated = (tmp_path / "acl").read_text().replace(str(tmp_path), "deploy/mosquitto")
    assert generated == acl
    assert (tmp_path / "passwd.todo").read_text() == (deploy / "passwd.todo").read_text()
    assert capsys.readouterr().out == (
        f"wrote {tmp_path / 'acl'} and {tmp_path / 'passwd.todo'}: 2 sites, "
        "6 station accounts, 2 people, 1 services account\n"
    )


def test_passwd_todo_lists_every_account_to_create(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    assert run([*EXAMPLES, "--out", str(tmp_path)]) == 0
    names = [
        line for line in (tmp_path / "passwd.todo").read_text().splitlines() if line[:1] != "#"
    ]
    assert names == [
        "ingest",
        "lg-route9n/up-1",
        "lg-route9n/down-1",
        "lg-route9n/basin-1",
        "ll-boulevard/cove-up",
        "ll-boulevard/cove-down",
        "ll-boulevard/yard",
    ]


def test_mistakes_in_the_operators_file_are_all_named_and_nothing_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(ROOT)
    operators = tmp_path / "operators.toml"
    operators.write_text(
        '[[account]]\nuser = "dana.ruiz"\nsites = ["lg-route9n", "lg-rout9n"]\n\n'
        '[[account]]\nuser = "dana.ruiz"\nsites = ["ll-boulevard"]\n\n'
        '[[account]]\nuser = "ingest"\nsites = ["ll-boulevard"]\n'
    )
    out = tmp_path / "out"
    assert run([*EXAMPLES, "--operators", str(operators), "--out", str(out)]) == 1
    assert capsys.readouterr().err.splitlines() == [
        f"error: {operators}: account[0].sites[1]: unknown site 'lg-rout9n' "
        "(the --site files give: lg-route9n, ll-boulevard)",
        f"error: {operators}: account[1].user: 'dana.ruiz' is already account[0]",
        f"error: {operators}: account[2].user: 'ingest' is the services' account",
    ]
    assert not out.exists()


def test_a_person_named_like_a_station_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(ROOT)
    operators = tmp_path / "operators.toml"
    operators.write_text('[[account]]\nuser = "lg-route9n/up-1"\nsites = ["lg-route9n"]\n')
    assert run([*EXAMPLES, "--operators", str(operators), "--out", str(tmp_path / "o")]) == 1
    (line,) = capsys.readouterr().err.splitlines()
    assert line == (
        f"error: {operators}: account[0].user: 'lg-route9n/up-1' is not a person's account "
        'name: up to 64 letters, digits, _ . @ - (no "/": that is how station accounts are named)'
    )


def test_the_same_site_twice_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(ROOT)
    site = "examples/lake-george-site.toml"
    assert run(["--site", site, "--site", site, "--out", str(tmp_path / "o")]) == 1
    assert capsys.readouterr().err == (
        f"error: {site}: site.id: 'lg-route9n' is also the site of {site}\n"
    )
