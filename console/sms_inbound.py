"""``POST /sms/inbound``: the SMS gateway's webhook for replies such as ``ACK 7K2M4Q``.

Twilio signs each webhook request: ``X-Twilio-Signature`` is the base64
HMAC-SHA1, under the account's auth token, of the full URL it posted to
followed by the sorted POST parameters (Twilio's documented "Validating
requests"; checked with ``twilio.request_validator.RequestValidator``). The URL
checked is ``public_url + "/sms/inbound"``, so **the webhook configured at
Twilio must be exactly that URL** (same scheme, host, port and path; a proxy
in front must not rewrite it). A request without a valid signature is refused
with 403, logged at WARNING and audited; nothing in it is believed.

A valid request acknowledges when its body is ``ACK <code>`` (any case, spaces
tolerated) and the sender's number is a contact of the site whose alert has
that code; the acknowledgement is recorded as that contact, ``via="sms"``.
Anything else gets a polite TwiML reply and an audit line.
"""

from __future__ import annotations

import logging
import re
from xml.sax.saxutils import escape

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from twilio.request_validator import RequestValidator  # type: ignore[import-untyped]

from console import remote_ack
from console.web import Console, client_ip, console_of
from siltwatch.timefmt import local_time

log = logging.getLogger(__name__)

PATH = "/sms/inbound"
_ACK = re.compile(r"\s*ack\b[\s:#-]*(?P<code>[A-Za-z0-9][A-Za-z0-9 -]*?)\s*", re.IGNORECASE)
CODE_LENGTH = 6


def twiml(text: str) -> Response:
    body = f'<?xml version="1.0" encoding="UTF-8"?><Response><Message>{escape(text)}</Message></Response>'
    return Response(body, media_type="application/xml")


def parse_ack(body: str) -> str | None:
    """The code of an ``ACK <code>`` reply (spaces and dashes inside it dropped), else None."""
    match = _ACK.fullmatch(body)
    if match is None:
        return None
    code = re.sub(r"[\s-]", "", match["code"])
    return code.upper() if len(code) == CODE_LENGTH else None


def _refuse(console: Console, request: Request, why: str) -> Response:
    ip, now = client_ip(request), console.now_ms()
    if console.sessions.source_wait_s("(sms gateway)", ip, now) > 0:  # no row, no log line
        return PlainTextResponse("Too many refused requests: wait.", status_code=429)
    console.sessions.failed("(sms gateway)", ip, now)
    log.warning("inbound SMS refused (403): %s from %s", why, client_ip(request))
    console.book.audit(
        console.now_ms(), "(sms gateway)", "sms_refused", detail=f"{why} from {client_ip(request)}"
    )
    return PlainTextResponse(
        "Forbidden: the request is not signed by the SMS gateway.", status_code=403
    )


async def sms_inbound(request: Request) -> Response:
    console = console_of(request)
    form = await request.form()
    params = {k: v for k, v in form.multi_items() if isinstance(v, str)}
    if not console.twilio_token or not console.public_url:
        return _refuse(
            console, request, "inbound SMS is not configured (no public URL or Twilio token)"
        )
    signature = request.headers.get("X-Twilio-Signature", "")
    url = console.public_url.rstrip("/") + PATH
    validator = RequestValidator(console.twilio_token)
    if not signature or not bool(validator.validate(url, params, signature)):
        return _refuse(console, request, "missing or invalid X-Twilio-Signature")
    return _answer(console, params.get("From", ""), params.get("Body", ""))


def _answer(console: Console, sender: str, body: str) -> Response:
    now = console.now_ms()
    if console.sessions.source_wait_s("(sms code)", sender or "?", now) > 0:
        # A number that keeps sending codes that match nothing is guessing: slowed, no row.
        return twiml("siltwatch: too many codes that matched no alert. Wait a minute, then retry.")
    code = parse_ack(body)
    if code is None:
        console.book.audit(now, sender or "?", "sms_unrecognised", detail=body[:160])
        return twiml(
            "siltwatch: to acknowledge an alert, reply ACK and its 6-character code, e.g. ACK 7K2M4Q."
        )
    candidates = remote_ack.alerts_with_code(console, code)
    for found in candidates:
        contact = remote_ack.contact_by_phone(found.site, sender)
        if contact is None:
            continue
        ack, new = remote_ack.record_ack(console, found, contact, "sms")
        subject = f"{found.alert.kind.replace('_', ' ')} at {found.alert.subject}"
        if new:
            return twiml(f"siltwatch: acknowledged {subject}. Thank you, {contact.name}.")
        when = local_time(ack.at_ms, found.site.site.zone, short=True)
        return twiml(f"siltwatch: {subject} was already acknowledged by {ack.by} at {when}.")
    console.sessions.failed("(sms code)", sender or "?", now)
    if candidates:  # a real code from a number that is no contact of its site
        first = candidates[0]
        console.book.audit(
            now, sender or "?", "sms_refused", site=first.site.site.id, alert_id=first.alert.id,
            detail=f"code {code} from a number that is not a contact of the site",
        )  # fmt: skip
    else:
        console.book.audit(now, sender or "?", "sms_refused", detail=f"unknown code {code}")
    return twiml(
        f"siltwatch: no alert with code {code} for this phone number. Check the code in the message."
    )
