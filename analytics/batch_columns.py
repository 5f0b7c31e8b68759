"""Readings as columns: a recording the engine can take in batches.

A replay's recording is a few million ``(time, sensor, value)`` rows. As
Python objects that is a few hundred bytes and a few microseconds a row before
the detections have done anything; as three numpy arrays (a sensor code into
a table of names, epoch milliseconds, values) it is 20 bytes a row and no
per-row work at all. :class:`ReadingColumns` is that: what the CSV reader
produces (ingest/recordings/columns.py) and what :meth:`analytics.engine.Engine.feed_columns`
takes (analytics/batch.py).

It is also a ``Sequence[SensorReading]``: code that wants readings one by one
(``sorted``, ``list``, a loop) gets the same :class:`SensorReading` objects the
row-wise reader makes, built on demand. Columns carry no quality flags and no
sequence numbers: a recording has none (a JSONL capture, which may, stays a
list of readings).

numpy is imported lazily: the analytics package also runs on a station
without the server extra (statecodec imports every analytics module), where
nothing builds columns.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, overload

from analytics.events import SensorReading

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Int32s = npt.NDArray[np.int32]
    Int64s = npt.NDArray[np.int64]
    Floats = npt.NDArray[np.float64]

_AVAILABLE: bool | None = None


def numpy_available() -> bool:
    """Whether numpy and pandas can be imported here (the server extra is installed)."""
    global _AVAILABLE
    if _AVAILABLE is None:
        try:
            import numpy  # noqa: F401
            import pandas  # noqa: F401
        except ImportError:
            _AVAILABLE = False
        else:
            _AVAILABLE = True
    return _AVAILABLE


class ReadingColumns(Sequence[SensorReading]):
    """Readings as columns: ``names[code[i]]``, ``t[i]`` (epoch ms), ``value[i]``.

    Rows are in the order given (a file's order); :meth:`sorted_by_time` gives
    the engine's order (time, then sensor id), as ``sorted(readings, key=lambda
    r: (r.t, r.sensor))`` would, ties kept in file order.
    """

    __slots__ = ("code", "names", "t", "value")

    def __init__(self, names: Sequence[str], code: Int32s, t: Int64s, value: Floats) -> None:
        if not (len(code) == len(t) == len(value)):
            raise ValueError("reading columns of different lengths")
        self.names: tuple[str, ...] = tuple(names)
        self.code = code
        self.t = t
        self.value = value

    # --- construction ---------------------------------------------------------------

    @classmethod
    def empty(cls) -> ReadingColumns:
        import numpy as np

        return cls((), np.zeros(0, np.int32), np.zeros(0, np.int64), np.zeros(0, np.float64))

    @classmethod
    def from_readings(cls, readings: Sequence[SensorReading]) -> ReadingColumns:
        """Columns of readings without flags or sequence numbers (ValueError otherwise)."""
        import numpy as np

        index: dict[str, int] = {}
        codes: list[int] = []
        for r in readings:
            if r.flags or r.seq is not None:
                raise ValueError("reading columns carry no quality flags or sequence numbers")
            code = index.get(r.sensor)
            if code is None:
                code = index[r.sensor] = len(index)
            codes.append(code)
        n = len(readings)
        return cls(
            tuple(index),
            np.array(codes, dtype=np.int32),
            np.fromiter((r.t for r in readings), dtype=np.int64, count=n),
            np.fromiter((r.value for r in readings), dtype=np.float64, count=n),
        )

    # --- the Sequence protocol ------------------------------------------------------

    def __len__(self) -> int:
        return len(self.t)

    @overload
    def __getitem__(self, index: int) -> SensorReading: ...

    @overload
    def __getitem__(self, index: slice) -> ReadingColumns: ...

    def __getitem__(self, index: int | slice) -> SensorReading | ReadingColumns:
        if isinstance(index, slice):
            return ReadingColumns(self.names, self.code[index], self.t[index], self.value[index])
        return SensorReading(
            self.names[int(self.code[index])], int(self.t[index]), float(self.value[index])
        )

    def __iter__(self) -> Iterator[SensorReading]:
        names = self.names
        for code, t, value in zip(
            self.code.tolist(), self.t.tolist(), self.value.tolist(), strict=True
        ):
            yield SensorReading(names[code], t, value)

    def __repr__(self) -> str:
        return f"ReadingColumns({len(self)} readings of {len(self.names)} sensors)"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ReadingColumns | list | tuple):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    # --- order ----------------------------------------------------------------------

    def name_ranks(self) -> Int64s:
        """Each code's rank among the names in string order (the engine's tie order)."""
        import numpy as np

        ranks = np.empty(len(self.names), dtype=np.int64)
        for rank, code in enumerate(sorted(range(len(self.names)), key=self.names.__getitem__)):
            ranks[code] = rank
        return ranks

    def sorted_by_time(self) -> ReadingColumns:
        """The rows by (time, sensor id); equal keys keep their order (a stable sort)."""
        import numpy as np

        if len(self) == 0:
            return self
        ranks = self.name_ranks()[self.code]
        dt = np.diff(self.t)
        if bool(((dt > 0) | ((dt == 0) & (np.diff(ranks) >= 0))).all()):
            return self  # already in order (a recording written in time order)
        order = np.lexsort((ranks, self.t))  # the last key is the primary one; stable
        return ReadingColumns(self.names, self.code[order], self.t[order], self.value[order])
