"""One HTTP POST with the standard library, and what its outcome means for a retry.

Shared by the SMS gateway and webhook channels. The rule (RFC 9110 §15): 2xx
accepted; 429 (and 408) "slow down / try again", honouring ``Retry-After``; any
other 4xx is our mistake (bad number, bad credentials, bad URL) and retrying
the same request cannot fix it; 5xx and network errors are the server's
trouble and may pass. Redirects are not followed: urllib would turn a redirected
POST into a GET without the body, which silently loses the message.

Plain ``http://`` is refused (:func:`insecure_url_problem`): the SMS gateway's
Authorization header and a chat service's webhook URL are credentials, and on
plain HTTP anyone on the path reads them. The one exception, for a stand-in or a
relay on the same machine, needs ``allow_insecure_http`` *and* a loopback host.
A webhook URL is also kept out of every log line and error text
(:func:`redact_url`), and the Authorization value out of error details.
"""

from __future__ import annotations

import hashlib
import ipaddress
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from email.utils import parsedate_to_datetime

from alerts.channel import DeliveryFailed

RETRYABLE_4XX = frozenset({408, 429})
LOOPBACK_HOSTS = "127.0.0.0/8, ::1, localhost"


def is_loopback_host(host: str | None) -> bool:
    """True for a host that never leaves this machine: 127.0.0.0/8, ::1 or ``localhost``.

    Only then may a password or token cross an unencrypted connection (a relay or a
    stand-in on the same host): nobody else is on the path.
    """
    if not host:
        return False
    name = host.strip().strip("[]").rstrip(".").lower()
    if name == "localhost":
        return True
    try:
        ip = ipaddress.ip_address(name)
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback


def redact_url(url: str) -> str:
    """``https://hooks.town.example/…(redacted, sha256:ab12cd34)``: what logs and the outbox keep.

    A chat service's webhook URL *is* its credential (whoever knows it can post to
    the channel), so only scheme, host and port are shown; the short digest of the
    whole URL still tells an administrator which configured URL a row was for.
    """
    digest = hashlib.sha256(url.encode("utf-8")).hexdigest()[:8]
    try:
        parts = urllib.parse.urlsplit(url)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        return f"(redacted URL, sha256:{digest})"
    if ":" in host:
        host = f"[{host}]"
    where = f"{parts.scheme}://{host}" + (f":{port}" if port is not None else "")
    return f"{where}/…(redacted, sha256:{digest})"


def insecure_url_problem(url: str, allow_insecure_http: bool) -> str | None:
    """Why ``url`` must not carry credentials, or None when it may (https, or loopback http)."""
    try:
        parts = urllib.parse.urlsplit(url)
        host = parts.hostname
    except ValueError:
        return "is not a valid URL"
    scheme = parts.scheme.lower()
    if scheme == "https" and host:
        return None
    if scheme != "http" or not host:
        return "expected an https:// URL"
    if not allow_insecure_http:
        return "http:// would carry credentials in clear text"
    if not is_loopback_host(host):
        return f"http:// is allowed only to a loopback host ({LOOPBACK_HOSTS}), not {host!r}"
    return None


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirect)


def retry_after_s(value: str | None, now: float | None = None) -> float | None:
    """``Retry-After`` as seconds: either delta-seconds or an HTTP date (needs ``now``)."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError):
        return None
    return max(0.0, when - now) if now is not None else None


def post(
    url: str,
    body: bytes,
    headers: Mapping[str, str],
    *,
    timeout_s: float = 30.0,
    now: float | None = None,
    allow_insecure_http: bool = False,
    shown_as: str | None = None,
) -> int:
    """POST ``body``; returns the 2xx status or raises :class:`DeliveryFailed`.

    ``shown_as`` is how the URL appears in error texts (they reach the log, the
    outbox and the audit log): pass :func:`redact_url` of a URL that is a secret.
    Plain http is refused before anything is sent unless ``allow_insecure_http`` and
    the host is loopback (the configuration checks this too; this is the last line).
    """
    where = url if shown_as is None else shown_as
    secrets = _secrets(url if shown_as is not None else None, headers)
    problem = insecure_url_problem(url, allow_insecure_http)
    if problem is not None:
        raise DeliveryFailed(f"refusing to POST to {where}: {problem}", permanent=True)
    try:
        req = urllib.request.Request(url, data=body, method="POST", headers=dict(headers))
        with _OPENER.open(req, timeout=timeout_s) as resp:
            status = int(resp.status)
            resp.read()
    except urllib.error.HTTPError as exc:
        code = int(exc.code)
        try:
            detail = exc.read(500).decode("utf-8", errors="replace").strip()
        except OSError:
            detail = ""
        detail = _scrub(detail, secrets)
        reason = f"HTTP {code} {exc.reason}" + (f": {detail}" if detail else "")
        if code in RETRYABLE_4XX:
            wait = retry_after_s(exc.headers.get("Retry-After"), now)
            raise DeliveryFailed(reason, permanent=False, retry_after_s=wait) from None
        raise DeliveryFailed(reason, permanent=400 <= code < 500 or 300 <= code < 400) from None
    except (urllib.error.URLError, OSError) as exc:
        why = _scrub(str(getattr(exc, "reason", exc)), secrets)
        raise DeliveryFailed(f"cannot reach {where}: {why}", permanent=False) from None
    except ValueError:  # a malformed URL: urllib's message would quote it whole
        raise DeliveryFailed(f"invalid URL {where}", permanent=True) from None
    if not 200 <= status < 300:
        raise DeliveryFailed(f"HTTP {status}", permanent=300 <= status < 500)
    return status


def _secrets(secret_url: str | None, headers: Mapping[str, str]) -> list[str]:
    """What must not reach an error text: the Authorization value, a secret URL."""
    found = []
    auth = headers.get("Authorization")
    if auth:
        found += [auth, auth.partition(" ")[2]]
    if secret_url is not None:  # whole, as the request target, and its parts
        parts = urllib.parse.urlsplit(secret_url)
        target = parts.path + (f"?{parts.query}" if parts.query else "")
        found += [secret_url, target, parts.path, parts.query]
    return sorted((s for s in found if len(s) >= 8), key=len, reverse=True)


def _scrub(text: str, secrets: list[str]) -> str:
    """Remove credentials a server might echo back in its answer."""
    for secret in secrets:
        text = text.replace(secret, "(redacted)")
    return text
