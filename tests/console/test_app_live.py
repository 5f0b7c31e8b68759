"""The console live and clear at a glance: now is the console's clock, silent stations
are stale, resolved alerts are history, every alert of a person's sites in one list,
silences that hold alerts from people and never from the record, and the alert page's
account of who was told.

Over the Lake George week in a real SQLite store, the console's clock at 2026-05-12
12:00 EDT (the day after the week: its newest reading is 36 hours old), and the real
delivery side (follow-ups, outbox, worker) behind alerts/silences.py over the
console's book (tests/console/live_world.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from console.views import stale_after_ms
from siltwatch.schema import Alert
from tests.console.app_world import (
    INSPECTOR,
    OFFICER,
    OPERATOR,
    SID,
    SITE,
    VIEWER,
    csrf_of,
    log_in,
)
from tests.console.live_world import (
    OFFICER_NAME,
    Delivery,
    LiveWorld,
    make_live_world,
    new_episode,
)

OPERATOR_PHONE, OFFICER_PHONE = "+15185550101", "+15185550199"


@pytest.fixture
def live(tmp_path: Path) -> Iterator[LiveWorld]:
    world = make_live_world(tmp_path)
    yield world
    world.console.close()


@pytest.fixture
def delivery(live: LiveWorld) -> Iterator[Delivery]:
    """The delivery side of ``serve --notify`` over the live world (its outbox closed after)."""
    made = Delivery(live)
    try:
        yield made
    finally:
        made.close()


def login(world: LiveWorld, name: str = OPERATOR) -> TestClient:
    client = TestClient(world.app, base_url="https://console.test", follow_redirects=False)
    assert log_in(client, name).status_code == 303
    return client


def text_of(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def silence(client: TestClient, target: str, **fields: str) -> tuple[int, str]:
    page = client.get(f"/sites/{SID}/silences")
    form = {"csrf": csrf_of(page.text), "target": target, "kind": "", "hours": "4"}
    form |= {"reason": "turbidity probes serviced", "start": ""} | fields
    answer = client.post(f"/sites/{SID}/silences", data=form)
    return answer.status_code, text_of(answer.text)


def test_last_24_hours_end_now_and_a_silent_station_says_for_how_long(live: LiveWorld) -> None:
    client = login(live)
    day = client.get(f"/sites/{SID}?hours=24").text
    assert "2026-05-11 to 2026-05-12 (local days)" in day
    health = text_of(client.get(f"/sites/{SID}").text)
    # The newest reading is 2026-05-11 00:00 EDT, 36 hours before the console's now.
    assert "stale: silent for 36 h 00 min" in health
    station = SITE.station_of()["turb-up"]
    live.add_reading("turb-up", 4.2)
    rows = re.findall(
        r"<tr( class=\"stale\")?>\s*<td data-label=\"Station\"><strong>([^<]+)",
        client.get(f"/sites/{SID}").text,
    )
    assert ("", station) in rows, "the station that just sent a reading is current"
    assert all(stale for stale, sid in rows if sid != station)
    # One interval of silence more than the allowance, and it is stale again.
    spec = next(s for s in SITE.stations if s.id == station)
    live.clock.advance(stale_after_ms(spec) / 1000 + 60)
    assert "stale: silent for" in text_of(client.get("/").text)


def test_a_resolved_alert_shows_its_peak_as_history_not_as_a_live_badge(live: LiveWorld) -> None:
    client = login(live)
    plume = live.plume()
    assert plume.resolved_at is not None and plume.severity == "critical"
    page = client.get(f"/sites/{SID}/alerts/{plume.id}").text
    assert '<span class="badge resolved-badge">resolved</span>' in page
    assert 'class="badge sev-critical"' not in page
    words = text_of(page)
    assert "it reached critical at its worst" in words
    assert "escalation chain continue" not in words
    assert "The episode has ended: there are no more repeats or escalation steps." in words
    listed = client.get("/alerts?days=all&kind=turbidity_contrast").text
    assert 'title="the most severe it reached">peak critical</span>' in listed


def test_the_alert_list_covers_every_site_of_a_person_with_filters_and_counts(
    live: LiveWorld,
) -> None:
    client = login(live)
    every = text_of(client.get("/alerts?days=all").text)
    stored = live.console.store.alerts(SID)
    assert f"{len(stored)} shown" in every
    critical = client.get("/alerts?days=all&severity=critical").text
    shown = re.findall(r'<li class="alert ([^"]+)"', critical)
    assert shown and len(shown) == sum(a.severity == "critical" for a in stored)
    assert all("sev-critical" in c or "resolved" in c for c in shown)
    # Each severity chip counts the list under the other filters, and links to it.
    chips = dict(re.findall(r'href="/alerts\?([^"]+)">(\d+) \w+</a>', critical))
    assert chips["severity=critical&amp;days=all"] == str(len(shown))
    open_now = text_of(client.get("/alerts?state=open").text)
    assert f"{sum(a.resolved_at is None for a in stored)} open" in open_now
    # Within the last day before the console's now nothing opened; open ones still show.
    assert f"{sum(a.resolved_at is None for a in stored)} shown" in text_of(
        client.get("/alerts?days=1").text
    )
    bad = client.get("/alerts?severity=dire")
    assert bad.status_code == 400 and "expected one of critical, warning, info" in bad.text
    assert client.get("/alerts?site=ll-hwy64").status_code == 404


def test_the_alert_list_reads_every_acknowledgement_in_one_query(
    live: LiveWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 25: the list asked the book once a row; a long list must cost one query."""
    client = login(live)
    stored = live.console.store.alerts(SID)
    assert len(stored) >= 3
    at = int(live.console.now_ms())
    for alert in stored[:2]:
        live.console.book.acknowledge(SID, alert.id, OPERATOR, at)
    db = live.console.book.db
    asked: list[str] = []
    execute = db.execute

    def counted(sql: str, args: Sequence[object] = ()) -> Any:
        if "console_notes" in sql:
            asked.append(sql)
        return execute(sql, args)

    monkeypatch.setattr(db, "execute", counted)
    page = text_of(client.get("/alerts?days=all").text)
    assert len(asked) == 1, asked
    assert page.count("✓ Acknowledged by Dana Ruiz") == 2
    assert f"{len(stored)} shown" in page


