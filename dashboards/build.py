"""One Grafana dashboard per site, built as typed code with grafana-foundation-sdk.

Why code: the panels follow the site file (one turbidity panel per pair, one
level panel per practice...), so a site that adds a trap gets its panel by
rebuilding, and the tests check every query against a real InfluxDB instead of
trusting a hand-edited JSON export. What each detection's row shows, and the
reference lines its rules draw, is in its description (siltwatch/detections/);
this module renders them.

The dashboard is deterministic: the same site file gives byte-identical JSON
(stable uid from the site id, panel ids in build order), so provisioning and
``siltwatch dashboards --push`` overwrite in place and a diff shows real changes.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from grafana_foundation_sdk.builders import common as common_b
from grafana_foundation_sdk.builders import dashboard as dash_b
from grafana_foundation_sdk.builders import table, timeseries
from grafana_foundation_sdk.cog import variants as cogvariants
from grafana_foundation_sdk.cog.builder import Builder
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.cog.runtime import UnknownDataquery
from grafana_foundation_sdk.models import common as common_m
from grafana_foundation_sdk.models import dashboard as dash_m

from dashboards import queries as q
from siltwatch.config import SiteConfig
from siltwatch.detections import dashboard_rows
from siltwatch.panels import Panel, Series
from siltwatch.rulepacks import site_rules

DATASOURCE_UID = "siltwatch-influxdb"
DATASOURCE_TYPE = "influxdb"
DATASOURCE = dash_m.DataSourceRef(type_val=DATASOURCE_TYPE, uid=DATASOURCE_UID)
TAGS = ["siltwatch", "stormwater"]


def dashboard_uid(site_id: str) -> str:
    """A uid Grafana accepts (at most 40 characters) that never changes for a site."""
    uid = f"siltwatch-{site_id}"
    if len(uid) <= 40:
        return uid
    return "siltwatch-" + hashlib.sha256(site_id.encode()).hexdigest()[:24]


class InfluxQL(Builder[cogvariants.Dataquery]):
    """A raw InfluxQL target; the SDK has no InfluxDB query builder."""

    def __init__(self, ref_id: str, query: str, *, result_format: str = "time_series") -> None:
        self.data: dict[str, Any] = {
            "refId": ref_id,
            "datasource": {"type": DATASOURCE_TYPE, "uid": DATASOURCE_UID},
            "query": query,
            "rawQuery": True,
            "resultFormat": result_format,
        }

    def build(self) -> cogvariants.Dataquery:
        return UnknownDataquery(dict(self.data))


class _InfluxAnnotationQuery(dash_m.AnnotationQuery):
    """An annotation query with the InfluxDB data source's own fields.

    The SDK's AnnotationQuery has no place for a query text; Grafana's InfluxDB
    plugin reads ``target.query`` (and migrates the older top-level ``query``,
    ``textColumn``, ``tagsColumn``), so both are written.
    """

    def __init__(self, name: str, query: str, text: str, tags: str, color: str) -> None:
        super().__init__(name=name, datasource=DATASOURCE, enable=True, icon_color=color)
        self.extra: dict[str, object] = {
            "query": query,
            "rawQuery": True,
            "textColumn": text,
            "tagsColumn": tags,
            "target": {
                "refId": "Anno",
                "query": query,
                "rawQuery": True,
                "fromAnnotations": True,
                "textColumn": text,
                "tagsColumn": tags,
            },
        }

    def to_json(self) -> dict[str, object]:
        payload = super().to_json()
        payload.update(self.extra)
        return payload


class InfluxAnnotation(Builder[dash_m.AnnotationQuery]):
    def __init__(self, name: str, query: str, *, text: str, tags: str, color: str) -> None:
        self.args = (name, query, text, tags, color)

    def build(self) -> dash_m.AnnotationQuery:
        return _InfluxAnnotationQuery(*self.args)


def _thresholds(steps: list[tuple[float | None, str]]) -> dash_b.ThresholdsConfig:
    return (
        dash_b.ThresholdsConfig()
        .mode(dash_m.ThresholdsMode.ABSOLUTE)
        .steps([dash_m.Threshold(value=v, color=c) for v, c in steps])
    )


def _line_style() -> common_b.GraphThresholdsStyleConfig:
    return common_b.GraphThresholdsStyleConfig().mode(common_m.GraphThresholdsStyleMode.DASHED)


def _ts(title: str, unit: str, description: str) -> timeseries.Panel:
    return (
        timeseries.Panel()
        .title(title)
        .description(description)
        .datasource(DATASOURCE)
        .unit(unit)
        .height(8)
        .span(12)
    )


def _unit(sensor_unit: str) -> str:
    """Grafana's unit id for a sensor unit (it has lengths; NTU is shown as a suffix)."""
    return {
        "m": "lengthm",
        "ft": "lengthft",
        "mm": "lengthmm",
        "in": "lengthin",
        "%": "percent",
    }.get(sensor_unit, f"suffix: {sensor_unit}")


