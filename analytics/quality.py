"""The usable-reading policy: which quality flags keep a reading out of the evidence.

Every detector that takes readings as evidence asks *this* module, so one
replay tells one story: a reading the rain log counts is a reading the
sediment forecast counts, and a reading one detector drops, all drop.

| flag | class | used by rain, drain, sediment (:func:`usable`) | used in the turbidity medians (:func:`usable_in_median`) | why |
|---|---|---|---|---|
| ``out_of_range`` | hard | no | no | the value is outside the sensor's physical or configured range |
| ``sensor_fault`` | hard | no | no | the driver reported an error: the number is not a measurement |
| ``flatline`` | hard | no | no | the probe is frozen: the number is not today's water |
| ``uncalibrated`` | hard | no | no | no calibration on file and the driver's unit is not the declared one (hardware/calibrated.py): volts are not NTU, and a tipping bucket's millimetres are not the gauge's inches |
| ``clock_unsynced`` | hard | no | no | the time may be wrong, so the value cannot be placed in a storm, a fill or a window |
| ``clock_ahead`` | hard | no | no | the time is ahead of its arrival beyond the skew bound (the engine never even places it) |
| ``too_old`` | hard | no | no | dated more than 5 years before its arrival, a reset clock (1970): the engine never places it either |
| ``before_site_start`` | hard | no | no | dated before the site's ``[site] start``: no rule of the site applied yet (a bench test, a wrong clock); the engine never places it either |
| ``spike`` | soft | no | yes, and counted | see below |
| ``backfilled`` | informational | yes | yes | sent late from the outbox after an outage: late, not wrong |
| ``simulated`` | informational | yes | yes | produced by the simulated driver: a test bench is judged like the field |

Hard flags are unusable for *any* detection. Dropped readings are never
silent: each detector counts them (rain: ``excluded`` in the daily log;
drain and sediment: ``ignored_readings``; turbidity: the flags are named when
a pair cannot be judged).

Why ``spike`` is soft, and soft in one place only (analytics/health.py): the
screen cannot know without lookahead whether a jump is isolated, so it only
marks it. A median over a whole window *is* the isolation test, made with
hindsight, so the turbidity contrast keeps spike-marked readings in its
medians and counts them in its evidence (:func:`usable_in_median`). Rain,
drain and sediment use each reading as an increment (a rain depth) or as a
step in a short median that decides an event (a fill, a cleanout), so they
honour the mark and drop the reading (:func:`usable`). The screen only marks
turbidity spikes: rain, levels and sediment legitimately sit still for days
and jump, so a spike flag on them only comes from upstream (the edge).

This decides whether a reading's *value* may be used. Two other questions are
deliberately answered elsewhere: whether its *time* may move a watermark
(analytics/engine.py, ``UNTRUSTED_TIME``), and whether it shows that a sensor
is alive (any reading does: health's offline check and the start of the
inspection clock take every reading, flagged or not).
"""

from __future__ import annotations

from collections.abc import Set

from siltwatch.schema import QualityFlag

#: Flags that make a reading unusable as evidence for any detection.
HARD_FLAGS: frozenset[str] = frozenset(
    {
        QualityFlag.OUT_OF_RANGE.value,
        QualityFlag.SENSOR_FAULT.value,
        QualityFlag.FLATLINE.value,
        QualityFlag.UNCALIBRATED.value,
        QualityFlag.CLOCK_UNSYNCED.value,
        QualityFlag.CLOCK_AHEAD.value,
        QualityFlag.TOO_OLD.value,
        QualityFlag.BEFORE_SITE_START.value,
    }
)
#: Marks a median keeps (and counts); detectors without a window median drop them.
SOFT_FLAGS: frozenset[str] = frozenset({QualityFlag.SPIKE.value})
#: Marks that change nothing about the reading's use.
INFORMATIONAL_FLAGS: frozenset[str] = frozenset(
    {QualityFlag.BACKFILLED.value, QualityFlag.SIMULATED.value}
)

# Grades, for detectors that keep them per reading (analytics/robust.py windows).
USABLE = 0
SOFT = 1
UNUSABLE = 2


def usable(flags: Set[str]) -> bool:
    """Whether a reading with ``flags`` counts as evidence (rain, drain, sediment)."""
    return not flags or (flags.isdisjoint(HARD_FLAGS) and flags.isdisjoint(SOFT_FLAGS))


def usable_in_median(flags: Set[str]) -> bool:
    """Whether a reading with ``flags`` may enter a window median (turbidity, the spike test)."""
    return not flags or flags.isdisjoint(HARD_FLAGS)


def grade(flags: Set[str]) -> int:
    """:data:`USABLE`, :data:`SOFT` (median only, counted) or :data:`UNUSABLE`."""
    if not flags:
        return USABLE
    if not flags.isdisjoint(HARD_FLAGS):
        return UNUSABLE
    if not flags.isdisjoint(SOFT_FLAGS):
        return SOFT
    return USABLE


def unusable_reasons(flags: Set[str]) -> tuple[str, ...]:
    """The hard flags among ``flags``, sorted: what a person is told was wrong."""
    return tuple(sorted(HARD_FLAGS.intersection(flags)))
