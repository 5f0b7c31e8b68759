"""Turbidity probes (NTU; FNU alike): what the turbidity contrast rule reads.

Impossible outside -50 .. 10,000 NTU. Field turbidity probes measure up to
about 1,000-4,000 NTU; the muddiest construction runoff is in the low thousands.
10,000 leaves headroom above both, so a real plume is always stored. Slightly
negative readings are real (a probe's zero offset drifts a few NTU in clear
water); -50 is far beyond any offset. Plausible within -5 .. 4,000 NTU: beyond
any field probe's range is a wiring or parsing fault, flagged by
analytics/health.py.
"""

from __future__ import annotations

from siltwatch.sensorkinds.base import Plot, SensorKind

KIND = SensorKind(
    key="turbidity",
    what="turbidity",
    units={"NTU": 1.0, "FNU": 1.0},  # NTU and FNU share one scale
    base_unit="NTU",
    low=-50.0,
    high=10_000.0,
    plausible=(-5.0, 4000.0),
    plot=Plot("median"),
)
