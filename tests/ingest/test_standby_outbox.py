"""A killed worker's undelivered alerts are sent when it comes back, even as a standby.

Worker A serves two sites from a real PostgreSQL with ``--notify``; the SMTP
server is down, so A's outboxes (files on A's own volume) hold the plumes'
emails. A is killed with SIGKILL; its standby B takes the partition over and
finds those alerts already told in the store, so B does not send them. When A's
supervisor starts A again, A stands by behind B — and sends what its outboxes
held meanwhile, so the officers hear of the plumes once the mail server is back,
not at the next takeover. Each email arrives once.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.alerts.helpers import SmtpServer
from tests.ingest.fleet_world import write_sites
from tests.ingest.live import ServeProcess
from tests.ingest.test_fleet import _broker, fleet_args, now_minute, publish
from tests.ingest.test_fleet_notify import (
    MINUTE_MS,
    PLUME_MIN,
    emails_of,
    plume,
    write_named_site,
)
from tests.servers import free_port

pytestmark = pytest.mark.integration

MAIL_S = 30.0
# A retry every 2 s for a minute: the emails stay pending (not failed) while the server is down.
RETRIES = ", ".join(["2"] * 30)


def notify_file(folder: Path, smtp_port: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "notify.toml"
    path.write_text(
        f'outbox = "alerts-outbox.sqlite3"\n\n[smtp]\nhost = "127.0.0.1"\nport = {smtp_port}\n'
        f'security = "none"\nfrom = "siltwatch@town.example"\n\n[retry]\ndelays_s = [{RETRIES}]\n',
        encoding="utf-8",
    )
    return path


def outbox_rows(folder: Path) -> int:
    """Rows of every outbox file in ``folder`` (a worker's volume)."""
    total = 0
    for path in folder.glob("alerts-outbox-*.sqlite3"):
        with sqlite3.connect(path) as con:
            total += int(con.execute("SELECT count(*) FROM deliveries").fetchone()[0])
    return total


def wait_for(what: str, done: object, timeout_s: float, output: str = "") -> None:
    deadline = time.monotonic() + timeout_s
    while not done():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} within {timeout_s} s\n{output[-3000:]}")
        time.sleep(0.1)


def test_a_killed_worker_sends_its_outbox_as_a_standby(tmp_path: Path, postgres_url: str) -> None:
    sites_dir = tmp_path / "sites"
    sites_dir.mkdir()
    sites = [write_named_site(sites_dir, 1), write_named_site(sites_dir, 5)]
    pad = write_sites(tmp_path / "pad", 1)[0]
    smtp = SmtpServer(free_port())  # not started yet: the mail server is down
    base = now_minute() - 90 * MINUTE_MS
    with _broker() as broker:

        def worker(name: str) -> ServeProcess:
            notify = notify_file(tmp_path / name, smtp.port)
            args = fleet_args(
                broker, tmp_path / name, name,
                "--sites", str(sites_dir), "--partition", "0/1", "--standby",
                "--notify", str(notify), "--tick-s", "0.5", db=postgres_url,
            )  # fmt: skip
            return ServeProcess(args, tmp_path / f"{name}.log")

        a, b = worker("a"), worker("b")
        try:
            a.start(wait_s=30.0)
            b_up = threading.Thread(target=b.start, kwargs={"wait_s": 90.0})
            b_up.start()
            wait_for("B standing by", lambda: "standing by" in b.output, 20, b.output)
            messages = [m for s in sites for m in plume(s, pad, base, PLUME_MIN)]
            publish(broker, messages, "so-1").close()
            # Both sites' plumes, two contacts each: A dies only once all four emails are
            # in its outboxes (with >= 2 it could die before the second site's were).
            wait_for("A's outboxes hold the plumes' emails",
                     lambda: outbox_rows(tmp_path / "a") >= 2 * len(sites), 30, a.output)  # fmt: skip

            a.kill9()  # A dies with its emails unsent
            b_up.join(90)
            assert "siltwatch serving sites" in b.output, b.output
            # Its supervisor starts A again; B holds the partition now, so A never serves
            # (start() gives up waiting for the banner; A keeps running).
            with contextlib.suppress(AssertionError):
                a.start(wait_s=0.5)
            wait_for("A draining as a standby",
                     lambda: "what this worker's outboxes hold is sent meanwhile" in a.outputs[-1],
                     30, a.output)  # fmt: skip

            smtp.start()  # the mail server is back
            for site in sites:
                wait_for(f"the email to {site.site.id}'s contacts",
                         lambda s=site: any(emails_of(s) & set(to)
                                            for _f, to, _m in smtp.handler.received),
                         MAIL_S, a.output + b.output)  # fmt: skip
            assert "siltwatch serving sites" not in a.outputs[-1], "A only stands by"
            time.sleep(3)  # anything sent twice would come within the retry delay
        finally:
            code_b = b.terminate(timeout=30) if b.proc is not None else 0
            a.stop_quietly()
            b.stop_quietly()
            smtp.stop()
    assert code_b == 0, b.output
    assert "Traceback" not in a.output + b.output, a.output + b.output
    sent = Counter(
        (tuple(sorted(to)), str(msg["Subject"])) for _f, to, msg in smtp.handler.received
    )
    twice = {k: n for k, n in sent.items() if n > 1}
    assert sent and not twice, twice
