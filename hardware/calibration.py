"""Per-sensor calibration: raw driver units (V, mA, counts) to engineering units.

Why as data: a field technician recalibrates a probe by measuring standards
(e.g. 0, 100 and 1000 NTU formazin for a turbidity probe; known water depths
for a pressure transducer), writing the fitted numbers into the station TOML,
and restarting the agent — no code change. :func:`fit_linear` and
:func:`fit_polynomial` turn the measured (raw, true) pairs into those numbers;
``hardware/README.md`` describes the procedure step by step.

A calibration may carry a valid ``range``: values outside it are still
reported but flagged ``out_of_range``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class _Cal(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    range: tuple[float, float] | None = Field(
        default=None, description="valid [low, high] of the calibrated value"
    )

    def in_range(self, value: float) -> bool:
        if self.range is None:
            return True
        low, high = self.range
        return low <= value <= high


class LinearCalibration(_Cal):
    """``value = gain * raw + offset`` — or from two points, the usual 4-20 mA span.

    Give either ``gain``/``offset``, or ``points = [[raw1, value1], [raw2, value2]]``
    (e.g. ``[[4.0, 0.0], [20.0, 5.0]]`` for a 0-5 m level transmitter).
    """

    type: Literal["linear"] = "linear"
    gain: float | None = None
    offset: float = 0.0
    points: list[tuple[float, float]] | None = None

    @model_validator(mode="after")
    def _gain_or_points(self) -> LinearCalibration:
        if (self.gain is None) == (self.points is None):
            raise ValueError("give either 'gain' (and optionally 'offset') or 'points'")
        if self.points is not None:
            if len(self.points) < 2:
                raise ValueError("'points' needs at least two [raw, value] pairs")
            if len({raw for raw, _ in self.points}) < 2:
                raise ValueError("'points' needs two different raw values")
        return self

    def coefficients(self) -> tuple[float, float]:
        """(gain, offset), fitted by least squares when given as points."""
        if self.points is not None:
            offset, gain = fit_polynomial(self.points, 1)
            return gain, offset
        assert self.gain is not None
        return self.gain, self.offset

    def apply(self, raw: float) -> float:
        gain, offset = self.coefficients()
        return gain * raw + offset


class PolynomialCalibration(_Cal):
    """``value = c0 + c1*raw + c2*raw**2 + ...`` (coefficients lowest power first).

    OBS3+ style turbidity probes are specified with a quadratic; fit it from
    three or more standards with :func:`fit_polynomial`.
    """

    type: Literal["polynomial"] = "polynomial"
    coefficients: list[float] = Field(min_length=1)

    def apply(self, raw: float) -> float:
        result = 0.0
        for coefficient in reversed(self.coefficients):  # Horner's rule
            result = result * raw + coefficient
        return result


Calibration = Annotated[LinearCalibration | PolynomialCalibration, Field(discriminator="type")]


def fit_polynomial(points: Sequence[tuple[float, float]], degree: int) -> list[float]:
    """Least-squares coefficients (lowest power first) through (raw, true) points.

    Solved with the normal equations and Gaussian elimination: degrees used in
    the field are 1-3, where this is exact enough and needs no numpy on a Pi.
    """
    if degree < 0:
        raise ValueError("degree must be >= 0")
    if len({raw for raw, _ in points}) < degree + 1:
        raise ValueError(f"a degree-{degree} fit needs at least {degree + 1} distinct raw values")
    n = degree + 1
    matrix = [[sum(x ** (i + j) for x, _ in points) for j in range(n)] for i in range(n)]
    rhs = [sum(y * x**i for x, y in points) for i in range(n)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(matrix[r][col]))
        matrix[col], matrix[pivot] = matrix[pivot], matrix[col]
        rhs[col], rhs[pivot] = rhs[pivot], rhs[col]
        for row in range(col + 1, n):
            factor = matrix[row][col] / matrix[col][col]
            for k in range(col, n):
                matrix[row][k] -= factor * matrix[col][k]
            rhs[row] -= factor * rhs[col]
    solution = [0.0] * n
    for row in reversed(range(n)):
        acc = rhs[row] - sum(matrix[row][k] * solution[k] for k in range(row + 1, n))
        solution[row] = acc / matrix[row][row]
    return solution


def fit_linear(points: Sequence[tuple[float, float]]) -> LinearCalibration:
    """A linear calibration (gain, offset) fitted through field points."""
    offset, gain = fit_polynomial(points, 1)
    return LinearCalibration(gain=gain, offset=offset)
