"""``serve --sites DIR --notify``: every site's alerts reach that site's own people.

A real ``serve`` of a fleet on a real Mosquitto and a real SMTP server on
loopback (aiosmtpd). Each generated site has its own name and its own contacts;
each site's plume must be emailed to that site's contacts under that site's
name and nothing of another site's (one delivery for two sites would label a
mail with the wrong name), through that site's own outbox file. A site added by
SIGHUP starts its own delivery; /metrics has an outbox-depth sample per site and
/healthz a delivery thread per site.

In process: a fleet's deliveries follow the sites (kept while a site is
unchanged, replaced when its contacts change, stopped when it is removed).
"""

from __future__ import annotations

import argparse
import sqlite3
import time
from collections.abc import Iterator, Sequence
from email.message import EmailMessage
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from alerts.notify_config import site_outbox_path
from app.cli import build_parser
from app.fleet_notify import FleetDeliveries, LockedDigests
from app.serving import People
from ingest.ops.health import ServiceParts, liveness
from ingest.store.sqlite import SqliteStore
from siltwatch.config import SiteConfig, load_site
from tests.alerts.helpers import SmtpServer
from tests.ingest.fleet_world import site_id, stream, write_site, write_sites
from tests.ingest.live import Outgoing, ServeProcess, loopback_broker
from tests.ingest.test_fleet import fleet_args, now_minute, publish, sighup
from tests.servers import MosquittoServer, free_port

MINUTE_MS = 60_000
MAIL_S = 20.0  # bound on a plume's email arriving after its readings are acknowledged
PLUME_MIN = 80  # minutes of readings: the plume (minutes 10-80) opens an alert in them
TEMPLATE_NAME = 'name = "Route 9N mixed-use, Town of Lake George"'
# Sites whose number gives them a plume (tests/ingest/fleet_world.py has_plume), each
# with a name of its own so a mail under the wrong site's label is seen.
NAMES = {1: "Harbor Street lofts", 5: "Mill Pond school", 9: "Quarry Road depot"}


def write_named_site(folder: Path, n: int) -> SiteConfig:
    """Site ``n`` with its own name and its own contacts' addresses."""
    path = write_site(folder, n)
    text = path.read_text(encoding="utf-8")
    assert TEMPLATE_NAME in text
    text = text.replace(TEMPLATE_NAME, f'name = "{NAMES[n]}"')
    text = text.replace("dana.ruiz@example.org", f"operator@{site_id(n)}.example.org")
    text = text.replace("stormwater.officer@example.org", f"officer@{site_id(n)}.example.org")
    path.write_text(text, encoding="utf-8")
    return load_site(path)


def emails_of(site: SiteConfig) -> set[str]:
    return {c.email for c in site.contacts if c.email}


def plume(site: SiteConfig, pad: SiteConfig, start_ms: int, minutes: int) -> list[Outgoing]:
    """``site``'s readings with a turbidity plume downstream (the stream's second site has
    one; ``pad`` only takes the first place and is left out)."""
    sid = site.site.id
    return [m for m in stream([pad, site], start_ms, minutes) if f"/{sid}/" in m.topic]


def text_of(msg: EmailMessage) -> str:
    body = msg.get_body(("plain",))
    assert body is not None, "the email has a plain-text part"
    return f"{msg['Subject']}\n{body.get_content()}"


def mails_to(smtp: SmtpServer, site: SiteConfig) -> list[tuple[list[str], EmailMessage]]:
    """Every email sent to any of ``site``'s contacts so far."""
    mine = emails_of(site)
    return [(to, msg) for _f, to, msg in list(smtp.handler.received) if mine & set(to)]


def wait_mail(smtp: SmtpServer, site: SiteConfig, serve: ServeProcess) -> None:
    deadline = time.monotonic() + MAIL_S
    while not mails_to(smtp, site):
        if time.monotonic() > deadline:
            raise AssertionError(f"no email to {site.site.id}'s contacts\n{serve.output[-4000:]}")
        time.sleep(0.1)


def scrape(url: str) -> dict[tuple[str, str], float]:
    """(metric, site) -> value of a /metrics answer."""
    answer = httpx.get(f"{url}/metrics", timeout=10)
    assert answer.status_code == 200
    return {
        (s.name, s.labels.get("site", "")): s.value
        for family in text_string_to_metric_families(answer.text)
        for s in family.samples
    }


@pytest.fixture
def broker() -> Iterator[MosquittoServer]:
    yield from loopback_broker("siltwatch-fleet-notify-")


@pytest.fixture
def smtp() -> Iterator[SmtpServer]:
    server = SmtpServer(free_port())
    server.start()
    try:
        yield server
    finally:
        server.stop()


def write_notify(folder: Path, smtp: SmtpServer) -> Path:
    path = folder / "notify.toml"
    path.write_text(
        f'outbox = "alerts-outbox.sqlite3"\n\n[smtp]\nhost = "127.0.0.1"\nport = {smtp.port}\n'
        'security = "none"\nfrom = "siltwatch@town.example"\n',
        encoding="utf-8",
    )
    return path


def assert_mailed_as(smtp: SmtpServer, site: SiteConfig, others: Sequence[SiteConfig]) -> None:
    """Every mail to the site's contacts is to them only, under its name, nothing of others."""
    mails = mails_to(smtp, site)
    assert mails, site.site.id
    for to, msg in mails:
        assert set(to) <= emails_of(site), (site.site.id, to)
        title = f"{site.site.name} ({site.site.id})"  # the delivery's label
        digest = f"[siltwatch] {site.site.name}: "  # the daily digest, when the run meets it
        subject = str(msg["Subject"])
        assert subject.endswith(title) or subject.startswith(digest), subject
        text = text_of(msg)
        for other in others:
            assert other.site.name not in text and other.site.id not in text, (
                site.site.id,
                other.site.id,
                text,
            )


