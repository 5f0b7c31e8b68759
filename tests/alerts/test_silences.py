"""What a silence may hold, decided from the detection registry; and a silence that cannot
be read never silences anyone.

A silence holds a sensor's or a practice's alerts during planned work; it never holds
what the law makes the town's business from its opening (a missed deadline, a missing
notice, a violation): those kinds are ``Officer.ON_OPEN`` or ``Officer.ONCE`` in their
descriptions (siltwatch/detections/). The console's tests hold real alerts in real
silences (tests/console/test_app_live.py); these check the rule over every kind.
"""

from __future__ import annotations

from datetime import datetime

from alerts.routing import NoticeEvent, Notification
from alerts.silences import HeldInSilence, held_by, may_be_silenced
from siltwatch.detections import alert_kinds, alert_spec, duty_spec
from siltwatch.detections.base import Officer
from tests.alerts.helpers import RecordingSink, alert


def test_no_regulatory_duty_notice_or_violation_may_be_silenced() -> None:
    kinds = alert_kinds()
    overdue = [k for k in kinds if k.endswith("_overdue")]
    assert "inspection_overdue" in overdue and "stabilization_overdue" in overdue
    for kind in kinds:
        spec = alert_spec(kind)
        assert spec is not None
        town_hears_at_once = spec.officer in (Officer.ON_OPEN, Officer.ONCE)
        expected = not town_hears_at_once and kind not in overdue
        assert may_be_silenced(kind) == expected, kind
    assert not any(may_be_silenced(k) for k in overdue)
    for kind in ("notice_missing", "violation_open", "work_during_violation"):
        assert kind in kinds and not may_be_silenced(kind), kind
    # What planned work sets off may be: a plume, a full trap, a probe or station down.
    for kind in ("turbidity_contrast", "sediment_capacity", "sensor_offline", "station_offline"):
        assert may_be_silenced(kind), kind
    assert not may_be_silenced("a_kind_from_a_later_release")
    assert duty_spec("inspection") is not None


class Lookup:
    def __init__(
        self, answer: str | None = None, broken: bool = False, only_at: int | None = None
    ) -> None:
        self.answer, self.broken, self.only_at = answer, broken, only_at
        self.asked: list[tuple[str, str, str, int]] = []

    def silence_covering(self, site: str, subject: str, kind: str, at_ms: int) -> str | None:
        self.asked.append((site, subject, kind, at_ms))
        if self.broken:
            raise OSError("database is locked")
        return self.answer if self.only_at in (None, at_ms) else None


def ms(utc_time: str) -> int:
    return round(datetime.fromisoformat(f"2026-05-05T{utc_time}:00+00:00").timestamp() * 1000)


def note(event: str, kind: str = "turbidity_contrast", resolved: bool = False) -> Notification:
    return Notification(
        NoticeEvent(event), "2026-05-05T16:30:00Z", alert(kind=kind, resolved=resolved), ()
    )


def test_a_covered_opening_is_held_its_end_asks_about_its_opening_too() -> None:
    lookup = Lookup("silence #1 of sensor turb-down by Dana Ruiz: probe serviced")
    inner = RecordingSink()
    sink = HeldInSilence(inner, "lg-route9n", lookup)
    sink.send(note("opened"))
    assert inner.sent == [] and sink.held == 1
    assert lookup.asked == [("lg-route9n", "outfall-a", "turbidity_contrast", ms("16:30"))]
    # An end after the silence is held when the opening was: nobody heard it begin.
    opening_only = Lookup("silence #1", only_at=ms("16:26"))
    assert held_by(opening_only, "lg-route9n", note("resolved", resolved=True)) == "silence #1"
    assert [a[3] for a in opening_only.asked] == [ms("16:30"), ms("16:26")]
    assert held_by(opening_only, "lg-route9n", note("escalated")) is None
    sink.send(note("opened", kind="inspection_overdue"))
    assert [n.alert.kind for n in inner.sent] == ["inspection_overdue"], "never held"


def test_silences_that_cannot_be_read_hold_nothing() -> None:
    inner = RecordingSink()
    sink = HeldInSilence(inner, "lg-route9n", Lookup(broken=True))
    sink.send(note("opened"))
    assert len(inner.sent) == 1 and sink.held == 0
