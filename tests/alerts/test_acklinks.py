"""Acknowledgement codes and signed links: genuine, tamper-evident, expiring."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from alerts.acklinks import (
    ALPHABET,
    AckLinkError,
    Links,
    ack_code,
    link_problem,
    link_token,
    parse_link_token,
)

SECRET = b"0123456789abcdef0123456789abcdef"
SITE = "lg-route9n"
ALERT = "al-9ff14d7ed75e140c"
NOW = 1_778_000_000  # 2026-05-05T16:53:20Z
WEEK = 7 * 86_400


def test_the_code_is_six_unambiguous_characters_and_deterministic() -> None:
    code = ack_code(SECRET, SITE, ALERT)
    assert re.fullmatch(f"[{ALPHABET}]{{6}}", code)
    assert code == ack_code(SECRET, SITE, ALERT)
    assert code != ack_code(SECRET, SITE, "al-0635bdf4dbb035d6")
    assert code != ack_code(SECRET, "ll-boulevard", ALERT)
    assert code != ack_code(b"another secret", SITE, ALERT)


def test_a_token_round_trips() -> None:
    token = link_token(SECRET, SITE, ALERT, 3, NOW + WEEK)
    assert len(token) == 22 and re.fullmatch(f"[{ALPHABET}]+", token)
    parsed = parse_link_token(token)
    assert parsed.code == ack_code(SECRET, SITE, ALERT)
    assert parsed.contact_index == 3
    assert parsed.expires_s >= NOW + WEEK and parsed.expires_s - (NOW + WEEK) < 3600
    assert link_problem(SECRET, parsed, SITE, ALERT, NOW) is None
    assert link_problem(SECRET, parse_link_token(token.lower()), SITE, ALERT, NOW) is None


def test_any_changed_character_breaks_the_signature() -> None:
    token = link_token(SECRET, SITE, ALERT, 1, NOW + WEEK)
    for i, ch in enumerate(token):
        other = ALPHABET[(ALPHABET.index(ch) + 1) % len(ALPHABET)]
        tampered = parse_link_token(token[:i] + other + token[i + 1 :])
        assert link_problem(SECRET, tampered, SITE, ALERT, NOW) == "signature does not match", i


def test_a_token_for_another_alert_site_or_secret_does_not_acknowledge_this_one() -> None:
    parsed = parse_link_token(link_token(SECRET, SITE, ALERT, 0, NOW + WEEK))
    assert link_problem(SECRET, parsed, SITE, "al-0635bdf4dbb035d6", NOW) == (
        "signature does not match"
    )
    assert link_problem(SECRET, parsed, "ll-boulevard", ALERT, NOW) == "signature does not match"
    assert link_problem(b"rotated", parsed, SITE, ALERT, NOW) == "signature does not match"


def test_a_token_expires() -> None:
    parsed = parse_link_token(link_token(SECRET, SITE, ALERT, 0, NOW + 3600))
    # Expiry is rounded up to the whole hour: 16:53:20 + 1 h -> 18:00 UTC.
    assert link_problem(SECRET, parsed, SITE, ALERT, NOW + 3599) is None
    assert link_problem(SECRET, parsed, SITE, ALERT, parsed.expires_s - 1) is None
    assert link_problem(SECRET, parsed, SITE, ALERT, parsed.expires_s) == (
        "expired on 2026-05-05 18:00 UTC"
    )


@pytest.mark.parametrize(
    ("token", "reason"),
    [
        ("", "22 characters, not 0"),
        ("ABCDEF" * 4, "22 characters, not 24"),
        ("ABCDEF0123456789ABCDEF", "no '01'"),
        ("ABCDEF-234567892345678", "no '-'"),
    ],
)
def test_a_malformed_token_is_refused_with_why(token: str, reason: str) -> None:
    with pytest.raises(AckLinkError) as info:
        parse_link_token(token)
    assert reason in info.value.reason


@given(
    site=st.text(min_size=1, max_size=30),
    alert=st.text(min_size=1, max_size=40),
    index=st.integers(0, 31),
    expires=st.integers(0, 4_000_000_000),
)
def test_every_token_parses_back(site: str, alert: str, index: int, expires: int) -> None:
    parsed = parse_link_token(link_token(SECRET, site, alert, index, expires))
    assert parsed.contact_index == index
    assert link_problem(SECRET, parsed, site, alert, expires - 1) is None


def test_links_build_the_console_urls_per_contact() -> None:
    links = Links("https://siltwatch.town.example/", SECRET, SITE, ("Dana Ruiz", "Sam Okafor"))
    assert repr(SECRET) not in repr(links)
    url = links.ack_url(ALERT, "Sam Okafor", NOW)
    assert url is not None and url.startswith("https://siltwatch.town.example/a/")
    token = parse_link_token(url.rsplit("/", 1)[1])
    assert token.code == links.code(ALERT)
    assert links.contact_of(token) == "Sam Okafor"
    assert link_problem(SECRET, token, SITE, ALERT, NOW + WEEK - 1) is None
    assert link_problem(SECRET, token, SITE, ALERT, NOW + WEEK + 3600) is not None
    assert links.alert_url(ALERT) == f"https://siltwatch.town.example/sites/{SITE}/alerts/{ALERT}"
    assert links.ack_url(ALERT, "Somebody Else", NOW) is None


def test_without_a_base_url_there_is_a_code_but_no_link() -> None:
    links = Links(None, SECRET, SITE, ("Dana Ruiz",))
    assert links.ack_url(ALERT, "Dana Ruiz", NOW) is None
    assert links.alert_url(ALERT) is None
    assert len(links.code(ALERT)) == 6
