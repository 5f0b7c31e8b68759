"""Acknowledgement codes and signed links: an officer answers an alert from the message.

Two ways to answer, both computed from a secret at send time with no table:

- the **code**, 6 characters (``ACK 7KQ2MZ``, replied by SMS): HMAC-SHA256 of the
  site and the alert id, deterministic, so the console finds the alert by
  computing the code of each of the site's alerts and comparing;
- the **link**, ``{base_url}/a/{token}``, 22 URL-safe characters: the code,
  which contact it was sent to (their index in the site file), when it
  expires (whole hours since the epoch) and a 50-bit MAC over all of it. It
  acknowledges without logging in, so it is signed, expires (7 days by
  default) and is single use: **the console enforces single use** by recording
  every token it accepted and refusing it a second time (console/book.py);
  this module only says whether a token is genuine and current.

The alphabet is Crockford-like base32 without 0/1/I/O ("23456789ABCDEFGHJKLMNPQRSTUVWXYZ"):
nothing to misread on a phone, nothing to escape in a URL. The code's 30 bits
make a collision among one site's alerts negligible; it identifies, the MAC
authorises. The secret (``link_secret``) is made once per store by the console
and passed in here; this module does no I/O.
"""

from __future__ import annotations

import hashlib
import hmac
import urllib.parse
from dataclasses import dataclass, field
from datetime import UTC

from siltwatch.timefmt import local_time

ALPHABET = "23456789ABCDEFGHJKLMNPQRSTUVWXYZ"
CODE_LEN = 6  # 30 bits
INDEX_LEN = 1  # a contact index below 32
EXPIRY_LEN = 5  # hours since the epoch: 32**5 h is about 3800 years
MAC_LEN = 10  # 50 bits
TOKEN_LEN = CODE_LEN + INDEX_LEN + EXPIRY_LEN + MAC_LEN  # 22
MAX_CONTACTS = len(ALPHABET) ** INDEX_LEN
DEFAULT_TTL_S = 7 * 86_400
# The longest a link may live: a token whose expiry lies further ahead is refused
# however genuine (a link leaked from an old message must not work for years).
MAX_TTL_S = 30 * 86_400


