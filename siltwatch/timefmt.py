"""The one place siltwatch turns times and durations into text.

Two audiences, two formats:

- people read the site's **local time** (:func:`local_time`), e.g.
  ``2026-05-05 12:26 EDT``: an officer on site must never convert from UTC;
- machines, logs and records get **UTC ISO 8601 with ``Z``** (:func:`utc_iso`).

Durations for people come from :func:`duration` (``"8 h 32 min"``).
Event times are epoch milliseconds (``int``) in the analytics; aware datetimes
and ISO strings are accepted where the alerts carry them.
"""

from __future__ import annotations

from datetime import UTC, datetime, tzinfo

LOCAL_FORMAT = "%Y-%m-%d %H:%M %Z"
LOCAL_FORMAT_WEEKDAY = "%a %Y-%m-%d %H:%M %Z"
LOCAL_FORMAT_SHORT = "%m-%d %H:%M %Z"


def _as_datetime(value: int | datetime) -> datetime:
    if isinstance(value, datetime):
        return value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    return datetime.fromtimestamp(value / 1000, tz=UTC)


def local_time(
    value: int | datetime | str | None,
    zone: tzinfo,
    *,
    weekday: bool = False,
    short: bool = False,
) -> str:
    """A time as the site's people read it: ``2026-05-05 12:26 EDT``.

    ``value``: epoch milliseconds, a datetime (naive means UTC) or an ISO string
    (an unparsable string is shown as it is; None as ``—``). ``weekday`` prefixes
    the day (``Tue 2026-05-05 12:26 EDT``); ``short`` drops the year
    (``05-05 12:26 EDT``) for an SMS.
    """
    if value is None:
        return "—"
    if isinstance(value, str):
        try:
            parsed: int | datetime = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return value
    else:
        parsed = value
    here = _as_datetime(parsed).astimezone(zone)
    if short:
        return here.strftime(LOCAL_FORMAT_SHORT)
    return here.strftime(LOCAL_FORMAT_WEEKDAY if weekday else LOCAL_FORMAT)


def utc_iso(value: int | datetime, *, timespec: str | None = None) -> str:
    """ISO 8601 UTC with ``Z``: ``2026-05-05T16:26:00Z``.

    Epoch milliseconds show whole seconds unless milliseconds are present; a
    datetime shows what it holds (``timespec="auto"``). ``timespec`` overrides both.
    """
    if timespec is None:
        if isinstance(value, datetime):
            timespec = "auto"
        else:
            timespec = "milliseconds" if value % 1000 else "seconds"
    text = _as_datetime(value).astimezone(UTC).isoformat(timespec=timespec)
    return text.replace("+00:00", "Z")


def duration(seconds: float) -> str:
    """A span for people: ``45 min``, ``8 h 32 min``, ``3.5 days`` (to the minute)."""
    minutes = round(seconds / 60)
    if minutes < 60:
        return f"{minutes} min"
    hours, rest = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {rest:02d} min"
    return f"{hours / 24:.1f} days"
