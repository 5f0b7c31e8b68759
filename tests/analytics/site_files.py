"""Site files written from dicts, for the checks only ``load_site`` makes.

A test of a configuration mistake loads a site file and reads the ConfigError's
lines, which name the file. Writing the file from a dict of the shape
``SiteConfig.model_validate`` takes keeps the site as short as the dicts the
other tests build.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from siltwatch.config import ConfigError, load_site


def toml_text(doc: Mapping[str, Any]) -> str:
    """``doc`` as TOML: each key a table, or an array of tables where its value is a list;
    the values in them inline (strings, numbers, booleans, lists and inline tables)."""
    lines: list[str] = []
    for name, value in doc.items():
        header = f"[[{name}]]" if isinstance(value, list) else f"[{name}]"
        for table in value if isinstance(value, list) else [value]:
            lines.append(header)
            lines += [f"{key} = {_inline(item)}" for key, item in table.items()]
    return "\n".join(lines) + "\n"


def _inline(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # a JSON string is a TOML basic string
    if isinstance(value, list):
        return "[" + ", ".join(_inline(item) for item in value) + "]"
    return "{ " + ", ".join(f"{key} = {_inline(item)}" for key, item in value.items()) + " }"


def rain_gauge_site(unit: str, *, gauge: bool = True, **site: Any) -> dict[str, Any]:
    """A site with one rain sensor ``rain`` (in ``unit``, every 5 minutes) and, unless
    ``gauge`` is False, the rain gauge ``g`` on it; ``site`` adds keys to its [site]."""
    return {
        "site": {"id": "rain-site", "timezone": "America/New_York", **site},
        "stations": [
            {
                "id": "st",
                "sensors": [{"id": "rain", "kind": "rain", "unit": unit, "interval_s": 300}],
            }
        ],
        "rain_gauges": [{"id": "g", "sensor": "rain"}] if gauge else [],
    }


def load_problems(tmp_path: Path, doc: Mapping[str, Any]) -> list[str]:
    """The lines of the ConfigError that loading ``doc`` as a site file raises, each
    checked to name the file, without that prefix."""
    path = tmp_path / "site.toml"
    path.write_text(toml_text(doc), encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_site(path)
    lines = caught.value.lines
    assert all(line.startswith(f"{path}: ") for line in lines), lines
    return [line.removeprefix(f"{path}: ") for line in lines]
