"""``siltwatch serve --db postgresql://… --http --notify``: people in the loop on a fleet's store.

A real ``serve`` on a real PostgreSQL database, a real Mosquitto and a real
SMTP server on loopback (aiosmtpd). The account is made with ``siltwatch users``
in the same database; the Lake George storm is published as a station's outbox
flush; the plume's email carries an acknowledgement link, and following it
records the acknowledgement in the database, where any other worker's delivery
reads it (console/book.py ``ConsoleBook.acknowledged``).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from email.message import EmailMessage
from pathlib import Path

import httpx
import pytest

from console.book import ConsoleBook
from ingest.recordings.formats import read_csv_readings
from ingest.store.from_url import open_store
from tests.alerts.helpers import SmtpServer
from tests.console.app_world import EXAMPLES, SID, SITE, csrf_of
from tests.ingest.live import (
    SERVICE_USERS,
    Publisher,
    ServeProcess,
    batch_messages,
    lake_george_args,
    loopback_broker,
    run_cli,
)
from tests.servers import MosquittoServer, free_port

pytestmark = pytest.mark.integration

PASSWORD = "basin-outlet-clear-4"
LINK = re.compile(r"(http://127\.0\.0\.1:\d+/a/[A-Z0-9]+)")


@pytest.fixture
def broker() -> Iterator[MosquittoServer]:
    yield from loopback_broker("siltwatch-console-pg-")


def plain_text(msg: EmailMessage) -> str:
    body = msg.get_body(("plain",))
    assert body is not None, "the email has a plain-text part"
    return str(body.get_content())


def wait_for_link(smtp: SmtpServer, timeout_s: float) -> tuple[str, str]:
    """(subject, acknowledgement link) of the first email that carries one."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for _sender, _to, msg in list(smtp.handler.received):
            found = LINK.search(plain_text(msg))
            if found:
                return str(msg["Subject"]), found.group(1)
        time.sleep(0.2)
    raise AssertionError(f"no email with an acknowledgement link in {timeout_s} s")


def test_serve_on_postgresql_emails_a_link_that_acknowledges_in_the_database(
    broker: MosquittoServer, postgres_url: str, tmp_path: Path
) -> None:
    (tmp_path / "user.pw").write_text(PASSWORD + "\n", encoding="utf-8")
    made = run_cli("users", "add", "Sam Okafor", "--db", postgres_url,
               "--password-file", str(tmp_path / "user.pw"), "--role", f"{SID}:officer")  # fmt: skip
    assert made.returncode == 0, made.stderr
    smtp = SmtpServer(free_port())
    smtp.start()
    (tmp_path / "notify.toml").write_text(
        f'outbox = "outbox.sqlite3"\n\n[smtp]\nhost = "127.0.0.1"\nport = {smtp.port}\n'
        'security = "none"\nfrom = "siltwatch@town.example"\n',
        encoding="utf-8",
    )
    port = free_port()
    args = lake_george_args(broker, tmp_path, postgres_url, "--client-id", "siltwatch-console-pg-test",
                            "--http", f"127.0.0.1:{port}", "--notify", str(tmp_path / "notify.toml"),
                            "--tick-s", "0.2")  # fmt: skip
    serve = ServeProcess(args, tmp_path / "serve.log")
    publisher = Publisher(broker.host, broker.port, "station", SERVICE_USERS["station"], "st-1")
    try:
        serve.start()
        assert f"web console http://127.0.0.1:{port}" in serve.output
        assert "postgresql://" in serve.output and "via outbox" in serve.output
        readings = read_csv_readings(EXAMPLES / "lake-george-storm.csv", SITE.sensors())
        for station_batches in batch_messages(SITE, readings, 50).values():
            for message in station_batches:
                publisher.publish(message)
        assert publisher.wait_acked(60)
        _subject, link = wait_for_link(smtp, 90)

        with httpx.Client() as client:
            shown = client.get(link)
            assert shown.status_code == 200, shown.text[-500:]
            form = {"csrf": csrf_of(shown.text)} if 'name="csrf"' in shown.text else {}
            done = client.post(link, data=form)
            assert done.status_code == 200, done.text[-500:]
            assert "Acknowledged" in done.text or "acknowledged" in done.text
            again = client.post(link, data=form)
            assert again.status_code == 410, "a link acknowledges once"
        with httpx.Client(base_url=f"http://127.0.0.1:{port}") as officer:
            login = officer.get("/login")
            fields = {"name": "Sam Okafor", "password": PASSWORD, "csrf": csrf_of(login.text)}
            assert officer.post("/login", data={**fields, "next": "/"}).status_code == 303
            overview = officer.get("/")
            assert overview.status_code == 200 and SID in overview.text
            # Each alert page reads serve's outbox: who was emailed, and when.
            listed = officer.get("/alerts?days=all").text
            links = re.findall(r'href="(/sites/[^"]+/alerts/[^"]+)"', listed)
            told = [officer.get(link).text for link in links]
            assert any(re.search(r"Email to [^<]+: <strong>sent</strong>", t) for t in told)
    finally:
        publisher.close()
        code = serve.terminate()
        smtp.stop()
    assert code == 0, serve.output
    assert "Traceback" not in serve.output, serve.output

    store = open_store(postgres_url)
    book = ConsoleBook(postgres_url)
    try:
        acked = [
            (a.id, ack)
            for a in store.alerts(SID)
            if (ack := book.acknowledged(SID, a.id)) is not None
        ]
        assert len(acked) == 1, acked
        alert_id, ack = acked[0]
        assert ack.via == "link", ack
        assert ack.by in {c.name for c in SITE.contacts}, "the link acts as its contact"
        assert [e.action for e in book.audit_log([SID]) if e.alert_id == alert_id].count(
            "link_used"
        ) == 1
    finally:
        book.close()
        store.close()
