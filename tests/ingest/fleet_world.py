"""A generated fleet for the many-sites tests: site files and a stream of readings.

Every site is the Lake George example with its own site id and station ids, so
30 of them are 30 sites the engine judges apart. Some sites get a turbidity
plume downstream (a regulatory alert), some rain or a deep sediment reading,
the rest stay calm; every site has its routine inspection duty. Which site gets
what is a function of its number, so the stream is the same in every run.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from analytics.timeutil import iso
from siltwatch.config import SiteConfig, load_site
from siltwatch.schema import reading_topic
from tests.ingest.live import EXAMPLES, Outgoing

TEMPLATE = EXAMPLES / "lake-george-site.toml"
STATIONS = ("up-1", "down-1", "basin-1")
MINUTE_MS = 60_000


def site_id(n: int) -> str:
    return f"fleet-{n:02d}"


def write_site(folder: Path, n: int, *, limit_ntu: int = 25) -> Path:
    """``folder/fleet-NN.toml``: the template with site ``n``'s ids (and turbidity limit)."""
    text = TEMPLATE.read_text(encoding="utf-8")
    assert 'id = "lg-route9n"' in text and "over_background_ntu = 25" in text
    text = text.replace('id = "lg-route9n"', f'id = "{site_id(n)}"')
    text = text.replace("over_background_ntu = 25", f"over_background_ntu = {limit_ntu}")
    for station in STATIONS:
        text = text.replace(f'"{station}"', f'"{station.split("-")[0]}-{n}"')
    # No site log in the fleet: its routine clock counts from the first reading, not the
    # first disturbance the Lake George pack waits for (inspection.routine_by_site_log).
    text += '\n[rule_overrides]\n"inspection.routine_by_site_log" = false\n'
    path = folder / f"{site_id(n)}.toml"
    path.write_text(text, encoding="utf-8")
    return path


def write_sites(folder: Path, count: int) -> list[SiteConfig]:
    folder.mkdir(parents=True, exist_ok=True)
    return [load_site(write_site(folder, n)) for n in range(count)]


def has_plume(n: int) -> bool:
    return n % 4 == 1


def has_storm(n: int) -> bool:
    return n % 3 == 0


def has_full_trap(n: int) -> bool:
    return n % 5 == 2


@dataclass(frozen=True)
class Reading:
    site: SiteConfig
    sensor: str
    t: int
    value: float


def _values(n: int, sensor: str, minute: int) -> float:
    if sensor == "turb-up":
        return 5.0 + (minute % 3) * 0.5
    if sensor == "turb-down":
        plume = has_plume(n) and 10 <= minute < 80
        return 70.0 if plume else 6.0 + (minute % 2) * 0.5
    if sensor == "rain-1":
        return 0.1 if has_storm(n) and minute < 30 else 0.0
    if sensor == "lvl-basin-a":
        return 0.0
    return 2.2 if has_full_trap(n) else 0.4  # sed-trap-1, of a 3 ft deep trap


def stream(sites: Sequence[SiteConfig], start_ms: int, minutes: int) -> list[Outgoing]:
    """Every sensor of every site at its interval for ``minutes``, in event-time order."""
    readings: list[Reading] = []
    for n, site in enumerate(sites):
        for sensor, spec in site.sensors().items():
            step = max(1, int(spec.interval_s) // 60)
            for minute in range(0, minutes, step):
                value = _values(n, sensor, minute)
                readings.append(Reading(site, sensor, start_ms + minute * MINUTE_MS, value))
    readings.sort(key=lambda r: (r.t, r.site.site.id, r.sensor))
    seq: dict[tuple[str, str], int] = {}
    out = []
    for r in readings:
        station = r.site.station_of()[r.sensor]
        key = (r.site.site.id, r.sensor)
        seq[key] = seq.get(key, -1) + 1
        payload = {
            "type": "reading",
            "site": r.site.site.id,
            "station": station,
            "sensor": r.sensor,
            "time": iso(r.t),
            "seq": seq[key],
            "value": r.value,
            "unit": r.site.sensors()[r.sensor].unit,
        }
        out.append(
            Outgoing(
                reading_topic(r.site.site.id, station, r.sensor),
                json.dumps(payload).encode(),
                ((f"{r.site.site.id}/{r.sensor}", r.t),),
            )
        )
    return out


def stored_readings(db: Path) -> int:
    if not db.exists():
        return 0
    with sqlite3.connect(db, timeout=30.0) as con:
        try:
            return int(con.execute("SELECT count(*) FROM readings").fetchone()[0])
        except sqlite3.OperationalError:
            return 0


def findings(dbs: Sequence[Path]) -> tuple[set[str], set[str]]:
    """Every alert and duty the stores hold, each as one JSON record (site included)."""
    alerts: set[str] = set()
    duties: set[str] = set()
    for db in dbs:
        with sqlite3.connect(db) as con:
            for site, body, late, withdrawn in con.execute(
                "SELECT site, body, late, withdrawn FROM alerts"
            ):
                record = {"site": site, "late": late, "withdrawn": withdrawn, **json.loads(body)}
                alerts.add(json.dumps(record, sort_keys=True))
            for site, body in con.execute("SELECT site, body FROM duties"):
                duties.add(json.dumps({"site": site, **json.loads(body)}, sort_keys=True))
    return alerts, duties
