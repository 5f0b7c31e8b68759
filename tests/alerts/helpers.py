"""Loopback stand-ins for the outside world of alert delivery, and a clock tests move.

- :class:`SmtpServer`: a real SMTP server (aiosmtpd) that records what arrives, or
  answers a chosen error code, so smtplib talks real SMTP over a real socket.
- :class:`HttpServer`: http.server in a thread that records each request and answers
  from a script of statuses; the SMS gateway stand-in checks the exact Twilio-shaped
  request itself and answers 400 with the reason when anything differs, as the real
  gateway would.
"""

from __future__ import annotations

import base64
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from email import message_from_bytes, policy
from email.message import EmailMessage
from http.server import BaseHTTPRequestHandler
from typing import Any

from aiosmtpd.controller import Controller

from alerts.messages import SiteLabel
from alerts.routing import NoticeEvent, Notification
from ingest.mqtt.embedded_broker import StartStop
from siltwatch.config import Contact
from siltwatch.schema import Alert, Duty
from tests.servers import ThreadedHttpServer

LOOPBACK = "127.0.0.1"
T0 = 1_778_000_000.0  # 2026-05-05T16:53:20Z: the tests' "now"
SITE = SiteLabel("lg-route9n", "Route 9N mixed-use")
OFFICER = Contact(
    name="Sam Okafor", role="officer", email="officer@example.org", phone="+15185550199"
)
OPERATOR = Contact(name="Dana Ruiz", role="operator", email="dana@example.org", phone=None)
CITATION = "site proxy for Lake George §148-9 B"


