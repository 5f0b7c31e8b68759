"""GSM 03.38: which texts an SMS carries in 7-bit septets, and how many segments they cost.

An SMS segment holds 140 octets: 160 characters of the GSM 7-bit default
alphabet (3GPP TS 23.038 §6.2.1), or 70 UTF-16 code units once a single
character outside it appears (the whole message switches to UCS-2). A message
longer than one segment is split with a 6-octet concatenation header (UDH),
leaving 153 septets or 67 UTF-16 units per part; the gateway bills each part.
One character from outside the alphabet (an ellipsis "…", a superscript "³",
an en dash "–") thus turns a 150-character notice into 3 billed segments.

This module is pure: the alphabet, counting, and :func:`to_gsm7`, which
transliterates what people's data may contain so that a message never becomes
UCS-2 by accident. ``§`` *is* in the default alphabet (0x5F), so a legal
citation costs nothing extra. The extension table's characters (``{}[]~\\^|€``
and form feed) are sent as ESC + code and count two septets each.
"""

from __future__ import annotations

import unicodedata

# 3GPP TS 23.038 §6.2.1, the default alphabet in code order 0x00..0x7F; 0x1B is the
# escape to the extension table (written here as a NUL placeholder: it is no character).
_BASIC_TABLE = (
    "@£$¥èéùìòÇ\nØø\rÅå"
    "Δ_ΦΓΛΩΠΨΣΘΞ\x00ÆæßÉ"
    " !\"#¤%&'()*+,-./"
    "0123456789:;<=>?"
    "¡ABCDEFGHIJKLMNO"
    "PQRSTUVWXYZÄÖÑÜ§"
    "¿abcdefghijklmno"
    "pqrstuvwxyzäöñüà"
)
assert len(_BASIC_TABLE) == 128
BASIC: frozenset[str] = frozenset(_BASIC_TABLE) - {"\x00"}
# 3GPP TS 23.038 §6.2.1.1, the extension table: each costs ESC + its code, two septets.
EXTENSION: frozenset[str] = frozenset("\f^{}\\[~]|€")

SEGMENT_SEPTETS = 160  # one segment: 140 octets of 7-bit septets
PART_SEPTETS = 153  # a part of a concatenated message (UDH takes 7 septets)
SEGMENT_UCS2 = 70  # one segment in UCS-2 (UTF-16 code units)
PART_UCS2 = 67

# What people's data may contain, written in the default alphabet. Applied before the
# Unicode compatibility decomposition (which already maps "…" to "...", "³" to "3",
# NBSP to a space, "ﬁ" to "fi"), for what it leaves outside the alphabet.
_TRANSLIT: dict[str, str] = {
    "…": "...",
    "–": "-",  # en dash
    "—": "-",  # em dash
    "‒": "-",
    "―": "-",
    "‐": "-",
    "‑": "-",
    "−": "-",  # minus sign
    "‘": "'",
    "’": "'",
    "‚": "'",
    "‛": "'",
    "′": "'",
    "‹": "'",
    "›": "'",
    "“": '"',
    "”": '"',
    "„": '"',
    "‟": '"',
    "″": '"',
    "«": '"',
    "»": '"',
    "\t": " ",
    "\u00a0": " ",  # no-break space
    "\u2009": " ",  # thin space
    "\u202f": " ",  # narrow no-break space
    "\u200b": "",  # zero-width space
    "\u200c": "",
    "\u200d": "",
    "\ufeff": "",
    "°": " deg",
    "×": "x",
    "÷": "/",
    "±": "+/-",
    "≤": "<=",
    "≥": ">=",
    "≠": "!=",
    "≈": "~",  # an extension character: two septets, still GSM-7
    "•": "*",
    "·": ".",
    "→": "->",
    "←": "<-",
    "µ": "u",
    "μ": "u",
    "⁄": "/",  # fraction slash ("½" decomposes to "1⁄2")
    "©": "(c)",
    "®": "(R)",
    "¢": "c",
    "ç": "c",  # 0x09 is the capital Ç in TS 23.038
}


def is_gsm7(text: str) -> bool:
    """Every character is in the default alphabet or its extension table."""
    return all(ch in BASIC or ch in EXTENSION for ch in text)


def gsm7_septets(text: str) -> int:
    """Septets ``text`` takes in GSM-7 (an extension character is two); the text must
    be GSM-7 (:func:`is_gsm7`), else ValueError."""
    count = 0
    for ch in text:
        if ch in BASIC:
            count += 1
        elif ch in EXTENSION:
            count += 2
        else:
            raise ValueError(f"{ch!r} (U+{ord(ch):04X}) is not in the GSM 7-bit alphabet")
    return count


def ucs2_units(text: str) -> int:
    """UTF-16 code units (what a UCS-2 SMS counts: an emoji is two)."""
    return len(text.encode("utf-16-le")) // 2


def sms_units(text: str) -> int:
    """What the gateway counts against a segment: septets for a GSM-7 text, else UTF-16 units."""
    return gsm7_septets(text) if is_gsm7(text) else ucs2_units(text)


def segments(text: str) -> int:
    """The segments the gateway bills for ``text`` (an empty text is still one SMS).

    GSM-7: one up to 160 septets, else parts of 153; UCS-2: one up to 70 UTF-16
    units, else parts of 67. Parts are packed as a phone does: an escape pair
    (extension character) or a surrogate pair (emoji) is never split between
    two parts, so a part may carry one unit less.
    """
    gsm = is_gsm7(text)
    costs = [(2 if ch in EXTENSION else 1) if gsm else ucs2_units(ch) for ch in text]
    if sum(costs) <= (SEGMENT_SEPTETS if gsm else SEGMENT_UCS2):
        return 1
    part = PART_SEPTETS if gsm else PART_UCS2
    count, used = 1, 0
    for cost in costs:
        if used + cost > part:
            count, used = count + 1, 0
        used += cost
    return count


def _char_to_gsm7(ch: str) -> str:
    if ch in BASIC or ch in EXTENSION:
        return ch
    if ch in _TRANSLIT:
        return _TRANSLIT[ch]
    out = []
    for part in unicodedata.normalize("NFKD", ch):
        if unicodedata.combining(part):
            continue  # an accent the alphabet does not carry: é stays é, ë becomes e
        if part in BASIC or part in EXTENSION:
            out.append(part)
        elif part in _TRANSLIT:
            out.append(_TRANSLIT[part])
        elif unicodedata.category(part) == "Zs":
            out.append(" ")
        else:
            return "?"
    return "".join(out) if out else ("" if unicodedata.combining(ch) else "?")


def to_gsm7(text: str) -> str:
    """``text`` in the GSM 7-bit alphabet: characters in it are kept (é, ü, ñ, §, €), the
    rest transliterated ("…" -> "...", "ft³" -> "ft3", "–" -> "-", curly quotes ->
    straight, NBSP -> space, accents dropped where the alphabet lacks the letter) and
    anything else (an emoji, a CJK character) becomes "?"; never UCS-2."""
    # NFC first: an "e" followed by a combining acute is the alphabet's "é".
    return "".join(_char_to_gsm7(ch) for ch in unicodedata.normalize("NFC", text))
