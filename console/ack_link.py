"""``/a/{token}``: acknowledge from the link in an SMS or email, without logging in.

The token (alerts/acklinks.py) is signed, names the alert's code and the
contact it was sent to (their place in the site's ``contacts``), and expires.
A GET only shows what would be acknowledged and one button: mail scanners and
link previews follow links, and must not acknowledge for the person. The
button POSTs back to the same URL; that POST checks the token again, spends it
(``console_used_links``: single use, the second press gets 410) and records
the acknowledgement as that contact, ``via="link"``. The token is the only
credential: it needs no session and no CSRF token (a forger would need the
token itself).
"""

from __future__ import annotations

from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import Response

from alerts.acklinks import AckLinkError, link_problem, parse_link_token
from console import views
from console.remote_ack import Found, alerts_with_code, record_ack
from console.web import Refused, client_ip, console_of, render
from siltwatch.config import Contact
from siltwatch.timefmt import local_time

NOT_VALID = (
    "This acknowledgement link is not valid. Open it again from the message you received, "
    "or log in to the console to acknowledge the alert."
)


def canonical(token: str) -> str:
    """The token as alerts/acklinks.py reads it (case and spaces do not matter), so the
    same link typed in lower case is still the same, spent link."""
    return token.strip().upper()


@dataclass(frozen=True)
class LinkCheck:
    found: Found
    contact: Contact


def _refuse(request: Request, status: int, why: str, shown: str) -> Refused:
    console = console_of(request)
    now, ip = console.now_ms(), client_ip(request)
    console.sessions.failed("(link)", ip, now)  # guessing is slowed (console/auth.py)
    console.book.audit(now, "(link)", "link_refused", detail=f"{why} from {ip}")
    return Refused(status, shown)


def _throttled(request: Request) -> None:
    """Refused with 429, and no audit row, while this source must wait after refusals."""
    console = console_of(request)
    wait = console.sessions.source_wait_s("(link)", client_ip(request), console.now_ms())
    if wait > 0:
        raise Refused(429, f"Too many links refused from this address. Wait {wait} seconds.")


def checked_link(request: Request, token: str) -> LinkCheck:
    """The alert and contact a valid, unexpired, unused link names (else Refused, audited)."""
    console = console_of(request)
    _throttled(request)
    try:
        parsed = parse_link_token(token)
    except AckLinkError as exc:
        raise _refuse(request, 403, f"malformed token ({exc})", NOT_VALID) from None
    secret = console.book.link_secret()
    problems = []
    for found in alerts_with_code(console, parsed.code):
        site = found.site
        problem = link_problem(secret, parsed, site.site.id, found.alert.id, console.clock())
        if problem is not None:
            problems.append(problem)
            continue
        if not 0 <= parsed.contact_index < len(site.contacts):
            raise _refuse(
                request, 403, f"no contact #{parsed.contact_index} at {site.site.id}", NOT_VALID
            )
        used_at = console.book.link_used_at(canonical(token))
        if used_at is not None:
            raise _refuse(
                request, 410, "link already used",
                "This link was already used: each link acknowledges once. It was used at "
                f"{local_time(used_at, site.site.zone)}.",
            )  # fmt: skip
        return LinkCheck(found, site.contacts[parsed.contact_index])
    if problems:
        raise _refuse(request, 403, "; ".join(problems), f"This link cannot be used: {problems[0]}")
    raise _refuse(request, 403, f"no alert with code {parsed.code!r}", NOT_VALID)


def _context(check: LinkCheck, request: Request) -> dict[str, object]:
    console = console_of(request)
    site, alert = check.found.site, check.found.alert
    return {
        "site": site,
        "row": views.alert_row(alert, site, console.book, now_ms=console.now_ms()),
        "contact": check.contact,
        "token": request.path_params["token"],
        "message_text": alert.message,
    }


async def link_page(request: Request) -> Response:
    """GET: what the link would acknowledge, and the button. Changes nothing."""
    check = checked_link(request, str(request.path_params["token"]))
    return render(request, "ack_link.html", _context(check, request))


async def link_confirm(request: Request) -> Response:
    """POST: spend the link and acknowledge as its contact."""
    token = str(request.path_params["token"])
    check = checked_link(request, token)
    console = console_of(request)
    sid, alert = check.found.site.site.id, check.found.alert
    if not console.book.spend_link(canonical(token), console.now_ms()):
        raise _refuse(
            request,
            410,
            "link already used (race)",
            "This link was already used; each link acknowledges once.",
        )
    console.book.audit(
        console.now_ms(), check.contact.name, "link_used", site=sid, alert_id=alert.id,
        detail=f"as {check.contact.role} from {client_ip(request)}",
    )  # fmt: skip
    ack, new = record_ack(console, check.found, check.contact, "link")
    context = {
        **_context(check, request),
        "done": True,
        "new": new,
        "ack_text": views.ack_words(ack, check.found.site),
    }
    return render(request, "ack_link.html", context)
