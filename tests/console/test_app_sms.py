"""Inbound SMS: the gateway's webhook, ``ACK <code>``, and Twilio's request signature.

Signatures are computed with twilio's own ``RequestValidator.compute_signature``
over the console's public URL, as Twilio signs what it posts there.
"""

from __future__ import annotations

import logging
from pathlib import Path

import httpx
import pytest
from twilio.request_validator import RequestValidator  # type: ignore[import-untyped]

from alerts.acklinks import ack_code
from alerts.acks import Acknowledgement
from console.auth import MAX_REFUSALS_PER_SOURCE
from console.sms_inbound import parse_ack
from tests.console.app_world import OFFICER, SID, World, make_world

TOKEN = "twilio-auth-token-for-tests"
URL = "https://console.test/sms/inbound"
OFFICER_PHONE = "+15185550199"  # Sam Okafor in the Lake George site file
STRANGER = "+15185550000"


@pytest.fixture
def world(tmp_path: Path) -> World:
    return make_world(tmp_path, twilio_token=TOKEN)


def sms(
    world: World, body: str, sender: str = OFFICER_PHONE, signature: str | None = None
) -> httpx.Response:
    params = {"From": sender, "To": "+15185551000", "Body": body, "MessageSid": "SM" + "0" * 32}
    if signature is None:
        signature = RequestValidator(TOKEN).compute_signature(URL, params)
    headers = {"X-Twilio-Signature": signature}
    response: httpx.Response = world.client().post("/sms/inbound", data=params, headers=headers)
    return response


def code_of(world: World, alert_id: str) -> str:
    return ack_code(world.book.link_secret(), SID, alert_id)


def test_a_signed_ack_from_the_officers_phone_acknowledges(world: World) -> None:
    plume = world.plume_id()
    code = code_of(world, plume)
    response = sms(world, f"  ack {code[:3].lower()} {code[3:]} ")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/xml")
    assert (
        "<Response><Message>siltwatch: acknowledged turbidity contrast at outfall-a"
        in response.text
    )
    at_ms = int(world.clock() * 1000)
    assert world.book.acknowledged(SID, plume) == Acknowledgement(OFFICER, at_ms, "sms")
    assert (OFFICER, "acknowledged", plume, "via sms as officer") in world.actions()


def test_a_bad_signature_is_refused_with_403_logged_and_audited(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    plume = world.plume_id()
    with caplog.at_level(logging.WARNING, logger="console.sms_inbound"):
        response = sms(world, f"ACK {code_of(world, plume)}", signature="bm90IGEgc2lnbmF0dXJl")
    assert response.status_code == 403
    assert world.book.acknowledged(SID, plume) is None
    assert any("invalid X-Twilio-Signature" in r.getMessage() for r in caplog.records)
    assert world.actions("sms_refused")[-1][3].startswith("missing or invalid X-Twilio-Signature")


def test_a_missing_signature_is_refused(world: World) -> None:
    plume = world.plume_id()
    assert sms(world, f"ACK {code_of(world, plume)}", signature="").status_code == 403
    assert world.book.acknowledged(SID, plume) is None


def test_a_signature_for_other_words_is_refused(world: World) -> None:
    plume = world.plume_id()
    signed = RequestValidator(TOKEN).compute_signature(
        URL, {"From": OFFICER_PHONE, "Body": "hello"}
    )
    response = sms(world, f"ACK {code_of(world, plume)}", signature=signed)
    assert response.status_code == 403


def test_a_strangers_number_is_politely_refused(world: World) -> None:
    plume = world.plume_id()
    response = sms(world, f"ACK {code_of(world, plume)}", sender=STRANGER)
    assert response.status_code == 200
    assert "no alert with code" in response.text
    assert world.book.acknowledged(SID, plume) is None
    (who, _action, alert, _detail) = world.actions("sms_refused")[-1]
    assert (who, alert) == (STRANGER, plume)


def test_an_unknown_code_and_other_words_get_a_hint(world: World) -> None:
    assert "no alert with code ZZZZZZ" in sms(world, "ACK ZZZZZZ").text
    assert "reply ACK and its 6-character code" in sms(world, "thanks!").text


def test_without_a_token_inbound_sms_is_refused(tmp_path: Path) -> None:
    world = make_world(tmp_path, twilio_token=None)
    assert sms(world, "ACK ABCDEF").status_code == 403


@pytest.mark.parametrize(
    ("body", "code"),
    [("ACK 7KQ2MZ", "7KQ2MZ"), ("ack 7kq 2mz", "7KQ2MZ"), ("Ack: 7KQ-2MZ", "7KQ2MZ"),
     ("ACK", None), ("ACK 7KQ2M", None), ("please ack 7KQ2MZ", None)],
)  # fmt: skip
def test_reading_the_reply(body: str, code: str | None) -> None:
    assert parse_ack(body) == code


def test_code_guessing_from_one_number_is_slowed_without_audit_rows(world: World) -> None:
    # Before (issue 23): 170 guesses/s, never refused, an audit row each.
    answers = [sms(world, f"ACK {i:06d}".replace("0", "Z")).text for i in range(30)]
    slowed = [a for a in answers if "too many codes" in a]
    assert len(slowed) == 30 - MAX_REFUSALS_PER_SOURCE
    assert len(world.actions("sms_refused")) == MAX_REFUSALS_PER_SOURCE
    # Another number is not slowed by this one's guesses.
    assert "too many codes" not in sms(world, "ACK ZZZZZZ", sender="+15185550142").text


def test_forged_webhook_requests_are_slowed_without_audit_rows(world: World) -> None:
    codes = [
        sms(world, "ACK ZZZZZZ", signature="bm90IGEgc2lnbmF0dXJl").status_code for _ in range(25)
    ]
    assert codes.count(403) == MAX_REFUSALS_PER_SOURCE and codes.count(429) == 25 - codes.count(403)
    assert len(world.actions("sms_refused")) == MAX_REFUSALS_PER_SOURCE