def outbox_addresses(path: Path) -> set[str]:
    with sqlite3.connect(path) as con:
        return {str(row[0]) for row in con.execute("SELECT address FROM deliveries")}


@pytest.mark.integration
def test_each_site_of_a_fleet_mails_its_own_people_and_a_site_added_by_sighup_too(
    broker: MosquittoServer, smtp: SmtpServer, tmp_path: Path
) -> None:
    sites_dir = tmp_path / "sites"
    sites_dir.mkdir()
    first = [write_named_site(sites_dir, 1), write_named_site(sites_dir, 5)]
    (tmp_path / "later").mkdir()
    later = write_named_site(tmp_path / "later", 9)  # on SIGHUP
    pad = write_sites(tmp_path / "pad", 1)[0]
    notify = write_notify(tmp_path, smtp)
    metrics = f"127.0.0.1:{free_port()}"
    args = fleet_args(
        broker, tmp_path, "fleet",
        "--sites", str(sites_dir), "--notify", str(notify), "--metrics", metrics,
        "--tick-s", "0.5",
    )  # fmt: skip
    serve = ServeProcess(args, tmp_path / "fleet.log")
    base = now_minute() - 90 * MINUTE_MS
    try:
        serve.start(wait_s=30.0)
        assert "alerts by email via one outbox per site" in serve.output, serve.output
        publish(broker, [m for s in first for m in plume(s, pad, base, PLUME_MIN)], "fn-1").close()
        for site in first:
            wait_mail(smtp, site, serve)

        (sites_dir / f"{site_id(9)}.toml").write_text(
            (tmp_path / "later" / f"{site_id(9)}.toml").read_text(encoding="utf-8"),
            encoding="utf-8",
        )
        sighup(serve)
        publish(broker, plume(later, pad, base, PLUME_MIN), "fn-2").close()
        wait_mail(smtp, later, serve)

        url = f"http://{metrics}"
        samples = scrape(url)
        served = {s.site.id for s in [*first, later]}
        depth = {sid for (name, sid) in samples if name == "siltwatch_outbox_pending"}
        assert depth == served, samples
        health = httpx.get(f"{url}/healthz", timeout=10).json()
        assert {f"delivery-{sid}": "alive" for sid in served}.items() <= health["threads"].items()
    finally:
        code = serve.terminate(timeout=30) if serve.proc is not None else 0
    assert code == 0, serve.output
    assert "Traceback" not in serve.output, serve.output

    everyone = [*first, later]
    for site in everyone:
        assert_mailed_as(smtp, site, [o for o in everyone if o is not site])
    for site in everyone:
        own = site_outbox_path(tmp_path / "alerts-outbox.sqlite3", site.site.id)
        assert own.name == f"alerts-outbox-{site.site.id}.sqlite3"
        assert own.exists(), own
        addresses = outbox_addresses(own)
        assert addresses and addresses <= emails_of(site), (site.site.id, addresses)
    assert not (tmp_path / "alerts-outbox.sqlite3").exists(), "a fleet uses the per-site files"
    # Every mail went to the one SMTP server; each site's contacts got at least one.
    assert len(smtp.handler.received) >= len(everyone)


# --- in process: the deliveries follow the sites ----------------------------------------


def test_a_fleets_deliveries_follow_its_sites(tmp_path: Path) -> None:
    (tmp_path / "notify.toml").write_text(
        'outbox = "outbox.sqlite3"\n\n[smtp]\nhost = "127.0.0.1"\nport = 1\n'
        'security = "none"\nfrom = "siltwatch@town.example"\n',
        encoding="utf-8",
    )
    sites_dir = tmp_path / "sites"
    sites_dir.mkdir()
    one, two = write_named_site(sites_dir, 1), write_named_site(sites_dir, 5)
    db = tmp_path / "fleet.sqlite3"
    SqliteStore(db).close()
    args = _args(tmp_path / "notify.toml")
    people = People(args, None)
    people.open(db)
    assert people.notify is not None and people.book is not None and people.delivery is None
    deliveries = FleetDeliveries(
        people.notify,
        lambda site, notify, digests: people.delivery_for(site, notify, digests, db),
        LockedDigests(SqliteStore(db)),
    )
    try:
        first = deliveries.for_site(one)
        assert deliveries.for_site(one) is first, "an unchanged site keeps its delivery"
        other = deliveries.for_site(two)
        assert first.outbox.path != other.outbox.path
        assert first.outbox.path == tmp_path / f"outbox-{site_id(1)}.sqlite3"
        assert first.alive and other.alive

        parts = ServiceParts("", site_deliveries=deliveries)
        assert liveness(parts).body["threads"] == {
            f"delivery-{site_id(1)}": "alive",
            f"delivery-{site_id(5)}": "alive",
        }

        # A contact's change: a new delivery over the same outbox file, the old one stopped.
        path = sites_dir / f"{site_id(1)}.toml"
        path.write_text(
            path.read_text().replace(f"officer@{site_id(1)}", f"chief@{site_id(1)}"),
            encoding="utf-8",
        )
        changed = load_site(path)
        renewed = deliveries.for_site(changed)
        assert renewed is not first and not first.alive and renewed.alive
        assert renewed.outbox.path == first.outbox.path

        deliveries.remove(site_id(5))
        assert not other.alive
        assert sorted(deliveries.deliveries()) == [site_id(1)]
    finally:
        deliveries.close()
        people.close()
    assert not renewed.alive


def _args(notify: Path) -> argparse.Namespace:
    return build_parser().parse_args(["serve", "--sites", "x", "--notify", str(notify)])
