"""Texts an officer can act on: one segment, a link, a date, people's names for things,
"found late" and "withdrawn: <reason>" said, never a duty id or a siltwatch disclaimer."""

from __future__ import annotations

from zoneinfo import ZoneInfo

from hypothesis import given, settings
from hypothesis import strategies as st

from alerts.gsm7 import gsm7_septets, is_gsm7, segments
from alerts.messages import (
    Held,
    SiteLabel,
    email_body,
    email_subject,
    evidence_table,
    section_only,
    sms_citation,
    sms_summary,
    sms_text,
)
from alerts.routing import NoticeEvent, Notification
from siltwatch.detections import alert_kinds
from siltwatch.latemarks import LATE_PREFIX, WITHDRAWN_PREFIX
from siltwatch.schema import Alert
from tests.alerts.helpers import OFFICER, alert, note

NY = SiteLabel(
    "lg-route9n",
    "Route 9N mixed-use, Town of Lake George",
    ZoneInfo("America/New_York"),
    {"stockpile": "Topsoil stockpile by West Brook", "lg-route9n": "Route 9N mixed-use"},
)
CODE = "7KQ2MZ"
LINK = "https://sw.lg.example/a/BQC5LB32H4HBHE8RS3ENVF"
DISCLAIMER_RULE = (
    "Lake Lure 96.05(B)(17)(c)(i)-(v); due per siltwatch default (96.05(B)(17)(c) names no "
    "deadline)"
)


def overdue(at_due: str = "2026-05-06T15:00:00Z", **kw: str) -> Alert:
    base = alert(kind="stabilization_overdue", subject="du-dad6971507091ccf").model_dump()
    base["evidence"] = {
        "duty": "du-dad6971507091ccf",
        "reason": kw.get("reason", "exposed_24h"),
        "subject": kw.get("subject", "stockpile"),
        "due_at": at_due,
        "overdue_h": 0.0,
    }
    base["kind"] = kw.get("kind", "stabilization_overdue")
    base["opened_at"] = at_due
    base["rule"] = kw.get("rule", "Lake George §148-11 I(3)(e)[3][b]")
    return Alert.model_validate(base)


def test_a_duty_alert_is_named_by_what_it_is_about_and_counts_its_lateness_now() -> None:
    at_open = Notification(NoticeEvent.OPENED, "2026-05-06T15:00:00Z", overdue(), (OFFICER,))
    body = sms_text(at_open, NY, code=CODE, link=LINK)
    assert "du-" not in body and "0 h overdue" not in body
    assert "stabilization of Topsoil" in body and "due May 6 11:00" in body
    later = Notification(NoticeEvent.REMINDER, "2026-05-10T23:00:00Z", overdue(), (OFFICER,))
    text = sms_text(later, NY, code=CODE, link=LINK)
    assert "due May 6 11:00" in text and text.endswith(LINK)
    subject = email_subject(at_open, NY)
    assert subject == (
        "[siltwatch] CRITICAL: overdue: stabilization of Topsoil stockpile by West Brook, "
        "Route 9N mixed-use, Town of Lake George (lg-route9n)"
    )
    assert "4.3 days overdue (due May 6 11:00)" in email_body(later, NY)


def test_a_storm_inspection_is_named_by_its_storm_with_the_date() -> None:
    storm = overdue(
        kind="inspection_overdue", reason="storm", subject="gauge-yard@2026-05-08T12:25:00Z"
    )
    body = sms_text(
        Notification(NoticeEvent.OPENED, "2026-05-11T12:00:00Z", storm, ()), NY, link=LINK
    )
    assert "inspection after the storm of May 8 08:25" in body
    assert "@" not in body.split(" http")[0]


def test_the_citation_drops_siltwatchs_disclaimer_in_a_text() -> None:
    assert sms_citation(DISCLAIMER_RULE) == "Lake Lure 96.05(B)(17)(c)(i)-(v)"
    assert sms_citation("siltwatch default") == ""
    assert sms_citation("Lake George §148-10 A") == "Lake George §148-10 A"
    assert section_only("site proxy for Lake George §148-9 B") == "§148-9 B"
    assert section_only("Lake Lure 96.05(B)(17)(b)") == "96.05(B)(17)(b)"
    assert section_only("per 15A NCAC 02B .0211") == "15A NCAC 02B .0211"
    assert section_only("siltwatch policy") == "siltwatch policy"
    body = sms_text(note(rule=DISCLAIMER_RULE), NY, code=CODE, link=LINK)
    assert "siltwatch" not in body and "96.05(B)(17)(c)(i)-(v)" in body


def test_found_late_and_withdrawn_say_so_in_the_text_and_the_email_subject() -> None:
    late = alert(message=LATE_PREFIX + "Turbidity ...", resolved=True)
    ended = Notification(NoticeEvent.RESOLVED, "2026-05-07T10:00:00Z", late, (OFFICER,))
    text = sms_text(ended, NY, code=CODE, link=LINK)
    assert text.startswith("FOUND LATE") and "May 5 12:26-20:58" in text
    assert "found late" in email_subject(ended, NY)
    opened = sms_text(
        Notification(NoticeEvent.OPENED, "2026-05-07T10:00:00Z", late, ()), NY, link=LINK
    )
    assert opened.startswith("FOUND LATE: CRITICAL") and "May 5" in opened
    gone = alert(message=WITHDRAWN_PREFIX + "Turbidity ...", resolved=True)
    withdrawn = Notification(NoticeEvent.RESOLVED, "2026-05-07T10:00:00Z", gone, (OFFICER,))
    text = sms_text(withdrawn, NY, code=CODE, link=LINK)
    assert text.startswith("Withdrawn: late readings disprove it.")
    assert "CLEARED" not in text and text.endswith(LINK)
    subject = email_subject(withdrawn, NY)
    assert "withdrawn: late readings disprove it" in subject
    assert "What to do" not in email_body(withdrawn, NY)


