"""What every page shares: the console's state, templates, who is asking, CSRF on POST.

The pages (console/pages_*.py) are plain functions of a request; this module
answers the questions each of them would otherwise ask again: which console
(:class:`Console`, in ``app.state.console``), which person
(:func:`page_user`: no session on a page means a 303 to ``/login``, the page
itself is never rendered), which site and whether the person may act on it
(:func:`site_for`), and whether a posted form is the person's own
(:func:`posted_form`: a missing or forged CSRF token is refused with 403 and
audited).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import Response
from starlette.templating import Jinja2Templates

from console.auth import SESSION_COOKIE, Permission, Sessions, SessionUser, same_token
from console.book import ConsoleBook
from console.desk import FieldDesk
from console.report.maker import ReportRenderer
from ingest.store.queries import SqlStore
from siltwatch.config import SiteConfig
from siltwatch.timefmt import local_time

TEMPLATES_DIR = Path(__file__).with_name("templates")
ROLE_LABELS = {
    "operator": "operator",
    "qualified_inspector": "qualified inspector",
    "officer": "officer",
    "viewer": "viewer",
}


class LoginRequired(Exception):
    """No (valid) session: pages send the person to /login, forms are refused."""


class Refused(Exception):
    """The request is understood and not allowed; ``message`` is shown to the person."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass
class Console:
    """Everything a page needs, built once by console/app.py ``make_app``."""

    sites: Mapping[str, SiteConfig]
    store: SqlStore
    book: ConsoleBook
    desk: FieldDesk | None
    reports: ReportRenderer
    templates: Jinja2Templates
    clock: Callable[[], float] = time.time
    public_url: str | None = None
    twilio_token: str | None = None
    outboxes: Mapping[str, Path] = field(default_factory=dict)  # site -> its delivery outbox
    refresh_s: float = 10.0  # how often a live page asks for its news (console/static/live.js)
    sessions: Sessions = field(init=False)

    def __post_init__(self) -> None:
        self.sessions = Sessions(self.book)

    @property
    def secure_cookies(self) -> bool:
        return bool(self.public_url and self.public_url.lower().startswith("https://"))

    def now_ms(self) -> int:
        return int(self.clock() * 1000)

    def close(self) -> None:
        self.book.close()
        self.store.close()


def console_of(request: Request) -> Console:
    console: Console = request.app.state.console
    return console


def client_ip(request: Request) -> str:
    return request.client.host if request.client is not None else "unknown"


def current_user(request: Request) -> SessionUser | None:
    console = console_of(request)
    return console.sessions.user(request.cookies.get(SESSION_COOKIE), console.now_ms())


def page_user(request: Request) -> SessionUser:
    """The logged-in person, or :class:`LoginRequired` (→ 303 /login; nothing is served)."""
    user = current_user(request)
    if user is None:
        raise LoginRequired
    return user


def site_for(request: Request, user: SessionUser, permission: Permission) -> SiteConfig:
    """The site named in the path, if the person holds a role there allowing ``permission``."""
    site_id = str(request.path_params["site"])
    site = console_of(request).sites.get(site_id)
    if site is None or site_id not in user.roles:
        # The same answer for a site that does not exist and one not yours.
        raise Refused(404, f"No site {site_id!r} among your sites.")
    if not user.may(site_id, permission):
        role = ROLE_LABELS.get(user.roles[site_id], user.roles[site_id])
        raise Refused(403, f"As {role} on {site_id} you may not {_doing(permission)}.")
    return site


def page_site(request: Request, permission: Permission) -> tuple[SessionUser, SiteConfig]:
    """The person asking (:func:`page_user`) and the site in the path, if they may
    ``permission`` there (:func:`site_for`): the first two questions of a site's page."""
    user = page_user(request)
    return user, site_for(request, user, permission)


@dataclass(frozen=True)
class Banner:
    """What a page says above its content about what just happened (base.html's message
    line): ``info`` for what was done, ``error`` for what was refused; empty says nothing."""

    text: str = ""
    kind: str = "info"

    @classmethod
    def error(cls, text: str) -> Banner:
        return cls(text, "error")

    @classmethod
    def done(cls, request: Request, done: Mapping[str, str]) -> Banner:
        """What a posted form did, said on the page it redirected to (post/redirect/get):
        ``?done=KEY`` looked up in the page's ``done`` table; nothing for none or an unknown
        key."""
        return cls(done.get(request.query_params.get("done", ""), ""))


NO_BANNER = Banner()


def _doing(permission: Permission) -> str:
    return {
        Permission.READ: "read this site",
        Permission.ACKNOWLEDGE: "acknowledge, comment on or record actions for alerts",
        Permission.RECORD: "record inspections or site-log entries",
        Permission.AUDIT: "read the audit log",
    }[permission]


async def posted_form(request: Request, user: SessionUser, *, site: str = "") -> FormData:
    """The form, if its CSRF token is the session's; else 403, audited as ``csrf_refused``."""
    form = await request.form()
    given = form.get("csrf")
    if not same_token(user.csrf, given if isinstance(given, str) else None):
        console = console_of(request)
        console.book.audit(
            console.now_ms(),
            user.name,
            "csrf_refused",
            site=site,
            detail=f"POST {request.url.path} from {client_ip(request)}",
        )
        raise Refused(
            403, "This form was not sent from your console page. Reload the page and try again."
        )
    return form


async def site_form(
    request: Request, permission: Permission
) -> tuple[SessionUser, SiteConfig, FormData]:
    """A form posted on a site's page: the person, the site they may ``permission`` on
    (:func:`page_site`), and the form, its CSRF token checked there (:func:`posted_form`)."""
    user, site = page_site(request, permission)
    return user, site, await posted_form(request, user, site=site.site.id)


def field_text(form: FormData, name: str, limit: int = 4000) -> str:
    value = form.get(name)
    return value.strip()[:limit] if isinstance(value, str) else ""


def render(
    request: Request,
    name: str,
    context: dict[str, Any],
    *,
    user: SessionUser | None = None,
    status: int = 200,
    banner: Banner = NO_BANNER,
) -> Response:
    """The page ``name`` over ``context``, with what every page shows: the person, the CSRF
    token, the sites' names, and the ``banner`` if it says something."""
    console = console_of(request)
    base: dict[str, Any] = {
        "message": banner.text,
        "message_kind": banner.kind,
        "user": user,
        "csrf": user.csrf if user is not None else "",
        "role_labels": ROLE_LABELS,
        "site_names": {sid: s.site.name or sid for sid, s in console.sites.items()},
        "may_audit": bool(user and user.sites_where(Permission.AUDIT)),
        "refresh_s": console.refresh_s,
    }
    return console.templates.TemplateResponse(
        request, name, {**base, **context}, status_code=status
    )


def login_redirect_target(request: Request) -> str:
    path = request.url.path
    if request.url.query:
        path += "?" + request.url.query
    return "/login?next=" + quote(path, safe="")


def when(value: int | str | None, site: SiteConfig) -> str:
    """A time as the site's people read it (siltwatch/timefmt.py)."""
    return local_time(value, site.site.zone)
