"""What the messages say: one GSM-7 SMS segment that keeps the citation and the ACK code,
emails whose subject stays the thread's, evidence people can read."""

from __future__ import annotations

from zoneinfo import ZoneInfo

from hypothesis import given
from hypothesis import strategies as st

from alerts.gsm7 import gsm7_septets, is_gsm7, segments, to_gsm7
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
    what_to_do,
)
from tests.alerts.helpers import CITATION, SITE, note

text = st.text(st.characters(blacklist_categories=["Cs"]), max_size=600)
CODE = "7KQ2MZ"
NY = SiteLabel(
    "lg-route9n", "Route 9N mixed-use, Town of Lake George", ZoneInfo("America/New_York")
)


def one_segment(body: str) -> bool:
    return is_gsm7(body) and segments(body) == 1 and gsm7_septets(body) <= 160


@given(message=text, rule=st.text(min_size=1, max_size=250), subject=text, kind=text)
def test_sms_is_one_gsm7_segment_with_the_citation_and_the_code(
    message: str, rule: str, subject: str, kind: str
) -> None:
    n = note(message=message or "x", rule=rule, subject=subject or "s", kind=kind or "k")
    link = "https://siltwatch.lake-george-town.example/a/BQC5LB32H4HBHE8RS3ENVF"
    body = sms_text(n, SITE, code=CODE, link=link)
    assert one_segment(body)
    assert f"ACK {CODE}" in body
    citation = section_only(to_gsm7(sms_citation(rule)))
    if gsm7_septets(citation) <= 100:
        assert citation in body
    assert "\n" not in body


def test_the_opened_sms_says_what_where_how_much_since_and_the_rule() -> None:
    body = sms_text(note(), NY, code=CODE)
    assert body == (
        "CRITICAL turbidity contrast outfall-a, Route 9N mixed-use: 170.6 NTU vs limit 54.3, "
        f"since May 5 12:26. {CITATION}. ACK {CODE}"
    )
    assert one_segment(body)


def test_without_links_there_is_no_code() -> None:
    body = sms_text(note(), NY)
    assert "ACK" not in body and body.endswith(f"{CITATION}.")


def test_what_is_cut_for_the_link_comes_in_order_never_the_link_code_or_date() -> None:
    def with_link(length: int) -> str:
        link = ("https://s.ex/a/" + "X" * 100)[:length]
        return sms_text(note(), NY, code=CODE, link=link)

    full = sms_text(note(), NY, code=CODE)
    assert gsm7_septets(full) == 150  # what the sizes below are chosen for
    roomy = with_link(9)  # 150 + 1 + 9 = 160: everything fits
    assert "170.6 NTU vs limit 54.3" in roomy and "Route 9N mixed-use" in roomy
    assert CITATION in roomy
    no_name = with_link(17)  # first the site's name goes to its id
    assert "170.6 NTU vs limit 54.3" in no_name and ", lg-route9n:" in no_name
    assert CITATION in no_name
    section = with_link(40)  # then the citation's words before its section
    assert "170.6 NTU vs limit 54.3" in section and "site proxy" not in section
    no_amount = with_link(50)  # then the amount (and what fits again comes back)
    assert "NTU" not in no_amount
    # A long link stays: the subject and the label are cut for it instead.
    long_link = with_link(70)
    for body, length in (
        (roomy, 9),
        (no_name, 17),
        (section, 40),
        (no_amount, 50),
        (long_link, 70),
    ):
        assert one_segment(body) and f"§148-9 B. ACK {CODE}" in body
        assert body.endswith(("https://s.ex/a/" + "X" * 100)[:length])
        assert "May 5 12:26" in body


def test_the_follow_ups_say_why_they_come() -> None:
    reminder = sms_text(note(event="reminder", at="2026-05-05T17:26:00Z"), NY, code=CODE)
    assert reminder.startswith("STILL CRITICAL, not acknowledged: turbidity contrast outfall-a")
    escalated = sms_text(note(event="unacknowledged"), NY, code=CODE)  # 30 min after opening
    assert escalated.startswith(
        "Escalated to you: not acknowledged after 30 min. CRITICAL turbidity contrast outfall-a"
    ) or escalated.startswith("No ACK after 30 min: CRITICAL turbidity contrast outfall-a")
    for body in (reminder, escalated):
        assert one_segment(body) and "§148-9 B." in body and f"ACK {CODE}" in body


