"""``siltwatch demo``: the system on its embedded defaults, on a scripted storm.

No set-up: it loads the two reference sites shipped in examples/, replays each
site's scripted storm week through the detections, prints each alert as the
officer and the operator would see it, and writes the alert log (JSONL) and
the duties where the banner says. Like the CLI, this module wires packages
together; nothing else in ``siltwatch`` may.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from analytics.events import AlertEvent, DutyEvent
from analytics.timeutil import iso
from ingest.recording import RecordingError
from ingest.replay import replay_file
from siltwatch.configerrors import ConfigError

SITES = ("lake-george", "lake-lure")


def run_demo(out: Path, *, examples: Path) -> int:
    out.mkdir(parents=True, exist_ok=True)
    log = out / "alert-log.jsonl"
    print("=" * 72)
    print("siltwatch demo — embedded defaults, scripted storms on the two reference sites")
    print(f"  alert log (JSONL): {log.resolve()}")
    print(f"  outputs:           {out.resolve()}/<site>-alerts.jsonl, <site>-duties.jsonl")
    print("=" * 72)
    lines: list[str] = []
    for name in SITES:
        site_file = examples / f"{name}-site.toml"
        try:
            result = replay_file(
                site_file, examples / f"{name}-storm.csv", examples / f"{name}-inspections.csv"
            )
        except (ConfigError, RecordingError) as exc:
            for line in exc.lines:
                print(f"error: {line}", file=sys.stderr)
            return 1
        site = result.site.site
        print(f"\n## {site.name or site.id} ({site.id}) — rule packs: {', '.join(site.rule_packs)}")
        for event in result.events:
            if isinstance(event, AlertEvent):
                a = event.alert
                print(
                    f"[{iso(event.at)}] ALERT {event.type.upper():9} {a.severity:8} {a.kind} {a.subject}"
                )
                if event.type == "opened":
                    print(f"    {a.message}")
                    print(f"    rule: {a.rule}")
                entry = {"site": site.id, "event": event.type, "alert": a.model_dump(mode="json")}
                lines.append(json.dumps(entry))
            elif isinstance(event, DutyEvent):
                d = event.duty
                print(
                    f"[{iso(event.at)}] DUTY  {event.type.upper():9} {d.reason} inspection due {d.due_at:%Y-%m-%d %H:%M}Z ({d.rule})"
                )
        result.write(out / f"{name}-alerts.jsonl", out / f"{name}-duties.jsonl")
        print(
            f"-> {len(result.alerts)} alert episodes, {len(result.duties)} duties "
            f"({result.stats.readings_processed:,} readings)"
        )
    log.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    print(f"\ndone. alert log: {log.resolve()}")
    return 0