names = st.text(st.characters(blacklist_categories=["Cs", "Cc"]), min_size=0, max_size=90)


@settings(max_examples=300, deadline=None)
@given(
    kind=st.sampled_from(alert_kinds()),
    event=st.sampled_from(["opened", "escalated", "resolved", "reminder", "unacknowledged"]),
    severity=st.sampled_from(["info", "warning", "critical"]),
    subject=names.filter(bool),
    site_name=names,
    area_name=names,
    rule=st.text(min_size=1, max_size=200),
    mark=st.sampled_from(["", LATE_PREFIX, WITHDRAWN_PREFIX]),
    link_len=st.integers(20, 70),
)
def test_every_text_is_one_segment_with_a_link_and_a_date(
    kind: str,
    event: str,
    severity: str,
    subject: str,
    site_name: str,
    area_name: str,
    rule: str,
    mark: str,
    link_len: int,
) -> None:
    a = alert(kind=kind, subject=subject, severity=severity, rule=rule, resolved=True)
    a = a.model_copy(update={"message": mark + a.message})
    if kind.endswith("_overdue"):
        a = overdue(kind=kind, subject="stockpile", rule=rule).model_copy(
            update={"message": mark + a.message, "resolved_at": a.resolved_at}
        )
    site = SiteLabel("site-1", site_name, ZoneInfo("America/New_York"), {"stockpile": area_name})
    link = ("https://t.example/a/" + "Z" * 80)[:link_len]
    body = sms_text(
        Notification(NoticeEvent(event), "2026-05-07T10:00:00Z", a, ()), site, code=CODE, link=link
    )
    assert is_gsm7(body) and segments(body) == 1 and gsm7_septets(body) <= 160, body
    assert body.endswith(link) and f"ACK {CODE}" in body, body
    assert "May " in body, body  # every time with its date
    assert "siltwatch default" not in body


def test_a_summary_never_shows_a_duty_id() -> None:
    held = [
        Held("opened", "critical", "stabilization_overdue", "du-dad6971507091ccf", "§148-11"),
        Held("opened", "warning", "drain_time", "basin-a", "§148-11 I(3)"),
    ]
    body = sms_summary(held, NY, "2026-05-06T15:00:00Z", link=LINK)
    assert "du-" not in body and "stabilization overdue" in body and body.endswith(LINK)
    assert "May 6 11:00" in body


def test_email_evidence_is_in_peoples_words_and_the_sites_units() -> None:
    trap = alert(kind="sediment_capacity", subject="trap-1").model_copy(
        update={
            "evidence": {
                "trap": "trap-1",
                "sensor": "sed-trap-1",
                "unit": "ft",
                "fraction_lost": 0.53,
                "cleanout_fraction": 0.5,
                "warn_fraction": 0.4,
                "sediment_depth_m": 0.6096,
                "sediment_volume_m3": 19.28,
                "design_volume_m3": 36.36,
                "ignored_readings": 0,
            }
        }
    )
    rows = dict(evidence_table(trap, NY.zone).rows)
    assert rows["Sediment depth"] == "2 ft"
    assert rows["Sediment volume"] == "680.87 ft³" and rows["Design volume"] == "1284.04 ft³"
    assert not [k for k in rows if "ignored" in k.lower() or "Warn" in k or k == "Sensor"]
    plume = dict(evidence_table(alert(), NY.zone).rows)
    assert plume["Downstream level"] == "170.58 NTU"
    spiky = alert().model_copy(
        update={"evidence": {**alert().evidence, "spike_flagged_in_window": 0, "window_s": 900}}
    )
    assert not [k for k, _v in evidence_table(spiky, NY.zone).rows if "Spike" in k or "Window" in k]


@settings(max_examples=150, deadline=None)
@given(
    items=st.lists(
        st.tuples(
            st.sampled_from(["critical", "warning", "info"]),
            st.sampled_from(["opened", "escalated", "resolved", "reminder", "unacknowledged"]),
            st.sampled_from(alert_kinds()),
            names,
            st.text(max_size=120),
        ),
        min_size=1,
        max_size=50,
    ),
    site_name=names,
    link_len=st.integers(20, 70),
)
def test_every_summary_is_one_segment_with_a_link_and_a_date(
    items: list[tuple[str, str, str, str, str]], site_name: str, link_len: int
) -> None:
    held = [Held(ev, sev, kind, subj, rule) for sev, ev, kind, subj, rule in items]
    site = SiteLabel("site-1", site_name, ZoneInfo("America/New_York"))
    link = ("https://t.example/s/" + "Z" * 80)[:link_len]
    body = sms_summary(held, site, "2026-05-05T03:00:00Z", link=link)
    assert is_gsm7(body) and segments(body) == 1 and gsm7_septets(body) <= 160, body
    assert body.endswith(link) and "May 4 23:00" in body, body


def test_a_cleared_text_says_how_bad_it_got_not_the_value_at_clearing() -> None:
    plume = alert(resolved=True)
    plume = plume.model_copy(
        update={
            "evidence": {
                **plume.evidence,
                "downstream_level": 26.66,
                "limit": 33.7,
                "peak_downstream_level": 170.58,
                "peak_limit": 54.31,
            }
        }
    )
    text = sms_text(
        Notification(NoticeEvent.RESOLVED, "2026-05-06T00:58:00Z", plume, ()), NY, link=LINK
    )
    assert "peak 170.6 vs 54.3" in text and "26.7" not in text, text
