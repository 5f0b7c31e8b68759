"""Recordings read column-wise: pandas' C parser, the same readings and the same errors.

A 30-day recording of a 40-probe site is 1.7 M rows. The csv module hands
them over one Python list at a time; pandas' C tokenizer hands over three
columns. This reader gives exactly what the row-wise reader
(``ingest.recordings.csv_rows.read_csv_rows``) gives — the same readings in file order,
or the same ``FILE:LINE`` errors, the first 20 and how many more:

* the header is read and checked by the row-wise code itself;
* **fast path**: the body parsed with the value column as float64. A time text
  is parsed once per distinct text, by the same ``parse_time``; a sensor id once
  per distinct id. When every row is good (nearly always) the columns are done;
* **exact path**, when anything is off (a value that is not a plain number, an
  unknown sensor, a bad time, a short or blank row): the body again, every line
  a row (``skip_blank_lines=False``, so row *i* is line *i* + 2), the values
  converted by Python's ``float`` (what the row-wise reader uses). The rows
  that are not plainly good are found on arrays; only those lines are read
  again as text and judged by the row-wise code (``csv_reading``), which says
  what is wrong, with the line number;
* a file the two tokenizers could split differently goes to the row-wise reader
  whole: quotes (a quoted field may hold commas and line breaks), NUL bytes,
  text that is not UTF-8, a line count that does not match.

pandas (the server extra) is needed; without it :func:`read_csv_columns`
returns None and the caller reads row by row.
"""

from __future__ import annotations

import csv
import gzip
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from analytics.batch_columns import ReadingColumns, numpy_available
from ingest.recordings.csv_rows import (
    CSV_COLUMNS,
    Problems,
    RecordingError,
    check_header,
    csv_reading,
    open_text,
    parse_time,
)

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

_SCAN_BYTES = 1 << 22


class _RowWise(Exception):
    """This file is for the row-wise reader."""


def read_csv_columns(path: Path, sensors: Iterable[str]) -> ReadingColumns | None:
    """The recording as columns; None when the row-wise reader must read it.

    RecordingError (the header, or the bad rows) exactly as the row-wise reader.
    """
    if not numpy_available():
        return None
    known = set(sensors)
    source = str(path)
    try:
        if _needs_csv_module(path):
            return None
        with open_text(path) as fh:
            header = next(csv.reader(fh), None)
    except (OSError, UnicodeDecodeError, csv.Error, EOFError):
        return None  # the row-wise reader says what is wrong with the file
    cols = check_header(source, header, CSV_COLUMNS)
    width = len(header or ())
    try:
        fast = _arrow(path, width, cols, known)
        if fast is None:
            fast = _fast(path, width, cols, known)
        if fast is not None:
            return fast
        return _exact(path, source, width, cols, known)
    except _RowWise:
        return None


def _needs_csv_module(path: Path) -> bool:
    """Quotes or NUL bytes anywhere: the csv module's rules decide where fields end."""
    opener: Any = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as fh:
        while chunk := fh.read(_SCAN_BYTES):
            if b'"' in chunk or b"\0" in chunk:
                return True
    return False


def _read(path: Path, width: int, cols: dict[str, int], value_dtype: Any, blank: bool) -> Any:
    """The body (after the header line) as a DataFrame of the three columns."""
    import numpy as np
    import pandas as pd

    it, ss, vs = cols["time"], cols["sensor"], cols["value"]
    options: dict[str, Any] = {}
    if _PANDAS_ROUNDS_EXACTLY is False:
        options["float_precision"] = "round_trip"  # Python's own conversion
    try:
        with warnings.catch_warnings():
            # Rows longer than the header: the cells beyond are dropped, as the
            # row-wise reader ignores them.
            warnings.simplefilter("ignore")
            return pd.read_csv(
                path,
                header=None,
                skiprows=1,
                names=list(range(width)),
                usecols=[it, ss, vs],
                dtype={it: object, ss: object, vs: value_dtype},
                na_filter=False,
                skip_blank_lines=not blank,
                engine="c",
                index_col=False,
                encoding="utf-8",
                compression="gzip" if path.suffix == ".gz" else None,
                **options,
            )
    except pd.errors.EmptyDataError:
        return pd.DataFrame({it: np.array([], object), ss: np.array([], object), vs: []})
    except (pd.errors.ParserError, UnicodeDecodeError, OSError, EOFError) as exc:
        raise _RowWise from exc
    except ValueError:
        raise  # a value that is not a number (the fast path's float64): look closely
    except Exception as exc:  # anything else pandas trips on: the csv module reads it
        raise _RowWise from exc


