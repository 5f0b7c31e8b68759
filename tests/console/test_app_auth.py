"""Who gets in: passwords, sessions, the login rate limit, CSRF, and each person's sites.

Over the Lake George week in a real SQLite store (tests/console/app_world.py).
A page asked for without a session answers 303 to /login and its content is
not served; a form posted without one answers 403.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from console.auth import MAX_FAILURES, SESSION_MS
from siltwatch.config import load_site
from tests.console.app_world import (
    EXAMPLES,
    OFFICER,
    OPERATOR,
    PASSWORD,
    SID,
    SITE,
    VIEWER,
    World,
    csrf_of,
    log_in,
    make_world,
)


def test_the_operator_logs_in_and_sees_the_storm_weeks_alerts(world: World) -> None:
    client = world.client()
    response = log_in(client, OPERATOR)
    assert response.status_code == 303 and response.headers["location"] == "/"
    page = client.get("/")
    assert page.status_code == 200
    assert "Route 9N mixed-use" in page.text
    assert "turbidity contrast</strong> at outfall-a" not in page.text  # resolved: not open
    assert "drain time</strong> at basin-a" in page.text  # still open at the week's end
    assert ("Dana Ruiz", "login") in [(w, a) for w, a, _i, _d in world.actions()]


def test_the_session_cookie_is_httponly_samesite_and_secure_over_https(world: World) -> None:
    client = world.client()
    response = log_in(client, OPERATOR)
    cookie = response.headers["set-cookie"].lower()
    assert "siltwatch_session=" in cookie
    assert "httponly" in cookie and "samesite=lax" in cookie and "secure" in cookie


def test_without_https_the_cookie_is_not_marked_secure(tmp_path: Path) -> None:
    world = make_world(tmp_path, public_url="http://127.0.0.1:8080")
    client = world.client()
    client.base_url = client.base_url.copy_with(scheme="http")
    cookie = log_in(client, OPERATOR).headers["set-cookie"].lower()
    assert "httponly" in cookie and "secure" not in cookie


def test_a_wrong_password_is_refused_and_audited(world: World) -> None:
    client = world.client()
    response = log_in(client, OPERATOR, "not-the-password")
    assert response.status_code == 401
    assert "Wrong name or password." in response.text
    assert client.get("/").status_code == 303
    assert world.actions("login_failed")[-1][0] == OPERATOR


def test_an_unknown_name_gets_the_same_answer(world: World) -> None:
    response = log_in(world.client(), "Nobody Here", PASSWORD)
    assert response.status_code == 401 and "Wrong name or password." in response.text


def test_after_five_failures_even_the_right_password_waits(world: World) -> None:
    client = world.client()
    for _ in range(MAX_FAILURES):
        assert log_in(client, OPERATOR, "guess-guess-guess").status_code == 401
    blocked = log_in(client, OPERATOR)
    assert blocked.status_code == 429
    assert "Too many failed logins" in blocked.text and "Wait 1 second " in blocked.text
    assert world.actions("login_rate_limited")
    assert client.get("/").status_code == 303, "no session was opened"
    world.clock.advance(1)  # slowed, not locked: tests/console/test_app_throttle.py
    assert log_in(client, OPERATOR).status_code == 303


def test_the_rate_limit_is_per_person_other_people_still_log_in(world: World) -> None:
    client = world.client()
    for _ in range(MAX_FAILURES):
        log_in(client, OPERATOR, "guess-guess-guess")
    assert log_in(world.client(), OFFICER).status_code == 303


def test_a_login_post_without_the_forms_token_is_refused(world: World) -> None:
    client = world.client()
    client.get("/login")
    response = client.post("/login", data={"name": OPERATOR, "password": PASSWORD, "csrf": "x"})
    assert response.status_code == 403
    assert client.get("/").status_code == 303
    assert world.actions("csrf_refused")


@pytest.mark.parametrize(
    "path",
    ["/", f"/sites/{SID}", f"/sites/{SID}/duties", "/audit", f"/sites/{SID}/report"],
)
def test_a_page_without_a_session_is_refused(world: World, path: str) -> None:
    response = world.client().get(path)
    assert response.status_code == 303
    assert response.headers["location"].startswith("/login?next=")
    assert "Route 9N" not in response.text and "<table" not in response.text


def test_an_alert_page_without_a_session_serves_nothing_of_the_alert(world: World) -> None:
    plume = world.plume_id()
    response = world.client().get(f"/sites/{SID}/alerts/{plume}")
    assert response.status_code == 303
    assert "outfall-a" not in response.text and "148-9" not in response.text


def test_a_form_posted_without_a_session_is_refused(world: World) -> None:
    plume = world.plume_id()
    response = world.client().post(f"/sites/{SID}/alerts/{plume}/acknowledge", data={"csrf": "x"})
    assert response.status_code == 403
    assert world.book.acknowledged(SID, plume) is None


def test_a_forged_csrf_token_is_refused_with_403_and_audited(world: World) -> None:
    plume = world.plume_id()
    client = world.login()
    response = client.post(f"/sites/{SID}/alerts/{plume}/acknowledge", data={"csrf": "0" * 64})
    assert response.status_code == 403
    assert "not sent from your console page" in response.text
    assert world.book.acknowledged(SID, plume) is None
    (who, _action, _alert, detail) = world.actions("csrf_refused")[-1]
    assert who == OPERATOR and "acknowledge" in detail


def test_another_sessions_csrf_token_does_not_work(world: World) -> None:
    plume = world.plume_id()
    theirs = csrf_of(world.login(OFFICER).get(f"/sites/{SID}/alerts/{plume}").text)
    mine = world.login(OPERATOR)
    response = mine.post(f"/sites/{SID}/alerts/{plume}/acknowledge", data={"csrf": theirs})
    assert response.status_code == 403
    assert world.book.acknowledged(SID, plume) is None


def test_logout_ends_the_session(world: World) -> None:
    client = world.login()
    page = client.get("/")
    response = client.post("/logout", data={"csrf": csrf_of(page.text)})
    assert response.status_code == 303
    assert client.get("/").status_code == 303
    assert world.actions("logout")[-1][0] == OPERATOR


def test_a_session_expires_after_twelve_hours(world: World) -> None:
    client = world.login()
    assert client.get("/").status_code == 200
    world.clock.advance(SESSION_MS / 1000 + 1)
    assert client.get("/").status_code == 303


def test_people_see_only_the_sites_they_hold_a_role_on(tmp_path: Path) -> None:
    lure = load_site(EXAMPLES / "lake-lure-site.toml")
    world = make_world(tmp_path, sites={SID: SITE, lure.site.id: lure})
    client = world.login(VIEWER)
    overview = client.get("/")
    assert "Route 9N" in overview.text and (lure.site.name or lure.site.id) not in overview.text
    response = client.get(f"/sites/{lure.site.id}")
    assert response.status_code == 404
    assert "No site" in response.text


def test_the_audit_log_is_for_operators_and_officers(world: World) -> None:
    assert world.login(VIEWER).get("/audit").status_code == 403
    page = world.login(OPERATOR).get("/audit")
    assert page.status_code == 200 and "login" in page.text


def test_health_check_needs_no_session(world: World) -> None:
    response = world.client().get("/healthz")
    assert response.status_code == 200 and response.json()["status"] == "ok"


def test_pages_allow_only_the_console_s_own_scripts_and_forbid_referrers(world: World) -> None:
    response = world.client().get("/login")
    parts = [p.partition(" ") for p in response.headers["content-security-policy"].split("; ")]
    policy = {name: value for name, _, value in parts}
    assert policy["default-src"] == "'none'"
    assert policy["script-src"] == "'self'", "no inline script, no eval, no CDN"
    scripts = re.findall(r"<script[^>]*>", world.login().get("/").text)
    assert scripts == ['<script src="/static/live.js" defer>']
    assert response.headers["referrer-policy"] == "no-referrer"
    assert response.headers["cache-control"] == "no-store"
