"""Grafana's InfluxQL macros, filled in as Grafana fills them before it queries.

Grafana (public/app/plugins/datasource/influxdb) replaces ``$timeFilter`` with
``time >= {from}ms and time <= {to}ms``, ``$__interval`` with the panel's
interval (at least its ``interval`` setting), the global ``${__from}`` /
``${__to}`` with the range ends in epoch ms, and ``$site`` with the dashboard's
constant variable. The tests run the result against a real InfluxDB 1.x.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


def render(query: str, *, from_ms: int, to_ms: int, interval: str, site: str) -> str:
    out = query.replace("$timeFilter", f"time >= {from_ms}ms and time <= {to_ms}ms")
    out = out.replace("${__from}", str(from_ms)).replace("${__to}", str(to_ms))
    out = out.replace("$__interval", interval).replace("$site", site)
    assert "$" not in out, f"an unsubstituted macro is left in {out!r}"
    return out


def panels(board: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every panel that is not a row (rows here are never collapsed, so panels are flat)."""
    for panel in board["panels"]:
        if panel["type"] != "row":
            yield panel


def panel(board: dict[str, Any], title_starts: str) -> dict[str, Any]:
    [found] = [p for p in panels(board) if p["title"].startswith(title_starts)]
    return found


def rows(result: dict[str, Any]) -> list[dict[str, Any]]:
    """The rows of a one-statement InfluxQL answer as dicts (an error fails the test)."""
    [statement] = result["results"]
    assert "error" not in statement, statement
    out: list[dict[str, Any]] = []
    for series in statement.get("series", []):
        cols = series["columns"]
        out += [dict(zip(cols, values, strict=True)) for values in series["values"]]
    return out