class AckLinkError(ValueError):
    """A token that is not one of ours at all (wrong length, foreign characters)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class LinkToken:
    """The parts of a link token (:func:`parse_link_token`); not yet verified."""

    code: str
    contact_index: int
    expires_h: int
    mac: str

    @property
    def expires_s(self) -> int:
        return self.expires_h * 3600


def _encode(value: int, width: int) -> str:
    """``value`` in ``width`` characters of the alphabet (most significant first)."""
    if not 0 <= value < len(ALPHABET) ** width:
        raise ValueError(f"{value} does not fit in {width} characters")
    out = []
    for _ in range(width):
        value, digit = divmod(value, len(ALPHABET))
        out.append(ALPHABET[digit])
    return "".join(reversed(out))


def _decode(text: str) -> int:
    value = 0
    for ch in text:
        value = value * len(ALPHABET) + ALPHABET.index(ch)
    return value


def _digest(secret: bytes, message: str) -> bytes:
    if not secret:
        raise ValueError("the acknowledgement secret is empty")
    return hmac.new(secret, message.encode("utf-8"), hashlib.sha256).digest()


def ack_code(secret: bytes, site: str, alert_id: str) -> str:
    """The 6-character code of one alert episode (``ACK <code>`` by SMS)."""
    digest = _digest(secret, f"code|{site}|{alert_id}")
    return _encode(int.from_bytes(digest[:4], "big") >> 2, CODE_LEN)  # 30 bits


def _mac(secret: bytes, site: str, alert_id: str, contact_index: int, expires_h: int) -> str:
    digest = _digest(secret, f"link|{site}|{alert_id}|{contact_index}|{expires_h}")
    return _encode(int.from_bytes(digest[:7], "big") >> 6, MAC_LEN)  # 50 bits


def link_token(secret: bytes, site: str, alert_id: str, contact_index: int, expires_s: int) -> str:
    """The 22-character token of a link for one contact, valid until ``expires_s``
    (epoch seconds, rounded up to the whole hour)."""
    if not 0 <= contact_index < MAX_CONTACTS:
        raise ValueError(f"contact index {contact_index} is not below {MAX_CONTACTS}")
    expires_h = -(-int(expires_s) // 3600)
    return (
        ack_code(secret, site, alert_id)
        + _encode(contact_index, INDEX_LEN)
        + _encode(expires_h, EXPIRY_LEN)
        + _mac(secret, site, alert_id, contact_index, expires_h)
    )


def parse_link_token(token: str) -> LinkToken:
    """Split a token into its parts; AckLinkError when it cannot be one of ours."""
    text = token.strip().upper()
    if len(text) != TOKEN_LEN:
        raise AckLinkError(f"an acknowledgement token has {TOKEN_LEN} characters, not {len(text)}")
    foreign = sorted({ch for ch in text if ch not in ALPHABET})
    if foreign:
        raise AckLinkError(f"an acknowledgement token has no {''.join(foreign)!r}")
    index_end = CODE_LEN + INDEX_LEN
    expiry_end = index_end + EXPIRY_LEN
    return LinkToken(
        code=text[:CODE_LEN],
        contact_index=_decode(text[CODE_LEN:index_end]),
        expires_h=_decode(text[index_end:expiry_end]),
        mac=text[expiry_end:],
    )


def link_problem(
    secret: bytes, token: LinkToken, site: str, alert_id: str, now_s: float
) -> str | None:
    """Why ``token`` does not acknowledge ``alert_id`` of ``site`` now, or None when it does.

    The code and the MAC are compared in constant time; a token for another alert
    or site, or with any character changed, is "signature does not match". Only a
    genuine token is judged on its expiry. Single use is the console's to enforce.
    """
    expected = ack_code(secret, site, alert_id) + _mac(
        secret, site, alert_id, token.contact_index, token.expires_h
    )
    if not hmac.compare_digest(token.code + token.mac, expected):
        return "signature does not match"
    if now_s >= token.expires_s:
        return f"expired on {local_time(token.expires_s * 1000, UTC)}"
    if token.expires_s > now_s + MAX_TTL_S + 3600:  # + the hour the expiry is rounded up
        return f"expires too far ahead ({local_time(token.expires_s * 1000, UTC)}; a link lives at most {MAX_TTL_S // 86_400} days)"
    return None


@dataclass(frozen=True)
class Links:
    """What messages need to offer an answer: the code, the link, the console's page.

    ``base_url``: the console's public URL (``https://siltwatch.town.example``);
    without it the SMS still carries the code. ``contacts``: the site's contact
    names in the site file's order, the index a link carries (at most 32).
    """

    base_url: str | None
    secret: bytes = field(repr=False)
    site: str
    contacts: tuple[str, ...] = ()
    ttl_s: int = DEFAULT_TTL_S

    def __post_init__(self) -> None:
        if not 0 < self.ttl_s <= MAX_TTL_S:
            raise ValueError(
                f"a link's lifetime of {self.ttl_s} s is not between 1 s and {MAX_TTL_S} s "
                f"({MAX_TTL_S // 86_400} days)"
            )

    def code(self, alert_id: str) -> str:
        return ack_code(self.secret, self.site, alert_id)

    def ack_url(self, alert_id: str, contact_name: str, now_s: float) -> str | None:
        """``{base_url}/a/{token}`` for ``contact_name``, valid ``ttl_s`` from ``now_s``;
        None without a base URL or for a name not among the contacts (or beyond 32)."""
        if not self.base_url or contact_name not in self.contacts:
            return None
        index = self.contacts.index(contact_name)
        if index >= MAX_CONTACTS:
            return None
        token = link_token(self.secret, self.site, alert_id, index, int(now_s) + self.ttl_s)
        return f"{self.base_url.rstrip('/')}/a/{token}"

    def alert_url(self, alert_id: str) -> str | None:
        """The alert's page in the console, or None without a base URL."""
        if not self.base_url:
            return None
        site, alert = (urllib.parse.quote(x, safe="") for x in (self.site, alert_id))
        return f"{self.base_url.rstrip('/')}/sites/{site}/alerts/{alert}"

    def site_url(self) -> str | None:
        """The site's page in the console (its alerts), or None without a base URL."""
        if not self.base_url:
            return None
        return f"{self.base_url.rstrip('/')}/sites/{urllib.parse.quote(self.site, safe='')}"

    def contact_of(self, token: LinkToken) -> str | None:
        """The contact a (verified) token was sent to, by its index."""
        i = token.contact_index
        return self.contacts[i] if i < len(self.contacts) else None