def _version_rounds_exactly() -> bool:
    """pandas >= 3.1 parses floats with fast_float (correctly rounded, as Python's float);
    before, only ``float_precision="round_trip"`` (Python's own conversion) is."""
    try:
        import pandas as pd
    except ImportError:
        return False
    major, minor = (int(x) for x in pd.__version__.split(".")[:2])
    return (major, minor) >= (3, 1)


_PANDAS_ROUNDS_EXACTLY: bool | None = _version_rounds_exactly() if numpy_available() else None


def _fast(path: Path, width: int, cols: dict[str, int], known: set[str]) -> ReadingColumns | None:
    """Every row good: the columns. None: something is off, look closely."""
    import numpy as np
    import pandas as pd

    try:
        frame = _read(path, width, cols, np.float64, blank=False)
    except ValueError:
        return None  # a value that is not a plain number, or a missing one
    values = frame[cols["value"]].to_numpy(dtype=np.float64)
    if not bool(np.isfinite(values).all()):
        return None
    s_codes, s_texts = pd.factorize(frame[cols["sensor"]].to_numpy(dtype=object))
    ids = [str(text).strip() for text in s_texts]
    if any(x not in known or not x for x in ids):
        return None
    t_codes, t_texts = pd.factorize(frame[cols["time"]].to_numpy(dtype=object))
    stamps, t_ok = _times([str(text) for text in t_texts])
    if not bool(t_ok.all()):
        return None
    names, code_of = _names(ids)
    return ReadingColumns(
        names,
        code_of[s_codes].astype(np.int32),
        stamps[t_codes] if len(t_codes) else np.zeros(0, np.int64),
        values,
    )


# The shape nearly every recording writes, YYYY-MM-DDTHH:MM:SSZ: its digits and separators.
_ISO_Z = b"0000-00-00T00:00:00Z"


def _times(texts: list[Any]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.bool_]]:
    """Each distinct time text as epoch ms, and whether it is a time (``parse_time``'s answer).

    A year of one-minute readings has half a million distinct times, and
    ``datetime.fromisoformat`` per text was a quarter of a replay. Texts of the
    shape ``YYYY-MM-DDTHH:MM:SSZ`` are read on arrays (digits, then the civil
    calendar: every field in its range, the day in its month, as ``fromisoformat``
    checks); any other text (an offset, fractions, spaces) by ``parse_time`` itself.
    """
    import numpy as np

    n = len(texts)
    stamps = np.zeros(n, dtype=np.int64)
    ok = np.zeros(n, dtype=bool)
    if n:
        rows = np.flatnonzero(np.fromiter(map(_length, texts), np.int64, n) == 20)
        chosen = texts if len(rows) == n else [texts[k] for k in rows.tolist()]
        try:
            blob = "".join(chosen).encode("ascii")
        except UnicodeEncodeError:  # one text is not ASCII: find which
            rows = rows[[texts[k].isascii() for k in rows.tolist()]]
            blob = "".join(texts[k] for k in rows.tolist()).encode("ascii")
        if len(rows):
            b = np.frombuffer(blob, np.uint8).reshape(-1, 20)
            template = np.frombuffer(_ISO_Z, np.uint8)
            digit = template == ord("0")
            digits = b.astype(np.int64) - ord("0")
            form = np.where(digit, (digits >= 0) & (digits <= 9), b == template)
            good = form.all(axis=1)

            def field(at: int, width: int) -> npt.NDArray[np.int64]:
                out = np.zeros(len(b), dtype=np.int64)
                for k in range(at, at + width):
                    out = out * 10 + digits[:, k]
                return out

            y, mo, d = field(0, 4), field(5, 2), field(8, 2)
            h, mi, sec = field(11, 2), field(14, 2), field(17, 2)
            leap = (y % 4 == 0) & ((y % 100 != 0) | (y % 400 == 0))
            month_days = np.array([0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31], np.int64)
            last = month_days[np.clip(mo, 0, 12)] + ((mo == 2) & leap)
            good &= (y >= 1) & (mo >= 1) & (mo <= 12) & (d >= 1) & (d <= last)
            good &= (h < 24) & (mi < 60) & (sec < 60)
            # Days since 1970-01-01 of the proleptic Gregorian date (H. Hinnant's days_from_civil).
            yy = y - (mo <= 2)
            era = np.floor_divide(yy, 400)
            yoe = yy - era * 400
            doy = (153 * (mo + np.where(mo > 2, -3, 9)) + 2) // 5 + d - 1
            days = era * 146097 + yoe * 365 + yoe // 4 - yoe // 100 + doy - 719468
            ms = ((days * 24 + h) * 60 + mi) * 60_000 + sec * 1000
            stamps[rows[good]] = ms[good]
            ok[rows[good]] = True
    for k in np.flatnonzero(~ok).tolist():
        try:
            stamps[k] = parse_time(str(texts[k]))
            ok[k] = True
        except ValueError:
            pass
    return stamps, ok


