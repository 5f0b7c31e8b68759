"""Every SMS of the example storm weeks is one GSM-7 segment with its citation and ACK code.

Both example replays run in-process (as tests/foundation does); every alert event
they raise is routed as the dispatcher routes it, plus the two follow-ups a
site's escalation chain sends (a reminder, the next person of the chain), and
rendered by the SMS channel with the longest console URL a town is likely to
have. The email channel's thread root is checked against the real events too.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from alerts.acklinks import Links
from alerts.channel import opened_event_time
from alerts.gsm7 import gsm7_septets, is_gsm7, segments, to_gsm7
from alerts.messages import SiteLabel, section_only, sms_citation
from alerts.routing import NoticeEvent, Notification, announced, route
from alerts.sms import SmsSettings, SmsSink
from analytics.events import AlertEvent
from ingest.recordings.replay import ReplayResult, replay_file
from siltwatch.timefmt import utc_iso

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
LONG_BASE = "https://siltwatch.lake-george-town.example"
SECRET = b"example-link-secret-0123456789ab"


def replay(site: str) -> ReplayResult:
    return replay_file(
        EXAMPLES / f"{site}-site.toml",
        EXAMPLES / f"{site}-storm.csv",
        EXAMPLES / f"{site}-inspections.csv",
        site_log=EXAMPLES / f"{site}-site-log.csv",
    )


def notifications(result: ReplayResult) -> list[Notification]:
    """What the dispatcher would send for the replay, and both follow-ups of each opening."""
    site = result.site
    out = []
    for event in result.events:
        if not isinstance(event, AlertEvent) or not announced(NoticeEvent(event.type), event.alert):
            continue
        out.append(route(site, NoticeEvent(event.type), utc_iso(event.at), event.alert))
        if event.type == "opened":
            later = event.at + int(timedelta(minutes=30) / timedelta(milliseconds=1))
            for follow_up in (NoticeEvent.REMINDER, NoticeEvent.UNACKNOWLEDGED):
                out.append(
                    Notification(follow_up, utc_iso(later), event.alert, tuple(site.contacts))
                )
    return out


@pytest.mark.parametrize("site_name", ["lake-george", "lake-lure"])
def test_every_example_sms_is_one_segment_with_citation_and_code(site_name: str) -> None:
    result = replay(site_name)
    site = result.site
    label = SiteLabel.of(site)
    links = Links(LONG_BASE, SECRET, site.site.id, tuple(c.name for c in site.contacts))
    channel = SmsSink(
        SmsSettings("https://api.twilio.com", "AC1", "tok", "+15185550100"),
        label,
        lambda: 1_778_000_000.0,
        links=links,
    )
    notes = notifications(result)
    events = {n.event for n in notes}
    assert {"opened", "resolved", "reminder", "unacknowledged"} <= events
    rendered = 0
    for note in notes:
        for _name, phone in channel.addresses(note):
            body = channel.render(note, phone, "d")["body"]
            assert is_gsm7(body), body
            assert segments(body) == 1 and gsm7_septets(body) <= 160, body
            assert section_only(to_gsm7(sms_citation(note.alert.rule))) in body, body
            assert "siltwatch default" not in body, body
            assert f"ACK {links.code(note.alert.id)}" in body, body
            assert LONG_BASE in body, body  # every text has a link
            rendered += 1
    assert rendered >= 10  # the examples really produced messages to phones


@pytest.mark.parametrize("site_name", ["lake-george", "lake-lure"])
def test_every_later_event_finds_the_opened_notifications_time(site_name: str) -> None:
    """alerts/mail.py threads by recomputing the opened email's delivery id from the alert
    as it stands at a later event: that holds only if the dispatcher's ``at`` for
    "opened" is the alert's opened_at, in the same text, at every later event."""
    events = [e for e in replay(site_name).events if isinstance(e, AlertEvent)]
    opened_at = {e.alert.id: utc_iso(e.at) for e in events if e.type == "opened"}
    later = [e for e in events if e.type != "opened"]
    assert opened_at and later
    for event in events:
        assert opened_event_time(event.alert) == opened_at[event.alert.id]
