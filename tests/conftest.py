"""Shared fixtures: real brokers and databases on loopback, started once per session.

Integration tests skip on a laptop without the servers, but under ``CI=true`` a missing
server is a failure: a CI run that silently skipped every integration test would be
green while proving nothing.
"""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import pytest
from hypothesis import settings

from tests.servers import AmqttServer, InfluxDBServer, MosquittoServer, PostgresServer

# Under CI the property tests run derandomized: the same examples every run, so a red CI
# is a reproducible failure, never a dice roll (developers' runs keep exploring).
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
if os.environ.get("CI") == "true":
    settings.load_profile("ci")

# The broker accounts siltwatch uses: an operator, the ingest service, one field station.
MQTT_USERS = ("admin", "ingest", "station-up-1")

# station-up-1 may publish only below its own station level (any site), and read nothing;
# admin and ingest may do anything under siltwatch/. Mosquitto denies what is not listed.
MQTT_ACL = """\
user admin
topic readwrite siltwatch/#

user ingest
topic readwrite siltwatch/#

user station-up-1
topic write siltwatch/v1/+/up-1/#
"""


def in_ci() -> bool:
    """True when running under CI, where missing servers must fail instead of skip."""
    return os.environ.get("CI") == "true"


def require_server(name: str, available: bool) -> None:
    """Skip (locally) or fail (under CI=true) the current test when ``name`` is missing."""
    if available:
        return
    if in_ci():
        pytest.fail(f"{name} is not installed; under CI=true integration tests must not skip")
    pytest.skip(f"{name} is not installed")


@dataclass(frozen=True)
class BrokerInfo:
    """Where the session's MQTT broker listens and which accounts it knows.

    ``kind == "amqtt"`` means the anonymous MQTT 3.1.1 fallback: ``users`` still holds
    the names and passwords (clients may send them; amqtt ignores them), but there is no
    ACL and no MQTT v5. Tests of auth/ACL/v5 call ``require_mosquitto(broker)``.
    """

    host: str
    port: int
    users: dict[str, str]
    kind: Literal["mosquitto", "amqtt"]
    server: object = field(repr=False)


def require_mosquitto(broker: BrokerInfo) -> None:
    """For tests that need what only Mosquitto does (passwords, ACLs, MQTT v5)."""
    require_server("mosquitto", broker.kind == "mosquitto")


@pytest.fixture(scope="session")
def mosquitto() -> Iterator[BrokerInfo]:
    """A broker for the whole session: Mosquitto with passwords and ACL, else amqtt.

    The workdir is a fresh folder directly under /tmp rather than pytest's tmp_path
    (mode 0700 under /tmp/pytest-of-root) so that Mosquitto, started as root, can drop
    to the ``mosquitto`` user exactly as it does in production.
    """
    users = {name: secrets.token_urlsafe(12) for name in MQTT_USERS}
    if not MosquittoServer.available():
        # Under CI this fails; locally we fall back to the in-process broker.
        if in_ci():
            require_server("mosquitto", False)
        with AmqttServer() as amqtt:
            yield BrokerInfo(amqtt.host, amqtt.port, users, "amqtt", amqtt)
        return

    workdir = Path(tempfile.mkdtemp(prefix="siltwatch-mosquitto-"))
    try:
        with MosquittoServer(workdir, users=users, acl=MQTT_ACL) as server:
            yield BrokerInfo(server.host, server.port, users, "mosquitto", server)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


@pytest.fixture(scope="session")
def influxdb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InfluxDBServer]:
    """One InfluxDB 1.x server for the session; tests create their own databases."""
    require_server("influxd", InfluxDBServer.available())
    with InfluxDBServer(tmp_path_factory.mktemp("influxdb")) as server:
        yield server


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """One PostgreSQL server for the session; tests make their own databases
    (:func:`postgres_url`). Its folder is under /tmp, where the postgres account can enter."""
    require_server("postgres", PostgresServer.available())
    with PostgresServer() as server:
        yield server


@pytest.fixture
def postgres_url(postgres: PostgresServer) -> Iterator[str]:
    """A fresh, empty database on the session's server for one test, dropped after it.

    Its default collation is linguistic (ICU ``en-US``), not the byte order the store
    needs, so a query that forgot its collation sorts differently and a test sees it.
    """
    name = f"siltwatch_{secrets.token_hex(6)}"
    url = postgres.create_database(name, icu_locale="en-US")
    try:
        yield url
    finally:
        postgres.drop_database(name)


@pytest.fixture
def sqlite_path(tmp_path: Path) -> Path:
    """Where a test's SQLite database goes (the file is not created)."""
    return tmp_path / "siltwatch.sqlite3"


# The store's backends. A test runs on each with
# ``@pytest.mark.parametrize("store_db", BACKENDS, indirect=True)``: same answers on both.
BACKENDS = ("sqlite", "postgres")


@pytest.fixture
def store_db(request: pytest.FixtureRequest, sqlite_path: Path) -> str:
    """The test's ``--db``: its SQLite file, or (parameter ``postgres``) a fresh database's URL."""
    backend = getattr(request, "param", "sqlite")
    if backend == "postgres":
        return str(request.getfixturevalue("postgres_url"))
    assert backend == "sqlite", f"unknown store backend {backend!r}"
    return str(sqlite_path)
