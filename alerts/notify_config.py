"""NOTIFY.toml: which channels deliver alerts, and where the outbox lives.

Example::

    outbox = "alerts-outbox.sqlite3"        # relative paths: from this file's folder

    [smtp]
    host = "smtp.town.example"
    port = 587
    security = "starttls"                   # none | starttls | tls (SMTPS)
    username = "siltwatch"
    password_file = "/etc/siltwatch/smtp-password"
    from = "siltwatch@town.example"

    [sms]
    base_url = "https://api.twilio.com"
    account_sid = "AC0123..."
    auth_token_file = "/etc/siltwatch/twilio-token"
    from_number = "+15185550100"
    max_per_hour = 3

    [webhook]
    url = "https://hooks.town.example/siltwatch"
    secret_file = "/etc/siltwatch/webhook-secret"

    [retry]
    delays_s = [60, 180, 540, 1620, 4860, 14580, 43740]

Secrets are read from files (mode 0600, outside the repository), never written
inline: a ``password``, ``auth_token`` or ``secret`` key is refused with a hint.
Every mistake is reported at once, each naming the file and key
(siltwatch.configerrors).

Credentials never cross the network in clear text (docs/security.md):

- ``smtp.security = "none"`` with a ``username`` is refused: AUTH would send the
  password readable by anyone on the path. Only a relay on loopback may take it,
  with ``allow_plaintext_auth = true`` and ``host`` in 127.0.0.0/8, ::1 or localhost.
- ``sms.base_url`` and ``webhook.url`` must be ``https://``; ``http://`` only with
  ``allow_insecure_http = true`` and a loopback host (a test stand-in, a local relay).

The webhook URL is a credential for chat services: it is never echoed in an error
line, and the outbox and logs hold only its redacted form (alerts/webhook.py).
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator

from alerts.acklinks import Links
from alerts.acks import AckLookup, NoAcks
from alerts.channel import Channel
from alerts.digest import Digests, DigestSource
from alerts.followups import FollowUps
from alerts.http import LOOPBACK_HOSTS, insecure_url_problem, is_loopback_host
from alerts.mail import ChartFor, EmailSink, SmtpSettings
from alerts.messages import SiteLabel
from alerts.outbox import DeliveryState, Outbox
from alerts.silences import HeldInSilence, SilenceLookup
from alerts.sinks import Sink
from alerts.sms import SmsSettings, SmsSink
from alerts.webhook import WebhookSettings, WebhookSink
from alerts.worker import (
    Clock,
    DeliveryThread,
    DeliveryWorker,
    OutboxSink,
    RateLimit,
    RetryPolicy,
    Scheduled,
)
from siltwatch.config import SiteConfig
from siltwatch.configerrors import ConfigError, load_toml_model


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


def _no_inline_secret(value: object) -> None:
    if value is not None:
        raise ValueError("secrets are not written inline: put it in a file and set the *_file key")
    return None


# A key a secret must not be written under (``password``, ``auth_token``, ``secret``):
# any value there is refused with the hint to use the ``*_file`` key.
_InlineSecret = Annotated[None, BeforeValidator(_no_inline_secret)]


class SmtpConfig(_Model):
    host: str = Field(min_length=1)
    port: int = Field(default=587, ge=1, le=65535)
    security: Literal["none", "starttls", "tls"] = "starttls"
    username: str | None = None
    password_file: Path | None = None
    password: _InlineSecret = None
    from_addr: str = Field(alias="from", pattern=r"^[^@\s]+@[^@\s]+$")
    ca_file: Path | None = None
    timeout_s: float = Field(default=30.0, gt=0)
    allow_plaintext_auth: bool = False


class SmsConfig(_Model):
    base_url: str = Field(default="https://api.twilio.com", pattern=r"^https?://")
    account_sid: str = Field(min_length=1)
    auth_token_file: Path
    auth_token: _InlineSecret = None
    from_number: str = Field(pattern=r"^\+[1-9][0-9]{6,14}$")
    max_per_hour: int = Field(default=3, ge=1, le=60)
    timeout_s: float = Field(default=30.0, gt=0)
    allow_insecure_http: bool = False


class WebhookConfig(_Model):
    url: str = Field(repr=False)  # a credential for chat services: not in any repr
    secret_file: Path | None = None
    secret: _InlineSecret = None
    timeout_s: float = Field(default=30.0, gt=0)
    allow_insecure_http: bool = False

    @field_validator("url")
    @classmethod
    def _url_shape(cls, value: str) -> str:
        # A ValueError, not a pattern: pydantic's pattern message would quote the URL,
        # and for a chat service the URL is the credential.
        if not re.match(r"^https?://[^/?#\s]+", value):
            raise ValueError("expected an https:// URL (not shown here: it is a secret)")
        return value


class RetryConfig(_Model):
    delays_s: list[float] = Field(default_factory=lambda: list(RetryPolicy().delays_s))

    @field_validator("delays_s")
    @classmethod
    def _positive(cls, value: list[float]) -> list[float]:
        if not value or any(d <= 0 for d in value) or len(value) > 30:
            raise ValueError("expected 1 to 30 positive delays in seconds")
        return value


class NotifyConfig(_Model):
    outbox: Path = Path("alerts-outbox.sqlite3")
    smtp: SmtpConfig | None = None
    sms: SmsConfig | None = None
    webhook: WebhookConfig | None = None
    retry: RetryConfig = Field(default_factory=RetryConfig)


@dataclass(frozen=True)
class Notify:
    """A loaded NOTIFY.toml with paths resolved and secrets read."""

    config: NotifyConfig
    outbox_path: Path
    smtp: SmtpSettings | None
    sms: SmsSettings | None
    webhook: WebhookSettings | None

    def for_site(self, site_id: str) -> Notify:
        """The same channels with ``site_id``'s own outbox (:func:`site_outbox_path`): what
        each site of a fleet delivers through."""
        return replace(self, outbox_path=site_outbox_path(self.outbox_path, site_id))


def site_outbox_path(outbox: Path, site_id: str) -> Path:
    """A fleet site's outbox file, next to the configured one: ``<stem>-<site id><suffix>``.

    Why one file per site: an outbox's rows are not keyed by site (``Outbox.due``
    and the follow-ups read every row), and one worker per outbox file is
    assumed, so each site's delivery worker must own a file no other site writes.
    """
    return outbox.with_name(f"{outbox.stem}-{site_id}{outbox.suffix}")


def _read_secret(source: Path, key: str, path: Path, problems: list[str]) -> str:
    try:
        value = path.read_text(encoding="utf-8").strip()
    except OSError as exc:
        problems.append(f"{source}: {key}: cannot read {path} ({exc.strerror or exc})")
        return ""
    if not value:
        problems.append(f"{source}: {key}: {path} is empty")
    return value


def transport_problems(source: Path, cfg: NotifyConfig) -> list[str]:
    """Every way this configuration would put a credential on the wire in clear text."""
    problems: list[str] = []
    smtp = cfg.smtp
    if smtp is not None and smtp.security == "none" and smtp.username:
        if not smtp.allow_plaintext_auth:
            problems.append(
                f'{source}: smtp.security: "none" would send the SMTP password in clear text; '
                'use "starttls" or "tls", or set allow_plaintext_auth = true for a relay '
                "on loopback"
            )
        elif not is_loopback_host(smtp.host):
            problems.append(
                f"{source}: smtp.allow_plaintext_auth: only for a relay on loopback "
                f"({LOOPBACK_HOSTS}), not smtp.host {smtp.host!r}; "
                'use security = "starttls" or "tls"'
            )
    if cfg.sms is not None:
        problems += _http_problems(
            source, "sms", "base_url", cfg.sms.base_url, cfg.sms.allow_insecure_http,
            "the SMS gateway's auth token", "a gateway stand-in",
        )  # fmt: skip
    if cfg.webhook is not None:
        problems += _http_problems(
            source, "webhook", "url", cfg.webhook.url, cfg.webhook.allow_insecure_http,
            "the webhook URL (a credential for chat services) and the alert",
            "a receiver",
        )  # fmt: skip
    return problems


def _http_problems(
    source: Path, table: str, key: str, url: str, allowed: bool, what: str, who: str
) -> list[str]:
    problem = insecure_url_problem(url, allowed)
    if problem is None:
        return []
    if not url.lower().startswith("http://"):  # e.g. "https://" without a host
        return [f"{source}: {table}.{key}: {problem}"]
    if not allowed:
        return [
            f'{source}: {table}.{key}: "http://" would send {what} in clear text; '
            f'use "https://", or set allow_insecure_http = true for {who} on loopback'
        ]
    host = urllib.parse.urlsplit(url).hostname
    return [
        f"{source}: {table}.allow_insecure_http: only for {who} on loopback "
        f"({LOOPBACK_HOSTS}), not host {host!r} of {table}.{key}; use https://"
    ]


def load_notify(path: Path | str) -> Notify:
    """Load NOTIFY.toml; ConfigError has one line per mistake, each naming file and key."""
    path = Path(path)
    cfg = load_toml_model(path, NotifyConfig)
    base = path.resolve().parent

    def here(p: Path) -> Path:
        return p if p.is_absolute() else base / p

    problems: list[str] = []
    smtp = sms = webhook = None
    problems += transport_problems(path, cfg)
    if cfg.smtp is not None:
        c = cfg.smtp
        password = None
        if c.password_file is not None:
            password = _read_secret(path, "smtp.password_file", here(c.password_file), problems)
        if c.username and c.password_file is None:
            problems.append(f"{path}: smtp.password_file: is required when smtp.username is set")
        if c.ca_file is not None and not here(c.ca_file).is_file():
            problems.append(f"{path}: smtp.ca_file: {here(c.ca_file)} is not a file")
        smtp = SmtpSettings(
            host=c.host,
            port=c.port,
            from_addr=c.from_addr,
            security=c.security,
            username=c.username,
            password=password,
            ca_file=here(c.ca_file) if c.ca_file else None,
            timeout_s=c.timeout_s,
            allow_plaintext_auth=c.allow_plaintext_auth,
        )
    if cfg.sms is not None:
        s = cfg.sms
        token = _read_secret(path, "sms.auth_token_file", here(s.auth_token_file), problems)
        sms = SmsSettings(
            s.base_url, s.account_sid, token, s.from_number, s.timeout_s, s.allow_insecure_http
        )
    if cfg.webhook is not None:
        w = cfg.webhook
        secret = None
        if w.secret_file is not None:
            secret = _read_secret(path, "webhook.secret_file", here(w.secret_file), problems)
        webhook = WebhookSettings(
            w.url, secret.encode() if secret else None, w.timeout_s, w.allow_insecure_http
        )
    if problems:
        raise ConfigError(problems)
    return Notify(cfg, here(cfg.outbox), smtp, sms, webhook)


class _Wake:
    """Wakes the delivery thread once it exists (the sinks are built before it)."""

    def __init__(self) -> None:
        self.target: Callable[[], None] | None = None

    def __call__(self) -> None:
        if self.target is not None:
            self.target()


class Delivery:
    """Everything ``siltwatch serve --notify`` runs: the sink, the worker, its thread.

    ``sink`` is what the dispatcher calls: the follow-ups (escalation chain,
    repeats of critical alerts) in front of the outbox. ``acks`` says who
    answered (the console's book); ``digests`` reads the store for the daily
    digest email (None: no digest); ``links`` puts the ACK code and the
    console's links in SMS and email; ``chart_for`` draws the email's plot;
    ``once`` keeps a daily digest to one sending between workers (the book's
    ``first_time``; alerts/digest.py); ``silences`` holds what a silence or
    maintenance window covers from people (alerts/silences.py).
    """

    def __init__(
        self,
        notify: Notify,
        site: SiteConfig,
        clock: Clock,
        *,
        acks: AckLookup | None = None,
        digests: DigestSource | None = None,
        links: Links | None = None,
        chart_for: ChartFor | None = None,
        once: Callable[[str], bool] | None = None,
        silences: SilenceLookup | None = None,
    ) -> None:
        label = SiteLabel.of(site)
        channels: list[Channel] = []
        if notify.smtp is not None:
            channels.append(EmailSink(notify.smtp, label, clock, links=links, chart_for=chart_for))
        if notify.sms is not None:
            channels.append(SmsSink(notify.sms, label, clock, links=links))
        if notify.webhook is not None:
            channels.append(WebhookSink(notify.webhook, label, clock))
        self.channels = channels
        self.outbox = Outbox(notify.outbox_path)
        limit = None
        if notify.config.sms is not None:
            limit = RateLimit(notify.config.sms.max_per_hour, 3600.0)
        self.thread_wake = _Wake()
        outbox_sink = OutboxSink(self.outbox, channels, clock, self.thread_wake, site=site)
        self.followups = FollowUps(self.outbox, site, outbox_sink, acks or NoAcks(), clock)
        scheduled: list[Scheduled] = [self.followups]
        if digests is not None and notify.smtp is not None:
            scheduled.append(Digests(self.outbox, site, digests, clock, once=once))
        self.worker = DeliveryWorker(
            self.outbox,
            channels,
            clock=clock,
            site=label,
            retry=RetryPolicy(tuple(notify.config.retry.delays_s)),
            sms_limit=limit,
            scheduled=scheduled,
        )
        self.thread = DeliveryThread(self.worker)
        self.thread_wake.target = self.thread.wake
        self.sink: Sink = self.followups
        if silences is not None:
            self.sink = HeldInSilence(self.followups, site.site.id, silences)

    def describe(self) -> str:
        names = ", ".join(c.name for c in self.channels) or "no channels"
        return f"{names} via outbox {self.outbox.path}"

    def start(self) -> None:
        self.thread.start()

    @property
    def alive(self) -> bool:
        """True while the delivery thread runs (``serve``'s /healthz)."""
        return self.thread.alive

    def pending_count(self) -> int:
        """Notifications waiting in the outbox (``serve``'s /metrics: the outbox depth)."""
        return self.outbox.counts().get(DeliveryState.PENDING, 0)

    def failures_by_channel(self) -> dict[str, int]:
        """Failed delivery attempts in this process, by channel (``serve``'s /metrics)."""
        return dict(self.worker.stats.failures_by_channel)

    def stop(self) -> None:
        self.thread.stop()
        self.outbox.close()
