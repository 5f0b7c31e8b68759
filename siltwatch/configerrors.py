"""Turn a bad configuration file into one line per mistake, for people.

A field technician or site operator fixing a TOML file needs the file, the key
path and what was expected — all the mistakes at once, not a traceback and not
one at a time. Every TOML-backed model in siltwatch (site config, edge agent
config, rule packs) is loaded through :func:`load_toml_model` so they all speak
the same way.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, TypeVar

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


def _expected(err: dict[str, Any]) -> str:
    kind = err.get("type", "")
    msg = str(err.get("msg", ""))
    if kind == "missing":
        return "is required but missing"
    if kind == "extra_forbidden":
        return "is not a known key (check its spelling)"
    if kind == "literal_error":
        return f"expected {msg.removeprefix('Input should be ')}, got {err.get('input')!r}"
    if msg.startswith("Value error, "):
        return msg.removeprefix("Value error, ")
    return f"{msg[:1].lower()}{msg[1:]}, got {err.get('input')!r}" if "input" in err else msg


def validation_lines(source: str, exc: ValidationError, *, root: Sequence[str] = ()) -> list[str]:
    """One line per pydantic error: ``FILE: key.path: what was expected``.

    pydantic puts the tagged-union member name or a validator's wrapper name in
    ``loc`` for some errors; we drop the names that are not keys of the file.
    """
    lines = []
    for err in exc.errors():
        loc = [p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-"))]
        path = key_path([*root, *loc])
        lines.append(f"{source}: {path}: {_expected(dict(err))}")
    return lines


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
    data = read_toml(path)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(validation_lines(str(path), exc)) from None
