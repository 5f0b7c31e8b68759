"""A detector that logs every input the engine hands it, for the tests of input order.

Each :class:`Recorder` appends ``(its name, what, who, t)`` to a log it shares with
the others, so one log shows both the order one detector sees and the order the
detectors are handed each input in.
"""

from __future__ import annotations

from collections.abc import Iterable

from analytics.detector import Context, Detector
from analytics.engine import Engine
from analytics.events import Inspection, SensorReading, SiteLogEntry, StationReport
from analytics.timeutil import MS_PER_MIN
from tests.analytics.test_rain import gauge_site

Q = 15 * MS_PER_MIN
Log = list[tuple[str, str, str, int]]  # (detector, what, who, t)


class Recorder(Detector):
    """Logs what it is handed, in the order it is handed it."""

    def __init__(self, name: str, log: Log) -> None:
        self.name = name
        self.log = log

    def sensors(self) -> Iterable[str]:
        return ("rain",)

    def on_reading(self, reading: SensorReading, ctx: Context) -> None:
        self.log.append((self.name, "reading", reading.sensor, reading.t))

    def on_inspection(self, inspection: Inspection, ctx: Context) -> None:
        self.log.append((self.name, "inspection", inspection.inspector, inspection.t))

    def on_status(self, report: StationReport, ctx: Context) -> None:
        self.log.append((self.name, f"status {report.state}", report.station, report.t))

    def on_site_log(self, entry: SiteLogEntry, ctx: Context) -> None:
        self.log.append((self.name, entry.event, entry.by, entry.t))


def rain(t: int) -> SensorReading:
    return SensorReading("rain", t, 0.0)


def recorded(log: Log, name: str = "a") -> list[tuple[str, str, int]]:
    """(what, who, t) of what the detector ``name`` was handed, in order."""
    return [(what, who, t) for n, what, who, t in log if n == name]


def handed_in_order(
    at_q: Iterable[tuple[str, str]], at_2q: Iterable[tuple[str, str]]
) -> list[tuple[str, str, int]]:
    """What detector a of :func:`out_of_order` is handed, as (what, who, t): at each
    instant the rain reading first, then Dana's inspection (at Q), then ``at_q`` or
    ``at_2q``, the (what, who) of the other inputs at Q and at 2Q, in the order expected."""
    return [
        ("reading", "rain", Q),
        ("inspection", "Dana", Q),
        *((what, who, Q) for what, who in at_q),
        ("reading", "rain", 2 * Q),
        *((what, who, 2 * Q) for what, who in at_2q),
        ("reading", "rain", 3 * Q),
    ]


def each_detector(names: str, inputs: Iterable[tuple[str, int]]) -> list[tuple[str, str, int]]:
    """``inputs`` as they reach the detectors named (one letter each): every input is
    handed to every detector, in detector order, before the next input."""
    return [(name, what, t) for what, t in inputs for name in names]


def out_of_order(
    site_log: Iterable[SiteLogEntry] = (), statuses: Iterable[StationReport] = ()
) -> tuple[Engine, Log]:
    """Recorders a and b on a rain-gauge site, fed ``site_log`` and ``statuses``, then an
    inspection by Dana at Q and rain readings at 3Q, Q and 2Q (out of order), to the end."""
    log: Log = []
    engine = Engine(gauge_site(), detectors=[Recorder("a", log), Recorder("b", log)])
    for entry in site_log:
        engine.feed_site_log(entry)
    for report in statuses:
        engine.feed_status(report)
    engine.feed_inspection(Inspection(Q, "Dana"))
    engine.feed([rain(3 * Q), rain(Q), rain(2 * Q)])
    engine.finish()
    return engine, log
