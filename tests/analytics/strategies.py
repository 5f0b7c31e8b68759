"""Generated site recordings for the property tests: plumes, debris, gaps, faults and storms.

A property that holds because nothing happens proves nothing, so the generator
builds the episodes the detectors exist for: turbidity plumes of minutes to
hours, isolated debris spikes, sensor gaps (offline episodes), impossible
readings and frozen probes (data-quality episodes), and rain storms that raise
a basin's water level and add sediment to a trap (the colleagues' drain-time,
sediment and inspection detectors). Noise comes from a seeded ``random.Random``
so a failing case shrinks and replays exactly.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from analytics.events import SensorReading
from analytics.timeutil import MS_PER_MIN
from siltwatch.config import SiteConfig
from tests.analytics.turbidity_helpers import T0

PROPERTY_SETTINGS = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# Seeds for the recordings' noise and the deliveries' shuffles; where in a run a
# snapshot is taken, as a fraction of it.
SEEDS = st.integers(min_value=0, max_value=2**32 - 1)
CUTS = st.floats(min_value=0.0, max_value=1.0)

TURBIDITY = ("turb-up", "turb-down")
SENSORS = ("turb-up", "turb-down", "rain-1", "lvl-basin", "sed-trap")


def property_site(jurisdiction: str = "ny") -> SiteConfig:
    """One turbidity pair, and rain, level and sediment sensors in use.

    ``ny``: Lake George rules with the site's 25 NTU proxy; ``nc``: Lake Lure on
    NCG01, the pack's 50 NTU stream cap with "no increase" above it, and the
    rain-triggered inspection duties.
    """
    nc = jurisdiction == "nc"
    pair_limit = {} if nc else {"limit": {"over_background_ntu": 25}}
    return SiteConfig.model_validate(
        {
            "site": {
                "id": f"prop-site-{jurisdiction}",
                "name": "Property site",
                "timezone": "America/New_York",
                "rule_packs": ["nc-ncg01", "nc-lake-lure"] if nc else ["ny-lake-george"],
                "disturbed_acres": 3.0,
            },
            "receiving_waters": [{"id": "brook", "name": "Brook", "class": "stream"}],
            "stations": [
                {
                    "id": "up-1",
                    "sensors": [
                        {"id": "turb-up", "kind": "turbidity", "unit": "NTU", "interval_s": 60}
                    ],
                },
                {
                    "id": "down-1",
                    "sensors": [
                        {"id": "turb-down", "kind": "turbidity", "unit": "NTU", "interval_s": 60}
                    ],
                },
                {
                    "id": "basin-1",
                    "sensors": [
                        {
                            "id": "rain-1",
                            "kind": "rain",
                            "unit": "in",
                            "tip_in": 0.01,
                            "interval_s": 300,
                        },
                        {"id": "lvl-basin", "kind": "water_level", "unit": "ft", "interval_s": 300},
                        {
                            "id": "sed-trap",
                            "kind": "sediment_depth",
                            "unit": "ft",
                            "interval_s": 3600,
                        },
                    ],
                },
            ],
            "turbidity_pairs": [
                {
                    "id": "outfall-a",
                    "upstream": "turb-up",
                    "downstream": "turb-down",
                    "receiving_water": "brook",
                    "travel_time_s": 120,
                    **pair_limit,
                }
            ],
            "infiltration_practices": [
                {
                    "id": "basin-a",
                    "type": "vegetated_depression",
                    "level_sensor": "lvl-basin",
                    "design_level_ft": 0.0,
                    "tolerance_ft": 0.05,
                }
            ],
            "sediment_traps": [
                {
                    "id": "trap-1",
                    "depth_sensor": "sed-trap",
                    "shape": {
                        "bottom_length_ft": 20.0,
                        "bottom_width_ft": 10.0,
                        "side_slope": 2.0,
                        "depth_ft": 3.0,
                    },
                }
            ],
            "rain_gauges": [{"id": "gauge-1", "sensor": "rain-1"}],
        }
    )


SITES = {"ny": property_site("ny"), "nc": property_site("nc")}


class Recording:
    """A generated recording; its repr is the plan, not 2000 readings."""

    def __init__(
        self, site: SiteConfig, readings: list[SensorReading], end: int, plan: str
    ) -> None:
        self.site = site
        self.readings = readings
        self.end = end
        self.plan = plan  # what the generator put in, for a failing example's report

    def __repr__(self) -> str:
        return f"Recording({self.plan}, {len(self.readings)} readings)"


def sensor_spans(
    sensors: Sequence[str], minute: st.SearchStrategy[int], shortest: int, longest: int
) -> st.SearchStrategy[tuple[str, int, int]]:
    """(sensor, start minute, length in minutes): a gap, a fault or a frozen probe."""
    return st.tuples(
        st.sampled_from(sensors), minute, st.integers(min_value=shortest, max_value=longest)
    )


def _plume_shape(minute: int, start: int, length: int) -> float:
    """0..1: a 5-minute ramp up, a plateau, a 10-minute tail."""
    if minute < start:
        return 0.0
    k = minute - start
    if k < 5:
        return (k + 1) / 5.0
    if k < length:
        return 1.0
    tail = k - length
    return max(0.0, 1.0 - (tail + 1) / 10.0)


@st.composite
def recordings(draw: st.DrawFn) -> Recording:
    jurisdiction = draw(st.sampled_from(sorted(SITES)))
    hours = draw(st.integers(min_value=3, max_value=8))
    n = hours * 60
    seed = draw(SEEDS)
    # Up to 70 NTU: above NC's 50 NTU cap the "no increase" branch decides.
    background = draw(st.floats(min_value=0.5, max_value=70.0))
    minute = st.integers(min_value=0, max_value=n - 1)

    def events(
        shortest: int, longest: int, least: float, most: float
    ) -> st.SearchStrategy[list[tuple[int, int, float]]]:
        """Up to three events: (start minute, length in minutes, size)."""
        return st.lists(
            st.tuples(
                minute,
                st.integers(min_value=shortest, max_value=longest),
                st.floats(min_value=least, max_value=most),
            ),
            max_size=3,
        )

    plumes = draw(events(2, 120, 5.0, 400.0))  # NTU over the background
    debris = draw(st.lists(minute, max_size=6))
    gaps = draw(st.lists(sensor_spans(SENSORS, minute, 3, 120), max_size=3))
    faults = draw(st.lists(sensor_spans(TURBIDITY, minute, 1, 60), max_size=2))
    stuck = draw(st.none() | sensor_spans(TURBIDITY, minute, 60, 200))
    storms = draw(events(10, 240, 0.005, 0.15))  # inches of rain per 5 minutes
    rng = random.Random(seed)

    def missing(sensor: str, m: int) -> bool:
        return any(s == sensor and start <= m < start + length for s, start, length in gaps)

    def fouled(sensor: str, m: int) -> bool:
        return any(s == sensor and start <= m < start + length for s, start, length in faults)

    out: list[SensorReading] = []

    def emit(sensor: str, m: int, value: float, digits: int) -> None:
        if not missing(sensor, m):
            out.append(SensorReading(sensor, T0 + m * MS_PER_MIN, round(value, digits)))

    stuck_value: dict[str, float] = {}
    for m in range(n):
        up = background + rng.gauss(0.0, 0.3)
        down = background + 1.0 + rng.gauss(0.0, 0.4)
        for start, length, amplitude in plumes:
            down += amplitude * _plume_shape(m, start, length)
        if m in debris:
            down += rng.uniform(300.0, 900.0)
        for sensor, value in (("turb-up", up), ("turb-down", down)):
            if stuck is not None and stuck[0] == sensor and stuck[1] <= m < stuck[1] + stuck[2]:
                value = stuck_value.setdefault(sensor, round(value, 2))
            if fouled(sensor, m):
                value = -20.0
            emit(sensor, m, value, 2)

    # Rain every 5 minutes (whole tips of 0.01 in), a basin that fills and drains,
    # and a trap that gains sediment with each inch of rain.
    level = 0.0
    total_rain = 0.0
    for m in range(0, n, 5):
        depth = 0.0
        for start, length, intensity in storms:
            if start <= m < start + length:
                depth += intensity
        depth = math.floor(depth / 0.01 + 1e-9) * 0.01
        total_rain += depth
        level = max(0.0, level * 0.97 + depth * 8.0)
        emit("rain-1", m, depth, 2)
        emit("lvl-basin", m, level + rng.gauss(0.0, 0.003), 3)
        if m % 60 == 0:
            emit("sed-trap", m, 0.4 + 0.05 * total_rain + rng.gauss(0.0, 0.002), 3)

    out.sort(key=lambda r: (r.t, r.sensor))
    plan = (
        f"{jurisdiction} hours={hours} seed={seed} background={background:.2f} plumes={plumes} "
        f"debris={debris} gaps={gaps} faults={faults} stuck={stuck} storms={storms}"
    )
    end = out[-1].t if out else T0
    return Recording(SITES[jurisdiction], out, end, plan)