_DASHED_RED = [
    dash_m.DynamicConfigValue(id_val="custom.lineStyle", value={"fill": "dash", "dash": [10, 10]}),
    dash_m.DynamicConfigValue(id_val="color", value={"mode": "fixed", "fixedColor": "red"}),
]
_LINE_ON_RIGHT = [
    dash_m.DynamicConfigValue(id_val="custom.drawStyle", value="line"),
    dash_m.DynamicConfigValue(id_val="custom.fillOpacity", value=0),
    dash_m.DynamicConfigValue(id_val="custom.axisPlacement", value="right"),
]


def _query(series: Series) -> str:
    if series.rolling_h is not None:
        return q.rain_rolling_total(series.sensor, series.alias, series.rolling_h)
    if series.expression is not None:
        return q.computed(series.sensor, series.expression, series.alias)
    return q.series(series.sensor, series.aggregate, series.alias, fill=series.fill)


def render_panel(spec: Panel) -> timeseries.Panel:
    """A description's panel (siltwatch/detections/base.py) as Grafana's: one InfluxQL
    target per series (refs A, B, ...), reference series dashed red, thresholds dashed."""
    panel = _ts(spec.title, _unit(spec.unit), spec.description)
    if spec.interval_s is not None:
        panel = panel.interval(f"{round(spec.interval_s)}s")
    for i, series in enumerate(spec.series):
        panel = panel.with_target(InfluxQL(chr(ord("A") + i), _query(series)))
        if series.expression is not None and series.reference:
            panel = panel.override_by_name(series.alias, _DASHED_RED)
        elif series.right_axis:
            panel = panel.override_by_name(series.alias, _LINE_ON_RIGHT)
    if spec.bars:
        panel = panel.draw_style(common_m.GraphDrawStyle.BARS).fill_opacity(60)
    if spec.thresholds:
        panel = panel.thresholds(_thresholds(list(spec.thresholds))).thresholds_style(_line_style())
    return panel


def _date_column(name: str) -> list[dash_m.DynamicConfigValue]:
    return [dash_m.DynamicConfigValue(id_val="unit", value="dateTimeAsIso")]


# The console's severity colours (console/static/console.css badges), as cell backgrounds.
SEVERITY_COLOURS = {"critical": "red", "warning": "orange", "info": "blue"}
_SEVERITY_CELL = [
    dash_m.DynamicConfigValue(id_val="custom.cellOptions", value={"type": "color-background"}),
    dash_m.DynamicConfigValue(
        id_val="mappings",
        value=[
            {
                "type": "value",
                "options": {
                    name: {"color": colour, "index": i, "text": name.upper()}
                    for i, (name, colour) in enumerate(SEVERITY_COLOURS.items())
                },
            }
        ],
    ),
]


def _open_items_table(
    title: str,
    description: str,
    query: str,
    override: tuple[str, list[dash_m.DynamicConfigValue]],
    sort_by: tuple[str, bool],
) -> table.Panel:
    """A full-width table of what is still open (alerts, duties): ``override`` styles one
    column, ``sort_by`` is (column, descending)."""
    column, descending = sort_by
    return (
        table.Panel()
        .title(title)
        .description(description)
        .datasource(DATASOURCE)
        .with_target(InfluxQL("A", query, result_format="table"))
        .override_by_name(*override)
        .sort_by([common_b.TableSortByFieldState().display_name(column).desc(descending)])
        .height(8)
        .span(12)
    )


