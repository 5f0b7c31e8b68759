"""GSM 03.38: what fits one SMS segment, and data that would have made it UCS-2."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from alerts.gsm7 import gsm7_septets, is_gsm7, segments, to_gsm7


def test_a_section_sign_citation_is_gsm7() -> None:
    citation = "site proxy for Lake George §148-9 B"
    assert is_gsm7(citation)
    assert gsm7_septets(citation) == len(citation)  # § is a single septet (0x5F)


@pytest.mark.parametrize("text", ["645 ft³ removed", "cleared…", "12:26–20:58", "“quoted”", "🌧"])
def test_what_forces_ucs2(text: str) -> None:
    assert not is_gsm7(text)


def test_extension_characters_count_two_septets() -> None:
    assert gsm7_septets("€") == 2
    assert gsm7_septets("{}[]~\\^|") == 16
    assert gsm7_septets("a€b") == 4


def test_160_plain_characters_are_one_segment_161_are_two() -> None:
    assert segments("x" * 160) == 1
    assert segments("x" * 161) == 2
    assert segments("x" * 306) == 2  # 2 x 153
    assert segments("x" * 307) == 3


def test_extension_characters_fill_a_segment_twice_as_fast() -> None:
    assert segments("€" * 80) == 1
    assert segments("€" * 81) == 2
    # An escape pair is never split across parts: 306 septets would be two parts of 153,
    # but a part holds 76 "€" (152 septets), the 153rd pair does not fit: three parts.
    assert segments("€" * 153) == 3


def test_one_character_outside_the_alphabet_costs_ucs2_segments() -> None:
    assert segments("x" * 70 + "–") == 2  # 71 UTF-16 units: 67 + 4
    assert segments("x" * 69 + "–") == 1
    assert segments("🌧" * 35) == 1  # 70 units: an emoji is a surrogate pair
    assert segments("🌧" * 36) == 2


def test_to_gsm7_transliterates_what_people_write() -> None:
    text = "645 ft³ removed… 12:26–20:58 — “quoted” ‘x’ a\u00a0b 10 m² 5°"
    out = to_gsm7(text)
    assert out == "645 ft3 removed... 12:26-20:58 - \"quoted\" 'x' a b 10 m2 5 deg"
    assert is_gsm7(out)


def test_to_gsm7_keeps_what_the_alphabet_has() -> None:
    kept = "Müller café Ñoño § € Ç å ß Δ où"
    assert to_gsm7(kept) == kept
    assert to_gsm7("Ñandú") == "Ñandu"  # ù is in the alphabet, ú is not


def test_to_gsm7_drops_accents_the_alphabet_lacks_and_marks_the_rest() -> None:
    assert to_gsm7("Brontë façade naïve") == "Bronte facade naive"
    assert to_gsm7("e\u0301") == "é"  # decomposed é is composed, not stripped
    assert to_gsm7("rain 🌧 雨") == "rain ? ?"


@given(st.text(max_size=300))
def test_to_gsm7_always_gives_gsm7(text: str) -> None:
    assert is_gsm7(to_gsm7(text))