def test_resolved_and_escalated_words() -> None:
    cleared = sms_text(note(event="resolved", resolved=True, at="2026-05-06T00:58:00Z"), NY)
    assert cleared.startswith("CLEARED turbidity contrast outfall-a")
    assert "May 5 12:26-20:58" in cleared  # from when to when, with the date
    up = sms_text(note(event="escalated"), NY)
    assert up.startswith("NOW CRITICAL turbidity contrast outfall-a")


def test_every_time_carries_its_date() -> None:
    for at in ("2026-05-05T17:00:00Z", "2026-05-06T14:00:00Z", "2026-05-20T14:00:00Z"):
        body = sms_text(note(event="reminder", at=at), NY)
        assert "since May 5 12:26" in body


def test_data_outside_gsm7_is_transliterated_not_sent_as_ucs2() -> None:
    n = note(subject="outfall–a “north”", rule="Lake George §148-9 B … ft³")
    body = sms_text(n, NY, code=CODE)
    assert one_segment(body)
    assert 'outfall-a "north"' in body and "Lake George §148-9 B ... ft3" in body


def test_an_absurdly_long_citation_is_cut_last_and_the_sms_still_fits() -> None:
    body = sms_text(note(rule="§ " * 400), NY, code=CODE)
    assert one_segment(body) and body.startswith("CRITICAL") and f"ACK {CODE}" in body


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["critical", "warning", "info"]),
            st.sampled_from(["opened", "escalated", "resolved", "reminder", "unacknowledged"]),
            st.text(max_size=40),
            st.text(max_size=80),
        ),
        min_size=1,
        max_size=60,
    )
)
def test_summary_is_one_segment(items: list[tuple[str, str, str, str]]) -> None:
    held = [Held(ev, sev, "turbidity_contrast", subj, rule) for sev, ev, subj, rule in items]
    body = sms_summary(held, SITE, "2026-05-05T03:00:00Z")
    assert one_segment(body)
    assert f"{len(held)} updates held" in body


def test_summary_names_the_critical_items_with_their_citation() -> None:
    held = [Held("opened", "warning", "drain_time", f"basin-{i}", "§148-11 I(3)") for i in range(9)]
    held.insert(5, Held("opened", "critical", "turbidity_contrast", "outfall-a", CITATION))
    body = sms_summary(held, NY, "2026-05-05T03:00:00Z")
    assert body.startswith("Route 9N mixed-use: 10 updates held since May 4 23:00 (1 critical).")
    first = body.index("CRITICAL turbidity contrast")
    assert body[first:].startswith("CRITICAL turbidity contrast outfall-a (§148-9 B);")
    assert "); +9 more." in body  # the warnings are counted, the critical named
    assert one_segment(body)


def test_email_subject_is_one_line_even_if_a_subject_has_newlines() -> None:
    subject = email_subject(note(subject="outfall-a\nBcc: evil@example.org"), SITE)
    assert "\n" not in subject and "\r" not in subject


def test_email_subject_says_the_severity_and_changes_when_it_escalates() -> None:
    opened = email_subject(note(severity="warning"), NY)
    assert opened == (
        "[siltwatch] WARNING: turbidity contrast at outfall-a, "
        "Route 9N mixed-use, Town of Lake George (lg-route9n)"
    )
    for event in ("resolved", "reminder", "unacknowledged"):
        assert email_subject(note(event=event, severity="warning"), NY) == f"Re: {opened}"
    escalated = email_subject(note(event="escalated"), NY)
    assert escalated == opened.replace("WARNING", "NOW CRITICAL")


def test_evidence_is_read_from_its_typed_model_not_dumped() -> None:
    table = evidence_table(note().alert, NY.zone)
    rows = dict(table.rows)
    assert list(rows)[:3] == ["Downstream level", "Limit", "Pair"]  # declared first
    assert rows["Downstream level"] == "170.58 NTU"
    assert rows["Limit"] == "54.31 NTU"
    assert rows["Exceeding since"] == "Tue 2026-05-05 12:26 EDT"
    assert "forecast" in table.left_out
    body = email_body(note(), NY)
    assert "  Downstream level: 170.58 NTU" in body
    assert "downstream_level" not in body and "{" not in body


def test_what_to_do_is_the_closing_instruction_of_the_message() -> None:
    assert what_to_do(note().alert.message) == (
        "Stop the discharge, inspect the silt fence and the basin outlet, and record the "
        "corrective action in the site log."
    )
    assert what_to_do("The basin drained. It is fine.") == ""