def _length(text: object) -> int:
    return len(text) if isinstance(text, str) else -1


def _arrow(path: Path, width: int, cols: dict[str, int], known: set[str]) -> ReadingColumns | None:
    """The fast path on pyarrow's CSV reader, when every row is plainly good; else None.

    pyarrow's parser is several times quicker than pandas' and hands the sensor and
    time columns over dictionary-encoded (no Python object per row). It is only
    trusted where it cannot disagree with the row-wise reader: no quotes (those
    files never get here), no null markers, every row as wide as the header, values
    it parses as float64 (correctly rounded, as Python's ``float``) and finite; any
    doubt is None and the pandas paths below decide, exactly as before.
    """
    import numpy as np

    try:
        import pyarrow as pa
        import pyarrow.csv as pcsv
    except ImportError:
        return None
    names = [f"c{k}" for k in range(width)]
    it, ss, vs = names[cols["time"]], names[cols["sensor"]], names[cols["value"]]
    try:
        table = pcsv.read_csv(
            path,
            read_options=pcsv.ReadOptions(skip_rows=1, column_names=names),
            parse_options=pcsv.ParseOptions(quote_char=False),
            convert_options=pcsv.ConvertOptions(
                column_types={it: pa.string(), ss: pa.string(), vs: pa.float64()},
                include_columns=[it, ss, vs],
                null_values=[],
                strings_can_be_null=False,
            ),
        )
    except (pa.ArrowException, OSError, ValueError):
        return None
    if table.num_rows == 0 or table.column(vs).null_count:
        return None
    values = table.column(vs).to_numpy()
    if values.dtype != np.float64 or not bool(np.isfinite(values).all()):
        return None
    sensor = table.column(ss).combine_chunks().dictionary_encode()
    ids = [str(text).strip() for text in sensor.dictionary.to_pylist()]
    if any(x not in known or not x for x in ids):
        return None
    stamp = table.column(it).combine_chunks().dictionary_encode()
    stamps, t_ok = _times(stamp.dictionary.to_pylist())
    if not bool(t_ok.all()):
        return None
    id_names, code_of = _names(ids)
    return ReadingColumns(
        id_names,
        code_of[sensor.indices.to_numpy()].astype(np.int32),
        stamps[stamp.indices.to_numpy()],
        values,
    )


def _names(ids: list[str]) -> tuple[tuple[str, ...], npt.NDArray[np.int64]]:
    """Distinct stripped ids in order of appearance, and each text's code among them."""
    import numpy as np

    index: dict[str, int] = {}
    codes = [index.setdefault(x, len(index)) for x in ids]
    return tuple(index), np.array(codes, dtype=np.int64)


