"""The demo's stations after their scripted week: alive for as long as the demo runs.

``siltwatch demo --web`` serves the console for as long as someone looks at it.
Were the simulated stations to stop at the end of their week, every sensor
would go offline some minutes later (five of its intervals: analytics/health.py)
and the console would fill with ``sensor_offline`` alerts that no station
deserves. So each station keeps sending, in the demo's time, what a quiet day
after the storm looks like: each sensor at its own interval, with its sequence
numbers running on from the week, the turbidity probes wobbling a few tenths
of an NTU about their last reading of the week (a probe that repeats one value
for two hours is flagged stuck, analytics/health.py), no rain, and the basin
levels and sediment depths where the week left them.

None of it raises an alert the law does not ask for: the downstream probe
stays within a tenth or two of its week-end contrast to the upstream one, far
inside any limit of the packs, and a trap or basin already past its limit stays
so (the law's alert stays open until a cleanout or a drain-down shows in the
data).

Their clock is the service's (:meth:`app.demo_clock.DemoClock.arrival_ms`),
which runs ahead of the people's now by the engine's allowed lateness and one
publishing step (:func:`quiet_ms`): the engine judges a station's data once it
is sure nothing older can arrive, so for an inspection typed in the console
at the people's now to be judged within seconds, the stations' newest data
must already be that far past it.
"""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path

import paho.mqtt.client as mqtt

from analytics.timeutil import MS_PER_S, from_ms
from ingest.recordings.formats import read_csv_readings
from siltwatch.config import SiteConfig
from siltwatch.schema import ReadingBatch, ReadingItem, reading_topic

WOBBLE_NTU = 0.3  # how far a quiet turbidity probe drifts about its week-end reading
CATCH_UP_MS = 60 * MS_PER_S  # the most a call moves the stations on (see LiveStations.due)


class LiveStations:
    """A site's simulated stations after their week: each sensor's next readings."""

    def __init__(self, site: SiteConfig, examples: Path, name: str) -> None:
        self.site = site
        sensors = site.sensors()
        self.last_t: dict[str, int] = {}
        self.value: dict[str, float] = {}
        self.seq: dict[str, int] = defaultdict(int)
        for r in sorted(
            read_csv_readings(examples / f"{name}-storm.csv", sensors), key=lambda r: r.t
        ):
            self.seq[r.sensor] += 1
            self.last_t[r.sensor], self.value[r.sensor] = r.t, r.value
        self.sent_to = max(self.last_t.values(), default=0)

    def step_ms(self) -> int:
        """The longest a station goes between two messages: its fastest sensor's interval."""
        return max(
            round(min(s.interval_s for s in st.sensors) * MS_PER_S) for st in self.site.stations
        )

    def _next_value(self, sensor: str, kind: str) -> float:
        if kind == "rain":
            return 0.0
        if kind == "turbidity":
            wobble = WOBBLE_NTU * math.sin(self.seq[sensor] * 0.7)
            return round(max(0.0, self.value[sensor] + wobble), 2)
        return self.value[sensor]

    def caught_up(self, until_ms: int) -> bool:
        return self.sent_to >= until_ms

    def due(self, until_ms: int) -> list[ReadingBatch]:
        """Each station's readings from its last one up to ``until_ms``, one batch a station,
        moving on at most :data:`CATCH_UP_MS` a call.

        Why the stations catch up a minute at a time, together: when the service's clock
        jumps ahead at the end of the week (app/demo_clock.py), every station looks
        silent to the engine; the first station to send a long stretch would alone move
        event time on, past the others' offline checks, before their messages land.
        """
        until_ms = min(until_ms, self.sent_to + CATCH_UP_MS)
        self.sent_to = max(self.sent_to, until_ms)
        out: list[ReadingBatch] = []
        for station in self.site.stations:
            items: list[ReadingItem] = []
            for sensor in station.sensors:
                if sensor.id not in self.last_t:
                    continue  # a sensor the week never heard from stays silent
                step = round(sensor.interval_s * MS_PER_S)
                while self.last_t[sensor.id] + step <= until_ms:
                    self.last_t[sensor.id] += step
                    self.seq[sensor.id] += 1
                    items.append(
                        ReadingItem(
                            sensor=sensor.id,
                            time=from_ms(self.last_t[sensor.id]),
                            seq=self.seq[sensor.id],
                            value=self._next_value(sensor.id, sensor.kind),
                            unit=sensor.unit,
                        )
                    )
            if items:
                items.sort(key=lambda i: i.time)
                out.append(ReadingBatch(site=self.site.site.id, station=station.id, readings=items))
        return out

    def publish_due(self, client: mqtt.Client, until_ms: int) -> int:
        """Publish what is due up to ``until_ms``; the number of messages sent."""
        batches = self.due(until_ms)
        for batch in batches:
            topic = reading_topic(batch.site, batch.station, batch.readings[0].sensor)
            client.publish(topic, batch.model_dump_json().encode(), qos=1).wait_for_publish(
                timeout=10
            )
        return len(batches)


def quiet_ms(station_idle_ms: int, allowed_lateness_ms: int, step_ms: int) -> int:
    """How long the service must see the week's stations silent (app/demo_clock.py
    ``DemoClock.quiet``), so that its clock, and the stations', runs far enough ahead.

    The engine's watermark is the slowest station's newest data less the allowed
    lateness, and a station's newest data is at most one step behind its clock:
    a lead of lateness + step (plus the clock's margin) keeps what is judged past
    the people's now. It is never less than the idle time, which the week's end
    needs (the service sees the flush end)."""
    return max(station_idle_ms, allowed_lateness_ms + step_ms)
