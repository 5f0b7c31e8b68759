"""Who hears what: the officer hears once when an episode becomes the town's business and
once when it clears — derived from the episode, so a restart changes nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from alerts.routing import NoticeEvent, route
from siltwatch.config import load_site
from siltwatch.schema import Alert

SITE = load_site(Path(__file__).resolve().parents[2] / "examples" / "lake-george-site.toml")


def alert(kind: str, steps: list[tuple[str, str]], resolved: str | None = None) -> Alert:
    order = {"info": 0, "warning": 1, "critical": 2}
    data: dict[str, Any] = {
        "id": "al-1",
        "kind": kind,
        "subject": "outfall-a",
        "severity": max((s for _, s in steps), key=order.__getitem__),
        "escalations": [{"at": at, "severity": sev} for at, sev in steps],
        "opened_at": steps[0][0],
        "resolved_at": resolved,
        "rule": "Lake George §148-9 B",
        "message": "m",
        "evidence": {},
    }
    return Alert.model_validate(data)


def roles(event: str, a: Alert) -> set[str]:
    return {c.role for c in route(SITE, NoticeEvent(event), "2026-05-05T18:00:00Z", a).recipients}


def test_officer_hears_first_critical_and_resolution_only() -> None:
    t = [f"2026-05-05T1{i}:00:00Z" for i in range(6)]
    opened = alert("turbidity_contrast", [(t[0], "warning")])
    assert roles("opened", opened) == {"operator"}
    up = alert("turbidity_contrast", [(t[0], "warning"), (t[1], "critical")])
    assert roles("escalated", up) == {"operator", "officer"}
    down = alert("turbidity_contrast", [(t[0], "warning"), (t[1], "critical"), (t[2], "warning")])
    assert roles("escalated", down) == {"operator"}
    again = alert(
        "turbidity_contrast",
        [(t[0], "warning"), (t[1], "critical"), (t[2], "warning"), (t[3], "critical")],
    )
    assert roles("escalated", again) == {"operator"}  # one message per episode, not per flap
    # A service restarted in between routes the resolution the same way: no memory needed.
    assert roles(
        "resolved", alert("turbidity_contrast", [(t[0], "warning"), (t[1], "critical")], t[4])
    ) == {
        "operator",
        "officer",
    }
    never = alert("turbidity_contrast", [(t[0], "warning")], t[4])
    assert roles("resolved", never) == {"operator"}


def test_overdue_inspection_goes_to_the_officer_at_once() -> None:
    overdue = alert("inspection_overdue", [("2026-05-12T04:00:00Z", "critical")])
    assert roles("opened", overdue) == {"operator", "officer"}
    data_quality = alert("data_quality", [("2026-05-12T04:00:00Z", "critical")])
    assert roles("opened", data_quality) == {"operator"}  # not a regulatory matter
