"""Sediment-trap storage: how much of the design volume lies below a sediment surface.

The law counts *capacity* (Lake George §148-10 A, Big Flats 17.37.100 A: remove
sediment when design capacity is reduced by 50 %), and capacity is a volume.
A trap widens upward, so the bottom half of its depth holds far less than half
of its volume: the fraction lost must be computed by volume, never by depth.

Two ways to describe a trap, both in metres here (the config converts):

* a trapezoidal basin with the same side slope ``z`` (horizontal : vertical)
  on all four sides. At height ``y`` above the bottom the plan is
  ``(L + 2zy) x (W + 2zy)``, so the volume below ``h`` is the integral

      V(h) = ∫0^h (L + 2zy)(W + 2zy) dy = L·W·h + z·h²·(L + W) + (4/3)·z²·h³

  (the prismoidal formula: it is exact for this shape, not an approximation);
* a stage-storage table ``[(depth, volume below it), ...]``, interpolated
  linearly between rows.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass


def trapezoid_volume(length: float, width: float, side_slope: float, h: float) -> float:
    """Volume below height ``h`` of a trapezoidal basin (any consistent length unit)."""
    if h <= 0.0:
        return 0.0
    z = side_slope
    return length * width * h + z * h * h * (length + width) + (4.0 / 3.0) * z * z * h**3


def interpolate_storage(table: list[tuple[float, float]], h: float) -> float:
    """Volume below ``h`` from a stage-storage table (linear between rows, clamped at the ends)."""
    if h <= table[0][0]:
        return table[0][1]
    if h >= table[-1][0]:
        return table[-1][1]
    i = bisect_right([d for d, _ in table], h)
    (d0, v0), (d1, v1) = table[i - 1], table[i]
    return v0 + (v1 - v0) * (h - d0) / (d1 - d0)


@dataclass(frozen=True)
class TrapGeometry:
    """One trap's storage curve in metres; picklable plain data.

    ``shape`` is (bottom length, bottom width, side slope, storage depth);
    ``table`` the stage-storage rows. Exactly one is set. The design volume is
    the volume at the storage depth (shape) or at the table's last row.
    """

    shape: tuple[float, float, float, float] | None = None
    table: tuple[tuple[float, float], ...] | None = None

    def __post_init__(self) -> None:
        if (self.shape is None) == (self.table is None):
            raise ValueError("a trap geometry needs exactly one of shape or table")

    @property
    def design_depth_m(self) -> float:
        if self.shape is not None:
            return self.shape[3]
        assert self.table is not None
        return self.table[-1][0]

    @property
    def design_volume_m3(self) -> float:
        return self.volume_m3(self.design_depth_m)

    def volume_m3(self, depth_m: float) -> float:
        """Storage volume below a sediment surface ``depth_m`` above the bottom (clamped to the design depth)."""
        h = min(max(depth_m, 0.0), self.design_depth_m)
        if self.shape is not None:
            length, width, z, _ = self.shape
            return trapezoid_volume(length, width, z, h)
        assert self.table is not None
        return interpolate_storage(list(self.table), h)

    def fraction_lost(self, depth_m: float) -> float:
        """Fraction of the design storage volume filled with sediment, 0..1."""
        return self.volume_m3(depth_m) / self.design_volume_m3
