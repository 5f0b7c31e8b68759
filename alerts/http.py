"""One HTTP POST with the standard library, and what its outcome means for a retry.

Shared by the SMS gateway and webhook channels. The rule (RFC 9110 §15): 2xx
accepted; 429 (and 408) "slow down / try again", honouring ``Retry-After``; any
other 4xx is our mistake (bad number, bad credentials, bad URL) and retrying
the same request cannot fix it; 5xx and network errors are the server's
trouble and may pass. Redirects are not followed: urllib would turn a redirected
POST into a GET without the body, which silently loses the message.
"""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Mapping
from email.utils import parsedate_to_datetime

from alerts.channel import DeliveryFailed

RETRYABLE_4XX = frozenset({408, 429})


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
) -> int:
    """POST ``body``; returns the 2xx status or raises :class:`DeliveryFailed`."""
    req = urllib.request.Request(url, data=body, method="POST", headers=dict(headers))
    try:
        with _OPENER.open(req, timeout=timeout_s) as resp:
            status = int(resp.status)
            resp.read()
    except urllib.error.HTTPError as exc:
        code = int(exc.code)
        try:
            detail = exc.read(500).decode("utf-8", errors="replace").strip()
        except OSError:
            detail = ""
        reason = f"HTTP {code} {exc.reason}" + (f": {detail}" if detail else "")
        if code in RETRYABLE_4XX:
            wait = retry_after_s(exc.headers.get("Retry-After"), now)
            raise DeliveryFailed(reason, permanent=False, retry_after_s=wait) from None
        raise DeliveryFailed(reason, permanent=400 <= code < 500 or 300 <= code < 400) from None
    except (urllib.error.URLError, OSError) as exc:
        why = getattr(exc, "reason", exc)
        raise DeliveryFailed(f"cannot reach {url}: {why}", permanent=False) from None
    if not 200 <= status < 300:
        raise DeliveryFailed(f"HTTP {status}", permanent=300 <= status < 500)
    return status
