"""Turbidity contrast: the water below the site against the background above it.

Lake George §148-9 B (and the packs' other turbidity standards): a discharge
may not raise the receiving water's turbidity more than the limit over its
background. The detector (analytics/turbidity.py) compares the downstream
probe's rolling median with the limit computed from the upstream median;
this description says what the rest of siltwatch needs: who hears it, how
much it is by, what a site file must give it, and the lines its panel draws
(from siltwatch/rulemath.py, the detector's own limit maths, so the dashboard
cannot drift from the alert).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import tzinfo
from typing import TYPE_CHECKING

from siltwatch import rulemath
from siltwatch.detections.base import (
    ConfigView,
    Dashboard,
    Description,
    Evidence,
    Section,
    regulatory,
    short_number,
)
from siltwatch.detections.sensor_health import DATA_QUALITY
from siltwatch.panels import Panel, Series
from siltwatch.rulekeys import NON_NEGATIVE, UNIT_INTERVAL, RuleKey, number

if TYPE_CHECKING:
    from siltwatch.rules import Rules
    from siltwatch.sitemodel import SiteConfig, TurbidityPair


class TurbidityEvidence(Evidence):
    downstream_level: float
    limit: float
    unit: str
    peak_downstream_level: float | None = None
    peak_limit: float | None = None


def _amount(ev: TurbidityEvidence, _zone: tzinfo) -> str:
    down, limit = short_number(ev.downstream_level), short_number(ev.limit)
    text = f"{down} {ev.unit} vs limit {limit}"
    peak, peak_limit = short_number(ev.peak_downstream_level), short_number(ev.peak_limit)
    if peak and peak_limit and peak != down:
        text += f" (peak {peak} vs {peak_limit})"
    return text


TURBIDITY_CONTRAST = regulatory(
    "turbidity_contrast", "turbidity contrast", TurbidityEvidence, _amount
)


def _check(view: ConfigView) -> None:
    """The probes differ, the water exists, and a numeric limit applies (a pack with
    only a narrative standard needs the site's proxy)."""
    waters = {w.get("id"): w for w in view.items("receiving_waters")}
    for i, pair in enumerate(view.items("turbidity_pairs")):
        here = f"turbidity_pairs[{i}]"
        if pair.get("upstream") is not None and pair.get("upstream") == pair.get("downstream"):
            view.problem(f"{here}.downstream", "must differ from upstream")
        water_id = pair.get("receiving_water")
        water = waters.get(water_id)
        if water is None:
            known = ", ".join(str(k) for k in waters) or "none"
            view.problem(
                f"{here}.receiving_water", f"no receiving water {water_id!r} (known: {known})"
            )
        elif (
            "limit" not in pair
            and view.rules is not None
            and rulemath.class_limit(view.rules, str(water.get("class"))) is None
        ):
            standard = view.rules.get("turbidity.standard")
            why = (
                f"the rule packs set only a narrative standard ({standard.citation})"
                if standard
                else "no rule pack sets a turbidity limit"
            )
            view.problem(
                f"{here}.limit",
                f"is required: {why}; set a numeric proxy such as limit = {{ over_background_ntu = 25 }}",
            )


# --- the panel's reference lines ----------------------------------------------------------


def limit_shape(
    site: SiteConfig, rules: Rules, pair: TurbidityPair
) -> Mapping[str, float | bool] | None:
    """The pair's limit table, as the detector picks it (siltwatch.rulemath.choose_limit)."""
    water_class = site.water(pair.receiving_water).water_class
    table, _cite = rulemath.choose_limit(pair.limit, water_class, rules, pair.id)
    return table


@dataclass(frozen=True)
class LimitLines:
    """How a pair's limit is drawn: a fixed cap as a threshold line, a background-
    relative limit as series computed from the upstream median; ``note`` says what
    the lines leave out."""

    cap: float | None = None
    computed: list[tuple[str, str]] = field(default_factory=list)  # (alias, expression)
    note: str = ""


def limit_lines(shape: Mapping[str, float | bool] | None) -> LimitLines:
    if shape is None:
        return LimitLines(note="no numeric turbidity limit applies to this pair")
    rule = rulemath.LimitRule.from_shape(shape)
    cap, delta, pct, knee = rule.cap, rule.delta, rule.pct, rule.knee
    notes = []
    lines: list[tuple[str, str]] = []
    if delta is not None:
        lines.append((f"limit: upstream + {delta:g}", "{x} + " + f"{delta:g}"))
    if pct is not None:
        lines.append((f"limit: upstream + {pct:g} %", "{x} * " + f"{1 + pct / 100:g}"))
    if knee is not None:
        notes.append(
            f"the + {delta:g} line applies while the background is at most {knee:g}, "
            f"the + {pct:g} % line above it"
        )
    elif len(lines) > 1:
        notes.append("the lower limit line governs")
    if cap is not None and rule.no_increase:
        notes.append(f"above a background of {cap:g} the limit is no increase over background")
    return LimitLines(cap=cap, computed=lines, note="; ".join(notes))


def _panel(site: SiteConfig, rules: Rules, pair: TurbidityPair) -> Panel:
    lines = limit_lines(limit_shape(site, rules, pair))
    window_s = pair.window_s or rules.number("turbidity.window_s")
    about = (
        f"Medians of {pair.upstream} (upstream background) and {pair.downstream} "
        f"(below the discharge) per interval of at least the detector's window "
        f"({window_s / 60:g} min). The limit is drawn from the upstream median"
        + (f"; {lines.note}" if lines.note else "")
        + (
            f". Plume travel time {pair.travel_time_s:g} s is not shifted out."
            if pair.travel_time_s
            else "."
        )
    )
    return Panel(
        title=f"Turbidity {pair.id}: upstream vs downstream",
        unit=site.sensor(pair.downstream).unit,
        description=about,
        series=(
            Series(pair.upstream, "upstream", "median"),
            Series(pair.downstream, "downstream", "median"),
            *(Series(pair.upstream, alias, expression=expr) for alias, expr in lines.computed),
        ),
        thresholds=((None, "green"), (lines.cap, "red")) if lines.cap is not None else (),
        interval_s=window_s,
    )


DESCRIPTION = Description(
    key="turbidity",
    order=10,
    alerts=(TURBIDITY_CONTRAST, DATA_QUALITY),
    rule_keys=(
        RuleKey("turbidity.standard", (str,)),
        number("turbidity.window_s"),
        number("turbidity.sustain_s", NON_NEGATIVE),
        number("turbidity.clear_fraction", UNIT_INTERVAL),
        *(
            RuleKey(f"turbidity.limit.{water}", (dict,))
            for water in ("stream", "trout_stream", "lake", "trout_lake", "any")
        ),
        number("turbidity.notify_ntu", NON_NEGATIVE),
    ),
    section=Section(
        "turbidity_pairs",
        "turbidity pair",
        sensor_refs=(("upstream", "turbidity"), ("downstream", "turbidity")),
        officer_label="turbidity",
    ),
    check_config=_check,
    dashboard=Dashboard("Turbidity", 10, _panel),
)
