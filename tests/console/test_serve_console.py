"""``siltwatch serve --http``: the console runs inside the live service, on its store.

A real ``serve`` process against a real Mosquitto, with an account made by
``siltwatch users``. An inspection typed into the console's form takes the
live road (the service's field desk: decoded, committed, judged) and is in
the store; a page without a session is refused; SIGTERM stops both.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import httpx
import pytest

from ingest.store.sqlite import SqliteStore
from tests.console.app_world import SID, SITE, csrf_of, inspection_form
from tests.ingest.live import ServeProcess, lake_george_args, loopback_broker, run_cli
from tests.servers import MosquittoServer, free_port

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
PASSWORD = "basin-outlet-clear-4"


@pytest.fixture
def broker() -> Iterator[MosquittoServer]:
    yield from loopback_broker("siltwatch-console-")


def users(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli("users", *args)


def test_serve_http_takes_an_inspection_from_the_console_into_the_live_store(
    broker: MosquittoServer, tmp_path: Path
) -> None:
    db = tmp_path / "site.sqlite3"
    (tmp_path / "user.pw").write_text(PASSWORD + "\n", encoding="utf-8")
    made = users("add", "Jo Whitaker", "--db", str(db), "--password-file", str(tmp_path / "user.pw"),
                 "--role", f"{SID}:qualified_inspector")  # fmt: skip
    assert made.returncode == 0, made.stderr
    port = free_port()
    args = lake_george_args(broker, tmp_path, str(db), "--client-id", "siltwatch-console-test",
                            "--http", f"127.0.0.1:{port}")  # fmt: skip
    serve = ServeProcess(args, tmp_path / "serve.log")
    serve.start()
    try:
        url = f"http://127.0.0.1:{port}"
        assert f"web console {url}" in serve.output
        assert httpx.get(f"{url}/sites/{SID}").status_code == 303  # no session: to the login

        with httpx.Client(base_url=url) as client:
            login = client.get("/login")
            form = {"name": "Jo Whitaker", "password": PASSWORD, "csrf": csrf_of(login.text)}
            assert client.post("/login", data={**form, "next": "/"}).status_code == 303
            page = client.get(f"/sites/{SID}/duties")
            assert page.status_code == 200
            when = datetime.now(SITE.site.zone) - timedelta(minutes=20)
            posted = client.post(
                f"/sites/{SID}/inspections",
                data=inspection_form("Jo Whitaker", csrf_of(page.text), when),
            )
            assert posted.status_code == 303, posted.text[-500:]
            assert "done=inspection" in posted.headers["location"]
    finally:
        code = serve.terminate()
    assert code == 0, serve.output
    assert re.search(r"inspections=1\b", serve.output), serve.output

    store = SqliteStore(db)
    try:
        (stored,) = store.inspections_after(SID, 0)
    finally:
        store.close()
    assert stored.inspector == "Jo Whitaker"
    assert abs(stored.t - int(when.replace(second=0, microsecond=0).timestamp() * 1000)) == 0
