"""The web console as one ASGI app: ``make_app(sites, db_path, desk=...)``.

Served by ``siltwatch serve --http`` and ``siltwatch demo --web`` (uvicorn in
a thread beside the MQTT loop); everything it shows is rendered on the server
from the store and the console's book (console/book.py), and every asset
(console/static/console.css, console/static/live.js) ships in the package: no
CDN, no framework. The one script, live.js, keeps a page's marked parts
current (the page asks again every ``refresh_s`` seconds and swaps what
changed); without it every page still works, it only stops updating itself.

Routes (each page module says what it does):

=================================================  ==================================
``GET /``                                           sites overview (console/pages_site.py)
``GET /alerts``                                     alerts of all your sites (console/pages_alerts.py)
``GET /sites/{site}``                               plots over a window, alerts, duties, health
``GET /sites/{site}/report``                        the inspector's report (``?format=pdf``)
``GET /sites/{site}/alerts/{alert_id}``             one episode (console/pages_alert.py)
``POST .../acknowledge``, ``.../comment``,          what people answer
``.../corrective-action``
``GET|POST /sites/{site}/silences``, ``.../{id}/end`` silences (console/pages_silences.py)
``GET /sites/{site}/duties``                        duties; inspection and site-log forms
``POST /sites/{site}/inspections``, ``.../site-log`` (console/pages_duties.py)
``GET|POST /sites/{site}/field``, ``.../records/{id}``  the field desk: checklists, photos,
``.../photos/{id}``, ``.../actions/{id}/close``      signatures, corrective actions (console/pages_field.py)
``GET|POST /a/{token}``                             acknowledge by link (console/ack_link.py)
``POST /sms/inbound``                               the SMS gateway's webhook (console/sms_inbound.py)
``GET|POST /login``, ``POST /logout``, ``GET /audit``, ``GET /healthz``  (console/pages_account.py)
=================================================  ==================================

Without a session, a page (GET) answers 303 to ``/login?next=...`` and is not
rendered; a form (POST) answers 403. Only ``/login``, ``/a/{token}``,
``/sms/inbound``, ``/healthz``, ``/static`` and the field desk's worker and manifest
(``/sw.js``, ``/manifest.webmanifest``: files, no data) are open. Every response carries
a strict Content-Security-Policy (scripts only from /static), ``Referrer-Policy: no-referrer``
(an acknowledgement link must not leak through a Referer header), and pages are
``Cache-Control: no-store``.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path

import jinja2
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware.body_limit import RequestBodyLimitMiddleware
from starlette.requests import Request
from starlette.responses import FileResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from console import (
    ack_link,
    pages_account,
    pages_alert,
    pages_alerts,
    pages_duties,
    pages_field,
    pages_silences,
    pages_site,
    sms_inbound,
)
from console.book import ConsoleBook
from console.desk import FieldDesk
from console.report.maker import InspectorReport, ReportRenderer
from console.web import (
    TEMPLATES_DIR,
    Console,
    LoginRequired,
    Refused,
    current_user,
    login_redirect_target,
    render,
)
from ingest.store.from_url import open_store
from siltwatch.config import SiteConfig

STATIC_DIR = Path(__file__).with_name("static")
MAX_BODY_BYTES = 1_000_000
# The field desk's checklists carry photos (each checked against console/photos.py's
# bound): a body may be larger there, so that an oversized photo is refused by name
# with a clear message rather than by a bare 413.
FIELD_MAX_BODY_BYTES = 64 * 1024 * 1024
SECURITY_HEADERS = [
    (
        b"content-security-policy",
        b"default-src 'none'; script-src 'self'; connect-src 'self'; "
        b"style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
        b"manifest-src 'self'; worker-src 'self'; "
        b"form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    ),
    (b"referrer-policy", b"no-referrer"),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
]


class BodyLimits:
    """Starlette's request-body bound, larger for the field desk's uploads (``/field``)."""

    def __init__(self, app: ASGIApp) -> None:
        self.small = RequestBodyLimitMiddleware(app, MAX_BODY_BYTES)
        self.large = RequestBodyLimitMiddleware(app, FIELD_MAX_BODY_BYTES)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = str(scope.get("path", ""))
        field = path.startswith("/sites/") and "/field" in path
        await (self.large if field else self.small)(scope, receive, send)


class SecurityHeaders:
    """Adds :data:`SECURITY_HEADERS` to every response, and ``no-store`` outside /static."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        static = str(scope.get("path", "")).startswith("/static/")

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                headers += SECURITY_HEADERS
                if not static:
                    headers.append((b"cache-control", b"no-store"))
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, with_headers)


def _static_file(name: str, media_type: str) -> Callable[[Request], Awaitable[Response]]:
    """A file of console/static served at the root (a service worker's scope is its folder)."""

    async def serve(_request: Request) -> Response:
        return FileResponse(STATIC_DIR / name, media_type=media_type)

    return serve