def test_a_site_without_a_role_is_not_in_anyone_s_list(tmp_path: Path) -> None:
    other = SITE.model_copy(update={"site": SITE.site.model_copy(update={"id": "lg-yard2"})})
    world = make_live_world(tmp_path)
    try:
        world.console.sites = {SID: SITE, "lg-yard2": other}
        yard = new_episode(world, world.plume(), "al-yard2-plume")
        world.console.store.save_alert("lg-yard2", yard)
        world.console.book.accounts.grant(OPERATOR, "lg-yard2", "operator")
        operator = text_of(login(world).get("/alerts?site=lg-yard2").text)
        assert "1 shown" in operator and "turbidity contrast at outfall-a" in operator
        viewer = login(world, VIEWER)
        assert "lg-yard2" not in viewer.get("/alerts?days=all").text
        assert viewer.get("/alerts?site=lg-yard2").status_code == 404
    finally:
        world.console.close()


def test_a_silence_is_recorded_audited_ended_and_refused_for_regulatory_duties(
    live: LiveWorld,
) -> None:
    client = login(live)
    status, words = silence(client, "practice:outfall-a")
    assert status == 303
    (made,) = live.console.book.silences(SID)
    assert (made.scope, made.target, made.by) == ("practice", "outfall-a", OPERATOR)
    assert made.subjects == ("outfall-a", "turb-up", "turb-down")
    assert made.end_ms - made.start_ms == 4 * 3_600_000 and made.start_ms == live.now_ms()
    status, words = silence(client, "practice:outfall-a", kind="inspection_overdue")
    assert status == 400
    assert "“inspection overdue” cannot be silenced: it is a regulatory duty" in words
    assert silence(client, "sensor:no-such-probe")[0] == 400
    assert "Say why alerts are silenced" in silence(client, "station:up-1", reason=" ")[1]
    # An officer and a viewer read the silences; only the site's people make them.
    assert silence(login(live, OFFICER), "station:up-1")[0] == 403
    assert login(live, VIEWER).get(f"/sites/{SID}/silences").status_code == 200
    assert silence(login(live, INSPECTOR), "station:up-1")[0] == 303
    page = client.get(f"/sites/{SID}/silences")
    ended = client.post(f"/sites/{SID}/silences/{made.id}/end", data={"csrf": csrf_of(page.text)})
    assert ended.status_code == 303
    again = client.post(f"/sites/{SID}/silences/{made.id}/end", data={"csrf": csrf_of(page.text)})
    assert again.status_code == 409
    audit = [(e.action, e.who) for e in reversed(live.console.book.audit_log([SID]))]
    assert [a for a in audit if a[0].startswith("silence")] == [
        ("silence_created", OPERATOR),
        ("silence_created", INSPECTOR),
        ("silence_ended", OPERATOR),
    ]


