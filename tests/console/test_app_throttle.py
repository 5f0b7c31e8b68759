"""Guessing is slowed, never rewarded, and strangers cannot lock a person out.

Each test here failed before (issue 23, items 5 and 6): uvicorn believed
``X-Forwarded-For`` from loopback, so 40/40 wrong passwords were checked; 20
failures for made-up names from one address locked the real user out for 15
minutes; a session outlived ``users passwd``; refused links and forged login
forms wrote an audit row each, unthrottled; a link could carry any lifetime.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import httpx
import pytest

from alerts.acklinks import MAX_TTL_S, Links, link_token
from console.auth import MAX_REFUSALS_PER_SOURCE, MAX_WAIT_S, SESSION_COOKIE
from console.server import ConsoleServer
from tests.console.app_world import OPERATOR, PASSWORD, SID, World, csrf_of, log_in, make_world

WRONG = "guess-guess-guess"


def _attempt(client: httpx.Client, name: str, password: str, forwarded: str) -> int:
    headers = {"X-Forwarded-For": forwarded}
    page = client.get("/login", headers=headers)
    form = {"name": name, "password": password, "csrf": csrf_of(page.text), "next": "/"}
    return client.post("/login", data=form, headers=headers).status_code


def _over_http(world: World, trusted: list[str]) -> tuple[ConsoleServer, httpx.Client]:
    server = ConsoleServer(world.app, "127.0.0.1", 0, trusted_proxies=trusted)
    server.start()
    return server, httpx.Client(base_url=server.url, follow_redirects=False, timeout=10)


def test_forwarded_for_from_loopback_is_not_believed_unless_configured(tmp_path: Path) -> None:
    world = make_world(tmp_path, public_url="http://127.0.0.1:8080")
    server, client = _over_http(world, [])
    try:
        answers = Counter(_attempt(client, OPERATOR, WRONG, f"203.0.113.{i}") for i in range(1, 41))
        assert answers == {401: 5, 429: 35}, answers
        assert _attempt(client, OPERATOR, PASSWORD, "198.51.100.9") == 429
    finally:
        client.close()
        server.stop()
    sources = {d for _w, a, _i, d in world.actions() if a == "login_failed"}
    assert sources == {"from 127.0.0.1"}, "the forged addresses were not believed"
    # With the proxy configured, the address it forwards is the one counted.
    server, client = _over_http(world, ["127.0.0.1"])
    try:
        assert _attempt(client, "nobody-here", WRONG, "203.0.113.77") == 401
    finally:
        client.close()
        server.stop()
    assert ("nobody-here", "login_failed", "", "from 203.0.113.77") in world.actions()


def _flood(world: World) -> None:
    """A stranger's 25 failures for made-up names and 25 for the real person."""
    stranger = world.client()
    for i in range(25):
        log_in(stranger, f"made-up-{i}", WRONG)
    for _ in range(25):
        log_in(stranger, OPERATOR, WRONG)


def test_strangers_cannot_lock_a_person_out_of_their_own_browser(world: World) -> None:
    mine = world.login()  # this browser now carries the person's device cookie
    mine.cookies.delete(SESSION_COOKIE)  # the session is over (logged out, or expired)
    _flood(world)
    assert log_in(mine, OPERATOR).status_code == 303
    assert mine.get("/").status_code == 200


def test_strangers_only_slow_a_new_browser_for_at_most_a_minute(world: World) -> None:
    _flood(world)
    fresh = world.client()
    waiting = log_in(fresh, OPERATOR)
    assert waiting.status_code == 429 and "Wait" in waiting.text
    world.clock.advance(MAX_WAIT_S + 1)
    assert log_in(fresh, OPERATOR).status_code == 303


def test_a_password_change_ends_the_persons_sessions(world: World) -> None:
    client = world.login()
    other = world.login()
    assert client.get("/").status_code == 200
    world.book.accounts.set_password(OPERATOR, "a-whole-new-secret")
    assert client.get("/").status_code == 303 and other.get("/").status_code == 303
    assert log_in(world.client(), OPERATOR, "a-whole-new-secret").status_code == 303


def test_refused_links_are_slowed_and_write_a_bounded_number_of_rows(world: World) -> None:
    client = world.client()
    answers = Counter(client.get(f"/a/{'2' * 21}{i % 10}").status_code for i in range(100))
    assert answers == {403: MAX_REFUSALS_PER_SOURCE, 429: 100 - MAX_REFUSALS_PER_SOURCE}
    assert len(world.actions("link_refused")) == MAX_REFUSALS_PER_SOURCE


def test_forged_login_forms_are_slowed_and_write_a_bounded_number_of_rows(world: World) -> None:
    client = world.client()
    form = {"name": OPERATOR, "password": WRONG, "csrf": "forged", "next": "/"}
    answers = Counter(client.post("/login", data=form).status_code for _ in range(60))
    assert answers == {403: MAX_REFUSALS_PER_SOURCE, 429: 60 - MAX_REFUSALS_PER_SOURCE}
    assert len(world.actions("csrf_refused")) == MAX_REFUSALS_PER_SOURCE


def test_a_link_that_lives_longer_than_the_maximum_is_refused(world: World) -> None:
    alert_id, secret, now = world.plume_id(), world.book.link_secret(), world.clock()
    year = link_token(secret, SID, alert_id, 0, int(now) + 365 * 86_400)
    refused = world.client().get(f"/a/{year}")
    assert refused.status_code == 403 and "expires too far ahead" in refused.text
    week = link_token(secret, SID, alert_id, 0, int(now) + 7 * 86_400)
    assert world.client().get(f"/a/{week}").status_code == 200
    with pytest.raises(ValueError, match="lifetime"):
        Links("https://console.test", secret, SID, ("Dana Ruiz",), ttl_s=MAX_TTL_S + 1)