def _routes() -> list[Route | Mount]:
    site = "/sites/{site}"
    alert = site + "/alerts/{alert_id}"
    return [
        Route("/", pages_site.overview),
        Route("/alerts", pages_alerts.alert_list),
        Route(site, pages_site.site_page),
        Route(site + "/report", pages_site.report),
        Route(alert, pages_alert.alert_page),
        Route(alert + "/acknowledge", pages_alert.acknowledge, methods=["POST"]),
        Route(alert + "/comment", pages_alert.comment, methods=["POST"]),
        Route(alert + "/corrective-action", pages_alert.corrective_action, methods=["POST"]),
        Route(site + "/silences", pages_silences.silences_page),
        Route(site + "/silences", pages_silences.create_silence, methods=["POST"]),
        Route(site + "/silences/{silence_id}/end", pages_silences.end_silence, methods=["POST"]),
        Route(site + "/duties", pages_duties.duties_page),
        Route(site + "/inspections", pages_duties.record_inspection, methods=["POST"]),
        Route(site + "/site-log", pages_duties.record_site_log, methods=["POST"]),
        Route(site + "/field", pages_field.field_page),
        Route(site + "/field", pages_field.submit_checklist, methods=["POST"]),
        Route(site + "/field/records/{record_id}", pages_field.record_page),
        Route(site + "/field/records/{record_id}/edit", pages_field.edit_record, methods=["POST"]),
        Route(site + "/field/photos/{photo_id}", pages_field.photo),
        Route(
            site + "/field/actions/{action_id}/close", pages_field.close_action, methods=["POST"]
        ),
        Route("/a/{token}", ack_link.link_page),
        Route("/a/{token}", ack_link.link_confirm, methods=["POST"]),
        Route(sms_inbound.PATH, sms_inbound.sms_inbound, methods=["POST"]),
        Route("/login", pages_account.login_page),
        Route("/login", pages_account.login, methods=["POST"]),
        Route("/logout", pages_account.logout, methods=["POST"]),
        Route("/audit", pages_account.audit_page),
        Route("/healthz", pages_account.healthz),
        # The field desk installs as a web app; its worker's scope is the whole console.
        Route("/sw.js", _static_file("sw.js", "text/javascript")),
        Route(
            "/manifest.webmanifest",
            _static_file("manifest.webmanifest", "application/manifest+json"),
        ),
        Mount("/static", StaticFiles(directory=STATIC_DIR), name="static"),
    ]


async def _login_required(request: Request, _exc: Exception) -> Response:
    if request.method in ("GET", "HEAD"):
        return RedirectResponse(login_redirect_target(request), status_code=303)
    return render(
        request,
        "error.html",
        {"message": "Your session has ended. Log in again, then repeat what you did."},
        status=403,
    )


async def _refused(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, Refused)
    return render(
        request,
        "error.html",
        {"message": exc.message},
        user=current_user(request),
        status=exc.status,
    )


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    message = {404: "There is no such page.", 405: "That is not how this page is used."}.get(
        exc.status_code, str(exc.detail)
    )
    return render(
        request,
        "error.html",
        {"message": message},
        user=current_user(request),
        status=exc.status_code,
    )


def templates() -> Jinja2Templates:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES_DIR),
        autoescape=True,  # every value is escaped; plots are marked safe where drawn
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    return Jinja2Templates(env=env)


def make_app(
    sites: Mapping[str, SiteConfig],
    db: Path | str,
    *,
    desk: FieldDesk | None,
    clock: Callable[[], float] = time.time,
    public_url: str | None = None,
    twilio_token: str | None = None,
    report_renderer: ReportRenderer | None = None,
    outboxes: Mapping[str, Path] | None = None,
    refresh_s: float = 10.0,
) -> Starlette:
    """The console over the store ``db`` (a SQLite path or a PostgreSQL URL, whose
    database holds the console's own tables too) for ``sites`` (keyed by site id).

    ``desk`` takes inspections and site-log entries to the live pipeline (None:
    the forms say nothing can be recorded); ``clock`` is the wall clock in
    epoch seconds (sessions, rate limits, link expiry, notes); ``public_url`` is
    where people and the SMS gateway reach the console (``https://...`` makes
    the cookies Secure; the Twilio signature is checked against it);
    ``twilio_token`` the gateway's auth token (None: inbound SMS refused);
    ``report_renderer`` the inspector's report (default console/report/document.py);
    ``outboxes`` each site's delivery outbox, whose audit the alert page shows
    (console/deliveries.py); ``refresh_s`` how often live pages update themselves.
    ``clock`` is also "now" on the pages (how overdue, how long a station is
    silent, "last 24 h"): the demo passes its own.
    """
    wrong = [f"{key!r} holds site {s.site.id!r}" for key, s in sites.items() if key != s.site.id]
    if wrong:
        raise ValueError("make_app: sites are keyed by their [site] id; " + ", ".join(wrong))
    store = open_store(db)
    console = Console(
        sites=dict(sites),
        store=store,
        book=ConsoleBook(db),
        desk=desk,
        reports=report_renderer or InspectorReport(),
        templates=templates(),
        clock=clock,
        public_url=public_url,
        twilio_token=twilio_token,
        outboxes=dict(outboxes or {}),
        refresh_s=refresh_s,
    )
    app = Starlette(
        routes=_routes(),
        exception_handlers={
            LoginRequired: _login_required,
            Refused: _refused,
            HTTPException: _http_error,
        },
    )
    app.state.console = console
    app.add_middleware(BodyLimits)
    app.add_middleware(SecurityHeaders)
    return app
