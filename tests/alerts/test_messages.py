"""What the messages say: the SMS fits in 320 characters and the citation always survives."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from alerts.messages import (
    Held,
    email_subject,
    fit_with_citation,
    one_line,
    sms_length,
    sms_summary,
    sms_text,
)
from tests.alerts.helpers import CITATION, SITE, note

text = st.text(st.characters(blacklist_categories=["Cs"]), max_size=600)


@given(message=text, rule=st.text(min_size=1, max_size=250), subject=text, kind=text)
def test_sms_fits_and_keeps_the_citation(message: str, rule: str, subject: str, kind: str) -> None:
    n = note(message=message or "x", rule=rule, subject=subject or "s", kind=kind or "k")
    body = sms_text(n, SITE)
    assert sms_length(body) <= 320
    if sms_length(one_line(rule)) <= 250:
        assert body.endswith(f"Rule: {one_line(rule)}") or not one_line(rule)
    assert "\n" not in body


def test_an_absurdly_long_citation_is_cut_last_and_the_sms_still_fits() -> None:
    body = fit_with_citation("CRITICAL opened: x", "what", "§ " * 400)
    assert sms_length(body) <= 320 and body.startswith("CRITICAL opened: x")


def test_the_description_is_cut_before_the_head_and_citation() -> None:
    body = sms_text(note(message="word " * 300), SITE)
    assert body.startswith("CRITICAL opened: turbidity_contrast outfall-a, lg-route9n.")
    assert "…" in body and body.endswith(f"Rule: {CITATION}")


def test_an_emoji_counts_as_two_gateway_characters() -> None:
    assert sms_length("🌧") == 2
    assert sms_length(sms_text(note(message="🌧" * 400), SITE)) <= 320


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["critical", "warning", "info"]),
            st.sampled_from(["opened", "escalated", "resolved"]),
            st.text(max_size=40),
            st.text(max_size=80),
        ),
        min_size=1,
        max_size=60,
    )
)
def test_summary_fits_and_lists_a_critical_first(items: list[tuple[str, str, str, str]]) -> None:
    held = [Held(ev, sev, "turbidity_contrast", subj, rule) for sev, ev, subj, rule in items]
    body = sms_summary(held, SITE, "2026-05-05T03:00:00Z")
    assert sms_length(body) <= 320
    assert f"{len(held)} alert updates held" in body


def test_summary_names_the_critical_items_with_their_citation() -> None:
    held = [Held("opened", "warning", "drain_time", f"basin-{i}", "§148-11 I(3)") for i in range(9)]
    held.insert(5, Held("opened", "critical", "turbidity_contrast", "outfall-a", CITATION))
    body = sms_summary(held, SITE, "2026-05-05T03:00:00Z")
    assert "10 alert updates held" in body and "(1 critical)" in body
    first = body.index("CRITICAL opened turbidity_contrast outfall-a")
    assert body[first:].startswith(f"CRITICAL opened turbidity_contrast outfall-a ({CITATION});")
    assert first < body.index("WARNING")


def test_email_subject_is_one_line_even_if_a_subject_has_newlines() -> None:
    subject = email_subject(note(subject="outfall-a\nBcc: evil@example.org"), SITE)
    assert "\n" not in subject and "\r" not in subject
