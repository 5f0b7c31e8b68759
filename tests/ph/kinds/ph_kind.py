"""A pH probe, as a new kind of sensor would be added: one module of siltwatch/sensorkinds/.

Lives in the tests (pH is not a shipped feature); tests/ph/registered.py drops it into
the package's search path, as copying it there would.
"""

from __future__ import annotations

from siltwatch.sensorkinds.base import SensorKind

KIND = SensorKind(
    key="ph",
    what="pH",
    units={"pH": 1.0},
    base_unit="pH",
    low=0.0,  # the pH scale of water: a value outside it is no measurement
    high=14.0,
    plausible=(2.0, 12.5),  # beyond any stream; a probe out of the water or out of calibration
)