def _exact(
    path: Path, source: str, width: int, cols: dict[str, int], known: set[str]
) -> ReadingColumns:
    """Every line a row: the plainly good ones on arrays, the others by the row-wise code."""
    import numpy as np
    import pandas as pd

    frame = _read(path, width, cols, object, blank=True)
    n = len(frame)
    t_raw = frame[cols["time"]].to_numpy(dtype=object)
    s_raw = frame[cols["sensor"]].to_numpy(dtype=object)
    v_raw = frame[cols["value"]].to_numpy(dtype=object)

    t_codes, t_texts = pd.factorize(t_raw)
    stamps, t_ok = _times(t_texts.tolist())
    s_codes, s_texts = pd.factorize(s_raw)
    ids = [str(text).strip() for text in s_texts]
    s_ok = np.array([bool(x) and x in known for x in ids], dtype=bool)
    values, v_ok = _python_floats(v_raw)

    good = (
        (t_ok[t_codes] if n else np.zeros(0, bool))
        & (s_ok[s_codes] if n else np.zeros(0, bool))
        & v_ok
        & np.isfinite(values)
    )
    # The others (bad rows and blank lines): their text, judged as the row-wise reader does.
    others = np.flatnonzero(~good)
    lines = _lines(path, set((others + 2).tolist()), n + 1)
    problems = Problems(source)
    extra_s: list[int] = []
    extra_t: list[int] = []
    extra_v: list[float] = []
    extra_name: list[str] = []
    times: dict[str, int] = {}
    for i in others.tolist():
        line = i + 2
        row = next(csv.reader([lines[line]]), [])
        if not row or not any(c.strip() for c in row):
            continue  # a blank line
        reading = csv_reading(row, cols, max(cols.values()) + 1, known, times)
        if isinstance(reading, str):
            problems.add(line, reading)
        else:  # good after all (e.g. a value written 1_000, which float() takes)
            extra_s.append(i)
            extra_t.append(reading.t)
            extra_v.append(reading.value)
            extra_name.append(reading.sensor)
    problems.raise_if_any()

    names, code_of = _names(ids + extra_name)
    code = np.full(n, -1, dtype=np.int64)
    t = np.zeros(n, dtype=np.int64)
    if n:
        code[good] = code_of[: len(ids)][s_codes[good]]
        t[good] = stamps[t_codes[good]]
    if extra_s:
        rows = np.array(extra_s, dtype=np.int64)
        code[rows] = code_of[len(ids) :]
        t[rows] = extra_t
        values[rows] = extra_v
    keep = code >= 0
    # Readings in file order; the names in order of appearance among them.
    used, first = np.unique(code[keep], return_index=True)
    order = used[np.argsort(first, kind="stable")]
    renumber = np.full(len(names), -1, dtype=np.int64)
    renumber[order] = np.arange(len(order))
    return ReadingColumns(
        tuple(names[k] for k in order.tolist()),
        renumber[code[keep]].astype(np.int32),
        t[keep],
        values[keep],
    )


def _python_floats(texts: Any) -> tuple[Any, Any]:
    """``float(text)`` of every cell (what the row-wise reader applies), and where it worked."""
    import numpy as np

    n = len(texts)
    try:
        # numpy converts each object with float(): the same semantics, in C.
        return texts.astype(np.float64), np.ones(n, dtype=bool)
    except (ValueError, TypeError):
        pass
    values = np.zeros(n, dtype=np.float64)
    ok = np.zeros(n, dtype=bool)
    for k, text in enumerate(texts.tolist()):
        try:
            values[k] = float(text)
            ok[k] = True
        except (ValueError, TypeError):
            pass
    return values, ok


def _lines(path: Path, wanted: set[int], expected: int) -> dict[int, str]:
    """The text of the wanted lines (1-based), checking that the file has ``expected`` lines
    as the csv module counts them (else the row-wise reader must read it)."""
    found: dict[int, str] = {}
    count = 0
    with open_text(path) as fh:
        for count, line in enumerate(fh, start=1):
            if count in wanted:
                found[count] = line
    if count != expected and not (count == 0 and expected == 1):
        raise _RowWise(f"{path}: {count} lines, pandas saw {expected}")
    if len(found) != len(wanted):
        raise _RowWise(f"{path}: lines {sorted(wanted - set(found))[:5]} not found")
    return found


__all__ = ["RecordingError", "read_csv_columns"]