class FakeClock:
    """Epoch seconds that move only when the test says so."""

    def __init__(self, t: float = T0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t

    def advance(self, seconds: float) -> None:
        self.t += seconds


class RecordingSink:
    """A notification sink that keeps what it is sent, in order."""

    def __init__(self) -> None:
        self.sent: list[Notification] = []

    def send(self, note: Notification) -> None:
        self.sent.append(note)


def alert(
    *,
    id: str = "al-9ff14d7ed75e140c",
    severity: str = "critical",
    kind: str = "turbidity_contrast",
    subject: str = "outfall-a",
    rule: str = CITATION,
    message: str | None = None,
    resolved: bool = False,
) -> Alert:
    """A realistic turbidity alert (fields as the engine writes them)."""
    text = message or (
        "Turbidity contrast at outfall-a (West Brook, Route 9N mixed-use, Town of Lake George) "
        "since 2026-05-05 12:26 EDT: downstream 170.6 NTU against an upstream background of "
        "29.3 (limit 54.3), 116.3 NTU over the limit (site proxy for Lake George §148-9 B). "
        "Stop the discharge, inspect the silt fence and the basin outlet, and record the "
        "corrective action in the site log."
    )
    return Alert.model_validate(
        {
            "id": id,
            "kind": kind,
            "subject": subject,
            "severity": severity,
            "escalations": [{"at": "2026-05-05T16:56:00Z", "severity": severity}],
            "opened_at": "2026-05-05T16:26:00Z",
            "resolved_at": "2026-05-06T00:58:00Z" if resolved else None,
            "rule": rule,
            "message": text,
            "evidence": {
                "pair": "outfall-a",
                "upstream": "turb-up",
                "downstream": "turb-down",
                "unit": "NTU",
                "upstream_level": 29.31,
                "downstream_level": 170.58,
                "limit": 54.31,
                "excess": 116.27,
                "exceeding_since": "2026-05-05T16:26:00Z",
                "forecast": {"model": "none"},
            },
        }
    )


def duty(
    *,
    id: str = "du-1",
    kind: str = "inspection",
    reason: str = "storm",
    subject: str = "lg-route9n",
    created_at: datetime | str = "2026-05-05T15:00:00Z",
    due_at: datetime | str = "2026-05-07T15:00:00Z",
    rule: str = "Lake George §148-11 I(4)",
) -> Duty:
    """An open duty (fields as the engine writes them): a storm inspection by default."""
    return Duty.model_validate(
        {
            "id": id,
            "kind": kind,
            "reason": reason,
            "subject": subject,
            "created_at": created_at,
            "due_at": due_at,
            "completed_at": None,
            "rule": rule,
        }
    )


def note(
    event: str = "opened",
    at: str = "2026-05-05T16:56:00Z",
    recipients: tuple[Contact, ...] = (OFFICER, OPERATOR),
    **kwargs: Any,
) -> Notification:
    return Notification(NoticeEvent(event), at, alert(**kwargs), recipients)


# --- SMTP ----------------------------------------------------------------------------


@dataclass
class SmtpHandler:
    """aiosmtpd handler: records envelopes; ``rcpt_reply``/``data_reply`` force errors."""

    received: list[tuple[str, list[str], EmailMessage]] = field(default_factory=list)
    rcpt_reply: str | None = None
    data_reply: str | None = None

    async def handle_RCPT(
        self, server: Any, session: Any, envelope: Any, address: str, rcpt_options: Any
    ) -> str:
        if self.rcpt_reply:
            return self.rcpt_reply
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        if self.data_reply:
            return self.data_reply
        msg = message_from_bytes(envelope.content, policy=policy.default)
        assert isinstance(msg, EmailMessage)
        self.received.append((envelope.mail_from, list(envelope.rcpt_tos), msg))
        return "250 Message accepted for delivery"


class SmtpServer(StartStop):
    """A real SMTP server on loopback (aiosmtpd); ``port`` is fixed so it can come and go."""

    def __init__(self, port: int, handler: SmtpHandler | None = None, **smtp_kwargs: Any):
        self.port = port
        self.handler = handler or SmtpHandler()
        self._kwargs = smtp_kwargs
        self._controller: Controller | None = None

    def start(self) -> None:
        self._controller = Controller(
            self.handler, hostname=LOOPBACK, port=self.port, **self._kwargs
        )
        self._controller.start()

    def stop(self) -> None:
        if self._controller is not None:
            self._controller.stop()
            self._controller = None


# --- HTTP ----------------------------------------------------------------------------


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


Check = Callable[[Request], str | None]  # a reason to refuse the request, or None


class HttpServer(ThreadedHttpServer):
    """http.server on loopback in a thread; answers from ``statuses`` (then 201/200).

    ``check`` judges every request first: a non-None reason is answered 400 and kept in
    ``problems`` so a test can say exactly what was wrong with what we sent.
    """

    def __init__(self, *, check: Check | None = None, ok_status: int = 201) -> None:
        self.requests: list[Request] = []
        self.problems: list[str] = []
        self.statuses: list[tuple[int, dict[str, str]]] = []
        self.check = check
        self.ok_status = ok_status
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # quiet
                return

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                req = Request(
                    "POST",
                    self.path,
                    {k: v for k, v in self.headers.items()},
                    self.rfile.read(length),
                )
                outer.requests.append(req)
                problem = outer.check(req) if outer.check else None
                if problem:
                    outer.problems.append(problem)
                    self._answer(400, {}, problem)
                elif outer.statuses:
                    status, headers = outer.statuses.pop(0)
                    self._answer(status, headers, f"scripted {status}")
                else:
                    self._answer(outer.ok_status, {}, '{"sid": "SM0001", "status": "queued"}')

            def _answer(self, status: int, headers: dict[str, str], text: str) -> None:
                body = text.encode()
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        super().__init__(Handler)


def twilio_check(account_sid: str, auth_token: str, from_number: str) -> Check:
    """What Twilio's Messages endpoint would refuse, for the SMS gateway stand-in."""
    expected_auth = "Basic " + base64.b64encode(f"{account_sid}:{auth_token}".encode()).decode()

    def check(req: Request) -> str | None:
        path = f"/2010-04-01/Accounts/{account_sid}/Messages.json"
        if req.path != path:
            return f"path {req.path!r}, expected {path!r}"
        if req.headers.get("Authorization") != expected_auth:
            return f"Authorization {req.headers.get('Authorization')!r}"
        if not req.headers.get("Content-Type", "").startswith("application/x-www-form-urlencoded"):
            return f"Content-Type {req.headers.get('Content-Type')!r}"
        form = urllib.parse.parse_qs(req.body.decode("utf-8"), strict_parsing=True)
        if sorted(form) != ["Body", "From", "To"] or any(len(v) != 1 for v in form.values()):
            return f"form fields {sorted(form)}"
        if form["From"] != [from_number]:
            return f"From {form['From']}"
        body = form["Body"][0]
        if len(body.encode("utf-16-le")) // 2 > 320:
            return f"Body is {len(body)} chars"
        return None

    return check


def form(req: Request) -> dict[str, str]:
    return {k: v[0] for k, v in urllib.parse.parse_qs(req.body.decode("utf-8")).items()}


class SimulatedCrash(BaseException):
    """The process dies mid-send: not an Exception, so nothing in siltwatch catches it."""


class RecordingChannel:
    """A channel whose 'server' is a list: for tests of the outbox and worker logic only.

    The real transports are tested against real servers; here what matters is what the
    worker decides. ``fail``: raise this instead of sending; ``crash_after_send``: the
    message goes out, then the process dies before the worker can record it.
    """

    def __init__(self, name: str = "sms") -> None:
        self.name = name
        self.sent: list[tuple[float, str, str, str]] = []  # (time, address, delivery, body)
        self.fail: BaseException | None = None
        self.crash_after_send = False
        self.clock: Callable[[], float] = lambda: 0.0

    def addresses(self, note: Notification) -> list[tuple[str, str]]:
        return [(c.name, c.phone) for c in note.recipients if c.phone]

    def render(self, note: Notification, address: str, delivery: str) -> dict[str, str]:
        from alerts.messages import sms_text

        return {"body": sms_text(note, SITE)}

    def transmit(self, address: str, message: dict[str, str], delivery: str) -> None:
        if self.fail is not None:
            raise self.fail
        self.sent.append((self.clock(), address, delivery, message["body"]))
        if self.crash_after_send:
            raise SimulatedCrash()