def alerts_table() -> table.Panel:
    return _open_items_table(
        "Open alerts",
        "Alert episodes not yet resolved, whenever they opened; Time is the opening. "
        "Acknowledgements are kept in the console's book, not in this InfluxDB mirror: "
        "see the console's alert page for who acknowledged.",
        q.open_alerts(),
        ("severity", _SEVERITY_CELL),
        ("Time", True),
    )


def duties_table() -> table.Panel:
    return _open_items_table(
        "Duties and deadlines",
        "Inspections not yet recorded, earliest deadline first; state overdue means "
        "the deadline passed (the officer has been told).",
        q.open_duties(),
        ("due_ms", _date_column("due_ms")),
        ("due_ms", False),
    )


def build_dashboard_model(site: SiteConfig) -> dash_m.Dashboard:
    """The site's dashboard as the SDK's typed model."""
    info = site.site
    d = (
        dash_b.Dashboard(f"siltwatch — {info.name or info.id}")
        .uid(dashboard_uid(info.id))
        .description(f"Stormwater controls of site {info.id}, from siltwatch's InfluxDB mirror.")
        .tags(TAGS)
        .timezone(info.timezone)
        .time("now-2d", "now")
        .refresh("1m")
        .with_variable(dash_b.ConstantVariable("site").value(info.id))
        .annotation(
            dash_b.AnnotationQuery()
            .name("Annotations & Alerts")
            .datasource(dash_m.DataSourceRef(type_val="grafana", uid="-- Grafana --"))
            .enable(True)
            .hide(True)
            .icon_color("rgba(0, 211, 255, 1)")
            .type("dashboard")
            .built_in(1)
        )
        .annotation(
            InfluxAnnotation(
                "siltwatch alerts",
                q.alert_annotations(),
                text="message",
                tags="kind,subject,severity",
                color="red",
            )
        )
    )
    d = d.with_row(dash_b.Row("Compliance")).with_panel(alerts_table()).with_panel(duties_table())
    for title, row in dashboard_rows(site, site_rules(site)):
        d = d.with_row(dash_b.Row(title))
        for spec in row:
            d = d.with_panel(render_panel(spec))
    model = d.build()
    for number, panel in enumerate(model.panels or [], start=1):
        panel.id_val = number  # stable ids: Grafana links and diffs rely on them
    fill_rows(model.panels or [])
    return model


GRID_W = 24  # Grafana's grid columns
PANEL_H = 8


def fill_rows(panels: list[Any]) -> None:
    """Lay each row's panels across the whole width: one panel fills the row, two take
    half each, three a third; four or more go two to a line, an odd last one full width.
    (The SDK's layout puts each panel at its span from the left: a row of one half-width
    chart with nothing beside it.)"""
    y = 0
    group: list[Any] = []

    def flush() -> None:
        nonlocal y
        if not group:
            return
        per_line = len(group) if len(group) <= 3 else 2
        for start in range(0, len(group), per_line):
            line = group[start : start + per_line]
            width = GRID_W // len(line)
            for i, panel in enumerate(line):
                panel.grid_pos = dash_m.GridPos(h=PANEL_H, w=width, x=i * width, y=y)
            y += PANEL_H
        group.clear()

    for panel in panels:
        if isinstance(panel, dash_m.RowPanel):
            flush()
            panel.grid_pos = dash_m.GridPos(h=1, w=GRID_W, x=0, y=y)
            y += 1
        else:
            group.append(panel)
    flush()


def build_dashboard(site: SiteConfig) -> dict[str, Any]:
    """The site's dashboard as Grafana's JSON (a plain dict)."""
    data: dict[str, Any] = json.loads(json.dumps(build_dashboard_model(site), cls=JSONEncoder))
    return data


def dashboard_json(site: SiteConfig) -> str:
    """The JSON text written to files: sorted keys, so builds are byte-identical."""
    return json.dumps(build_dashboard(site), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
