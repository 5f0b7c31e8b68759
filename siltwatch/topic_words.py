"""The words the topic layout uses for itself may not be ids.

Why: an id is a topic level (docs/wire-format.md). A station named ``ingest``
is granted ``siltwatch/v1/{site}/ingest/#`` by the broker ACL, which covers the
ingest service's lease ``siltwatch/v1/{site}/ingest/owner``: that station could
publish a forged retained lease and keep the real service from starting. A
station named ``inspections`` or ``log`` could publish the site's field records;
a sensor named ``status`` or ``cmd`` shadows its station's status or command
topic. So every word a topic of siltwatch.schema spells out is refused as a
site, station or sensor id, with the file, the key and why; and the ACL
generator refuses a grant that would cover another account's topic, in case an
id got past the site file check.

Wildcards (``+``, ``#``) and ``/`` can never be in an id: ``Identifier``'s
pattern excludes them.
"""

from __future__ import annotations

from typing import Any

# Every fixed level of siltwatch.schema's topics (and the command topic of the
# station's re-publish requests): site-wide records, the services' lease, a
# station's status and commands, a sensor's reading.
RESERVED_IDS: frozenset[str] = frozenset(
    {"ingest", "owner", "inspections", "log", "alerts", "status", "reading", "cmd"}
)


def reserved_reason(kind: str, ident: str) -> str | None:
    """Why ``ident`` cannot be a ``kind`` id, or None when it can."""
    if ident not in RESERVED_IDS:
        return None
    return (
        f"{kind} id {ident!r} is a word of the topic layout (reserved: "
        f"{', '.join(sorted(RESERVED_IDS))}); as a topic level it would let the "
        f"{kind} write or shadow another topic (siltwatch/v1/<site>/{ident}/...): "
        "choose another id"
    )


def reserved_id_problems(data: dict[str, Any]) -> list[tuple[str, str]]:
    """(key path, why) for every site, station or sensor id that is a reserved word."""
    out: list[tuple[str, str]] = []
    site = data.get("site")
    if isinstance(site, dict) and isinstance(site.get("id"), str):
        reason = reserved_reason("site", site["id"])
        if reason:
            out.append(("site.id", reason))
    stations = data.get("stations")
    for si, station in enumerate(stations if isinstance(stations, list) else []):
        if not isinstance(station, dict):
            continue
        if isinstance(station.get("id"), str):
            reason = reserved_reason("station", station["id"])
            if reason:
                out.append((f"stations[{si}].id", reason))
        sensors = station.get("sensors")
        for ni, sensor in enumerate(sensors if isinstance(sensors, list) else []):
            if isinstance(sensor, dict) and isinstance(sensor.get("id"), str):
                reason = reserved_reason("sensor", sensor["id"])
                if reason:
                    out.append((f"stations[{si}].sensors[{ni}].id", reason))
    return out


def filter_covers(topic_filter: str, topic: str) -> bool:
    """True when the MQTT ``topic_filter`` (with ``+``/``#``) matches ``topic``."""
    levels, wanted = topic_filter.split("/"), topic.split("/")
    for i, level in enumerate(levels):
        if level == "#":
            return True
        if i >= len(wanted) or (level != "+" and level != wanted[i]):
            return False
    return len(levels) == len(wanted)
