"""Acknowledging from the link in an SMS or email: signed, expiring, single use, no login.

Tokens are made as the delivery worker makes them (alerts/acklinks.py
``link_token``) under the book's ``link_secret``. A GET shows the button and
changes nothing (mail scanners follow links); the POST acknowledges as the
contact the link was sent to.
"""

from __future__ import annotations

from pathlib import Path

from alerts.acklinks import ALPHABET, link_token
from alerts.acks import Acknowledgement
from app.cli import build_parser
from app.serving import People
from tests.console.app_world import OFFICER, SID, SITE, SITE_FILE, World

DAY_S = 86_400


def officer_link(world: World, alert_id: str, valid_s: int = DAY_S) -> str:
    index = [c.name for c in SITE.contacts].index(OFFICER)
    secret = world.book.link_secret()
    return link_token(secret, SID, alert_id, index, int(world.clock()) + valid_s)


def test_opening_the_link_shows_the_alert_and_acknowledges_nothing(world: World) -> None:
    plume = world.plume_id()
    page = world.client().get(f"/a/{officer_link(world, plume)}")
    assert page.status_code == 200
    assert "turbidity contrast at outfall-a" in page.text
    assert "Acknowledge as <strong>Sam Okafor</strong> (officer)?" in page.text
    assert world.book.acknowledged(SID, plume) is None


def test_the_button_acknowledges_as_the_contact_without_a_login(world: World) -> None:
    plume = world.plume_id()
    response = world.client().post(f"/a/{officer_link(world, plume)}")
    assert response.status_code == 200
    assert "Acknowledged by Sam Okafor by link at 2026-05-12 12:00 EDT" in response.text
    at_ms = int(world.clock() * 1000)
    assert world.book.acknowledged(SID, plume) == Acknowledgement(OFFICER, at_ms, "link")
    actions = [(who, action, alert) for who, action, alert, _detail in world.actions()]
    assert (OFFICER, "link_used", plume) in actions
    assert (OFFICER, "acknowledged", plume) in actions


def test_a_tampered_link_is_refused(world: World) -> None:
    plume = world.plume_id()
    token = officer_link(world, plume)
    last = ALPHABET[(ALPHABET.index(token[-1]) + 1) % len(ALPHABET)]
    tampered = token[:-1] + last
    response = world.client().post(f"/a/{tampered}")
    assert response.status_code == 403
    assert "signature does not match" in response.text
    assert world.book.acknowledged(SID, plume) is None
    assert world.actions("link_refused")


def test_a_link_for_another_contact_cannot_be_rewritten_to_the_officer(world: World) -> None:
    plume = world.plume_id()
    secret = world.book.link_secret()
    operator_token = link_token(secret, SID, plume, 0, int(world.clock()) + DAY_S)
    as_officer = operator_token[:6] + ALPHABET[1] + operator_token[7:]
    assert world.client().post(f"/a/{as_officer}").status_code == 403
    assert world.book.acknowledged(SID, plume) is None


def test_an_expired_link_is_refused(world: World) -> None:
    plume = world.plume_id()
    token = officer_link(world, plume, valid_s=3600)
    world.clock.advance(2 * 3600 + 1)
    response = world.client().get(f"/a/{token}")
    assert response.status_code == 403 and "expired" in response.text
    assert world.client().post(f"/a/{token}").status_code == 403
    assert world.book.acknowledged(SID, plume) is None


def test_a_link_works_once(world: World) -> None:
    plume = world.plume_id()
    token = officer_link(world, plume)
    assert world.client().post(f"/a/{token}").status_code == 200
    again = world.client().post(f"/a/{token}")
    assert again.status_code == 410
    assert "already used" in again.text and "2026-05-12 12:00 EDT" in again.text
    assert world.client().get(f"/a/{token.lower()}").status_code == 410, "case does not matter"
    assert len(world.actions("link_used")) == 1


def test_garbage_is_not_a_link(world: World) -> None:
    response = world.client().get("/a/hello")
    assert response.status_code == 403 and "not valid" in response.text


def test_a_worker_without_a_console_links_its_messages_to_the_fleet_console(
    world: World, tmp_path: Path
) -> None:
    """``serve --notify --public-url URL`` without ``--http`` (a fleet worker; the console is
    ``siltwatch console`` on the same store): its messages carry links to URL, signed with
    the book's secret, and the console there acknowledges with them."""
    (tmp_path / "notify.toml").write_text(
        'outbox = "outbox.sqlite3"\n\n[smtp]\nhost = "127.0.0.1"\nport = 25\n'
        'security = "none"\nfrom = "siltwatch@town.example"\n',
        encoding="utf-8",
    )
    args = build_parser().parse_args(
        ["serve", "--site", str(SITE_FILE), "--db", str(world.db),
         "--notify", str(tmp_path / "notify.toml"), "--public-url", "https://console.test"]
    )  # fmt: skip
    people = People(args, SITE)
    people.open(args.db)
    try:
        (email,) = people.delivery.channels
        plume = world.plume_id()
        url = email.links.ack_url(plume, OFFICER, world.clock())
        assert url is not None and url.startswith("https://console.test/a/")
        response = world.client().post(url.removeprefix("https://console.test"))
        assert response.status_code == 200, response.text[-300:]
        ack = world.book.acknowledged(SID, plume)
        assert ack is not None and (ack.by, ack.via) == (OFFICER, "link")
    finally:
        people.close()
