"""Turn a bad configuration file into one line per mistake, for people.

A field technician or site operator fixing a TOML file needs the file, the key
path and what was expected — all the mistakes at once, not a traceback and not
one at a time. Every TOML-backed model in siltwatch (site config, edge agent
config, rule packs) is loaded through :func:`load_toml_model` so they all speak
the same way.
"""

from __future__ import annotations

import math
import tomllib
import unicodedata
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

from pydantic import BaseModel, ValidationError

M = TypeVar("M", bound=BaseModel)


class ConfigError(Exception):
    """A configuration file that cannot be used; ``lines`` holds one line per mistake."""

    def __init__(self, lines: Sequence[str]) -> None:
        super().__init__("\n".join(lines))
        self.lines: list[str] = list(lines)


def key_path(loc: Iterable[int | str]) -> str:
    """``("stations", 0, "sensors", 1, "unit")`` -> ``stations[0].sensors[1].unit``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out or "(top level)"


NOT_FINITE = "expected a finite number"


def not_finite(value: float) -> str:
    """What to tell a person who wrote ``nan`` or ``inf`` where a number belongs.

    TOML allows ``nan`` and ``inf``, and every comparison with NaN is false: a
    limit of ``nan`` NTU is never exceeded, a drain time of ``inf`` never runs
    out. Such a value does not fail loudly later, it switches the law off, so
    it is refused here with the same words wherever it appears.
    """
    return (
        f"{NOT_FINITE}, got {value!r} (nan and inf are valid TOML but would "
        "silently switch off the check that uses this value)"
    )


def non_finite_problems(data: Any, loc: tuple[int | str, ...] = ()) -> list[tuple[str, str]]:
    """Every ``nan``/``inf`` in parsed TOML as (key path, what was expected).

    A scan of the raw data rather than constraints on each model field, so no
    field, table value or rule override can be forgotten.
    """
    if isinstance(data, float) and not math.isfinite(data):
        return [(key_path(loc), not_finite(data))]
    out: list[tuple[str, str]] = []
    if isinstance(data, dict):
        for key, value in data.items():
            out += non_finite_problems(value, (*loc, str(key)))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            out += non_finite_problems(value, (*loc, i))
    return out


def control_character(text: str) -> str | None:
    """The first control or line-break character in ``text`` (as ``repr``), or None.

    A newline in a name or address that ends up in a mail header or an SMS can
    forge headers or split a message; no configured text needs one.
    """
    for ch in text:
        if unicodedata.category(ch) in ("Cc", "Zl", "Zp"):
            return repr(ch)
    return None


class Problem(NamedTuple):
    """One mistake found by pydantic: where, what was expected, and pydantic's error type."""

    path: str
    what: str
    kind: str


def _expected(err: dict[str, Any]) -> str:
    kind = err.get("type", "")
    msg = str(err.get("msg", ""))
    if kind == "finite_number" and isinstance(err.get("input"), float):
        return not_finite(err["input"])
    if kind == "missing":
        return "is required but missing"
    if kind == "extra_forbidden":
        return "is not a known key (check its spelling)"
    if kind == "literal_error":
        return f"expected {msg.removeprefix('Input should be ')}, got {err.get('input')!r}"
    if msg.startswith("Value error, "):
        return msg.removeprefix("Value error, ")
    return f"{msg[:1].lower()}{msg[1:]}, got {err.get('input')!r}" if "input" in err else msg


def validation_problems(exc: ValidationError, *, root: Sequence[str] = ()) -> list[Problem]:
    """One Problem per pydantic error.

    pydantic puts the tagged-union member name or a validator's wrapper name in
    ``loc`` for some errors; we drop the names that are not keys of the file.
    """
    out = []
    for err in exc.errors():
        loc = [p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-"))]
        out.append(Problem(key_path([*root, *loc]), _expected(dict(err)), err["type"]))
    return out


def validation_lines(source: str, exc: ValidationError, *, root: Sequence[str] = ()) -> list[str]:
    """One line per pydantic error: ``FILE: key.path: what was expected``."""
    return [f"{source}: {p.path}: {p.what}" for p in validation_problems(exc, root=root)]


def _within(path: str, top: str) -> bool:
    """``path`` is ``top`` or a key below it."""
    return path == top or path.startswith((f"{top}.", f"{top}["))


def validate_finite(data: dict[str, Any], model: type[M]) -> tuple[M | None, list[tuple[str, str]]]:
    """Validate ``data`` into ``model``; every mistake as (key path, what was expected).

    A ``nan`` or ``inf`` is reported once, at its key, in the words of
    :func:`not_finite`: pydantic's echoes of the same value (a union member
    that also refused it, a text field that got a number) are dropped. A
    ``nan`` under a key the model does not know is reported as the unknown
    key only: the spelling is the mistake to fix first.
    """
    finite = non_finite_problems(data)
    schema: list[Problem] = []
    result: M | None = None
    try:
        result = model.model_validate(data)
    except ValidationError as exc:
        schema = validation_problems(exc)
    unknown = [p.path for p in schema if p.kind == "extra_forbidden"]
    finite = [f for f in finite if not any(_within(f[0], top) for top in unknown)]
    echoes = [f[0] for f in finite]
    kept = [
        (p.path, p.what)
        for p in schema
        if p.kind == "extra_forbidden" or not any(_within(p.path, top) for top in echoes)
    ]
    return result, finite + kept


def read_toml(path: Path) -> dict[str, Any]:
    """Parse TOML, turning I/O and syntax errors into a ConfigError that names the file."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError([f"{path}: file not found"]) from None
    except OSError as exc:
        raise ConfigError([f"{path}: cannot be read ({exc.strerror})"]) from None
    except UnicodeDecodeError as exc:
        raise ConfigError(
            [f"{path}: is not UTF-8 text ({exc.reason} at byte {exc.start})"]
        ) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError([f"{path}: is not valid TOML: {exc}"]) from None


def load_toml_model(path: Path, model: type[M]) -> M:
    """Load ``path`` into ``model``; every mistake becomes one ConfigError line."""
    result, problems = validate_finite(read_toml(path), model)
    if problems or result is None:
        raise ConfigError([f"{path}: {where}: {what}" for where, what in problems])
    return result