def test_alerts_in_a_silence_are_recorded_and_marked_but_held_from_people(
    live: LiveWorld, delivery: Delivery
) -> None:
    client = login(live)
    assert silence(client, "sensor:turb-down", hours="2")[0] == 303
    held = new_episode(live, live.plume(), "al-held-plume")
    delivery.announce("opened", held)
    delivery.run_for(45 * 60)  # past the officer's step of the chain
    assert delivery.texted() == [], "nobody is texted, no step of the chain is scheduled"
    assert [e for e in delivery.outbox.audit() if e.alert_id == held.id] == []
    # A regulatory duty on the same subject at the same time goes out as ever.
    overdue = held.model_copy(update={"id": "al-overdue", "kind": "inspection_overdue"})
    delivery.announce("opened", overdue)
    assert delivery.texted() != []
    # The record keeps the held episode; the console marks it.
    assert live.console.store.stored_alert(SID, held.id) is not None
    marked = text_of(client.get("/alerts?state=silenced").text)
    assert "1 shown" in marked and f"silenced by {OPERATOR}: turbidity probes serviced" in marked
    page = text_of(client.get(f"/sites/{SID}/alerts/{held.id}").text)
    assert "nobody was texted or emailed about it" in page
    assert "Nobody: a silence held this alert from people" in page
    # Its end, after the silence is over, is held too: nobody heard it begin.
    live.clock.advance(2 * 3600)
    delivery.announce("resolved", held.model_copy(update={"resolved_at": held.opened_at}))
    assert [e for e in delivery.outbox.audit() if e.alert_id == held.id] == []


def test_the_alert_page_shows_who_was_told_and_which_steps_fired_or_were_skipped(
    live: LiveWorld, delivery: Delivery
) -> None:
    client = login(live)
    original = live.plume()
    plume = new_episode(live, original, "al-live-plume")
    delivery.announce("opened", plume)
    delivery.run_for(31 * 60)  # nobody acknowledged: the officer's step fires
    assert delivery.texted() == [OPERATOR_PHONE, OFFICER_PHONE]
    page = text_of(client.get(f"/sites/{SID}/alerts/{plume.id}").text)
    assert "SMS to Dana Ruiz (opening): sent" in page
    assert (
        f"Escalation step to {OFFICER_NAME}: scheduled — officer at 2026-05-12 12:30 EDT "
        "unless acknowledged" in page
    )
    assert f"Escalation step to {OFFICER_NAME}: fired — not acknowledged after 30 min" in page
    assert f"SMS to {OFFICER_NAME} (escalation: not acknowledged in time): sent" in page
    # Another episode acknowledged in time: the officer's step is skipped, and says why.
    second = new_episode(live, original, "al-acked-plume")
    delivery.announce("opened", second)
    page = client.get(f"/sites/{SID}/alerts/{second.id}")
    client.post(f"/sites/{SID}/alerts/{second.id}/acknowledge", data={"csrf": csrf_of(page.text)})
    delivery.run_for(31 * 60)
    words = text_of(client.get(f"/sites/{SID}/alerts/{second.id}").text)
    assert f"Escalation step to {OFFICER_NAME}: skipped — acknowledged by Dana Ruiz" in words
    assert "<svg" in client.get(f"/sites/{SID}/alerts/{original.id}").text, "its plot"


def test_without_an_outbox_the_alert_page_says_it_cannot_tell(live: LiveWorld) -> None:
    plume: Alert = live.plume()
    page = text_of(login(live).get(f"/sites/{SID}/alerts/{plume.id}").text)
    assert "This console cannot read a delivery audit for this site" in page


def test_an_open_missed_deadline_says_how_overdue_it_is_now(live: LiveWorld) -> None:
    client = login(live)
    (overdue,) = [
        a
        for a in live.console.store.alerts(SID)
        if a.kind == "stabilization_overdue" and a.resolved_at is None
    ]
    assert overdue.evidence["overdue_h"] == 0, "the engine wrote it as it opened"
    expected = "6.0 days overdue (due May 6 11:00)"  # due 05-06 11:00, now 05-12 12:00
    for page in ("/", f"/sites/{SID}", "/alerts", f"/sites/{SID}/alerts/{overdue.id}"):
        words = text_of(client.get(page).text)
        assert expected in words and "0 h overdue" not in words, page
    live.clock.advance(24 * 3600)
    assert "7.0 days overdue" in text_of(login(live).get("/alerts").text)
