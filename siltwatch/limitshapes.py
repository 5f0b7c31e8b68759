"""The shapes a turbidity limit table may take (docs/replay-contract.md, "Site configuration").

A site's ``limit = {...}`` and a pack's ``turbidity.limit.<class>`` are both checked
here: the site model (siltwatch/sitemodel.py) refuses a bad shape as the file loads,
the rule packs (siltwatch/rulepacks.py) as a pack loads, and the rule maths
(siltwatch/rulemath.py) read the keys. It stands below all three.
"""

from __future__ import annotations

import math
from typing import Any

from siltwatch.configerrors import not_finite

LIMIT_KEYS = frozenset(
    {
        "max_ntu",
        "over_background_ntu",
        "over_background_pct",
        "pct_above_background_ntu",
        "no_increase_over_background",
    }
)


def check_limit_shape(value: dict[str, Any]) -> str | None:
    """Why a turbidity limit table is not one of the contract's shapes, or None."""
    unknown = set(value) - LIMIT_KEYS
    if unknown:
        return f"unknown turbidity limit key(s) {sorted(unknown)}; expected some of {sorted(LIMIT_KEYS)}"
    numeric = [k for k in value if k != "no_increase_over_background"]
    if not numeric:
        return "a turbidity limit needs max_ntu, over_background_ntu or over_background_pct"
    for k in numeric:
        v = value[k]
        if isinstance(v, bool) or not isinstance(v, int | float):
            return f"{k} must be a number >= 0, got {v!r}"
        if not math.isfinite(v):
            return f"{k}: {not_finite(v)}"
        if v < 0:
            return f"{k} must be a number >= 0, got {v!r}"
    if "pct_above_background_ntu" in value and not (
        "over_background_ntu" in value and "over_background_pct" in value
    ):
        return (
            "pct_above_background_ntu (the piecewise form) needs both over_background_ntu "
            "and over_background_pct"
        )
    return None
