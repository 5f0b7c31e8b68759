"""Logging in and out, the audit log, and the health check.

Every login, refused login (wrong password, rate-limited, forged form) and
logout is a line of the audit log with the address it came from. A failed
login says only "wrong name or password": which of the two is not told.
"""

from __future__ import annotations

import secrets

from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response

from console.auth import (
    DEVICE_COOKIE,
    DEVICE_COOKIE_S,
    LOGIN_COOKIE,
    SESSION_COOKIE,
    Permission,
    device_cookie,
    device_of,
    login_form_token,
    same_token,
)
from console.web import (
    Refused,
    client_ip,
    console_of,
    current_user,
    field_text,
    page_user,
    posted_form,
    render,
)
from siltwatch.timefmt import local_time

LOGIN_COOKIE_S = 3600


def _safe_next(target: str) -> str:
    """Only a path of this console (no ``//host``, no scheme): no open redirect."""
    if target.startswith("/") and not target.startswith("//") and "\\" not in target:
        return target
    return "/"


async def login_page(request: Request) -> Response:
    target = _safe_next(request.query_params.get("next", "/"))
    if current_user(request) is not None:
        return RedirectResponse(target, status_code=303)
    return _login_form(request, target)


def _login_form(request: Request, target: str, message: str = "", status: int = 200) -> Response:
    console = console_of(request)
    cookie = request.cookies.get(LOGIN_COOKIE) or secrets.token_urlsafe(24)
    token = login_form_token(console.book.link_secret(), cookie)
    response = render(
        request,
        "login.html",
        {"login_token": token, "next": target, "message": message, "message_kind": "error"},
        status=status,
    )
    response.set_cookie(
        LOGIN_COOKIE,
        cookie,
        max_age=LOGIN_COOKIE_S,
        httponly=True,
        samesite="lax",
        secure=console.secure_cookies,
    )
    return response


async def login(request: Request) -> Response:
    console = console_of(request)
    now, ip = console.now_ms(), client_ip(request)
    form = await request.form()
    name, password = field_text(form, "name", 200), form.get("password")
    target = _safe_next(field_text(form, "next", 2000) or "/")
    cookie = request.cookies.get(LOGIN_COOKIE)
    given = form.get("csrf")
    expected = login_form_token(console.book.link_secret(), cookie) if cookie else ""
    if not cookie or not same_token(expected, given if isinstance(given, str) else None):
        if console.sessions.source_wait_s("(login form)", ip, now) > 0:
            raise Refused(429, "Too many refused forms from this address. Wait a minute.")
        console.sessions.failed("(login form)", ip, now)
        console.book.audit(now, name or "?", "csrf_refused", detail=f"POST /login from {ip}")
        raise Refused(
            403,
            "This login form has expired or was not sent from this console. Reload the page and try again.",
        )
    key = console.book.link_secret()
    device = device_of(key, name, request.cookies.get(DEVICE_COOKIE))
    wait = console.sessions.wait_s(name, ip, now, device)
    if wait > 0:
        if console.sessions.source_wait_s("(throttled)", ip, now) == 0:  # rows bounded too
            console.sessions.failed("(throttled)", ip, now)
            console.book.audit(now, name or "?", "login_rate_limited", detail=f"from {ip}")
        return _login_form(
            request,
            target,
            f"Too many failed logins for {name!r}. Wait {wait} second{'' if wait == 1 else 's'} "
            "and try again "
            "(each further failure doubles the wait, up to a minute).",
            429,
        )
    if not isinstance(password, str) or not console.book.accounts.verify(name, password):
        console.sessions.failed(name, ip, now, device)
        console.book.audit(now, name or "?", "login_failed", detail=f"from {ip}")
        return _login_form(request, target, "Wrong name or password.", 401)
    console.sessions.succeeded(name, ip, device)
    token = console.sessions.open(name, now)
    console.book.audit(now, name, "login", detail=f"from {ip}")
    response = RedirectResponse(target, status_code=303)
    response.set_cookie(
        SESSION_COOKIE, token, httponly=True, samesite="lax", secure=console.secure_cookies
    )
    if device is None:  # this browser has now proved it knows the password
        response.set_cookie(
            DEVICE_COOKIE,
            device_cookie(key, name),
            max_age=DEVICE_COOKIE_S,
            httponly=True,
            samesite="lax",
            secure=console.secure_cookies,
        )
    response.delete_cookie(LOGIN_COOKIE)
    return response


async def logout(request: Request) -> Response:
    user = page_user(request)
    await posted_form(request, user)
    console = console_of(request)
    token = request.cookies.get(SESSION_COOKIE)
    if token:
        console.sessions.close(token)
    console.book.audit(console.now_ms(), user.name, "logout", detail=f"from {client_ip(request)}")
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(
        SESSION_COOKIE, httponly=True, samesite="lax", secure=console.secure_cookies
    )
    return response


async def audit_page(request: Request) -> Response:
    user = page_user(request)
    console = console_of(request)
    sites = [s for s in user.sites_where(Permission.AUDIT) if s in console.sites]
    if not sites:
        raise Refused(403, "The audit log is for operators and officers of a site.")
    site_filter = request.query_params.get("site")
    if site_filter in sites:
        sites = [site_filter]
    entries = console.book.audit_log(sites, also_by=user.name)
    # A line's time in its site's zone; a site-less line (a login) in the first site's.
    home = console.sites[sites[0]].site.zone
    rows = []
    for e in entries:
        site = console.sites.get(e.site)
        rows.append({"entry": e, "at": local_time(e.at_ms, site.site.zone if site else home)})
    return render(request, "audit.html", {"rows": rows, "sites": sites}, user=user)


async def healthz(request: Request) -> Response:
    console = console_of(request)
    console.book.ping()
    return JSONResponse({"status": "ok"})
