"""Whether a rule pack's law reaches this site at all: the scope warnings of ``config check``.

A pack is law for the sites it covers. Three scopes the seeds and permits
state, carried by the packs as ``scope.*`` keys and checked against the site
file (warnings, not errors: the operator may know better, e.g. a common plan
of development the file does not say):

- NCG01 (the NC construction general permit, under Lake Lure's pack): "one
  acre or more, or part of a larger common plan of development or sale" —
  ``scope.min_disturbed_acres`` against ``site.disturbed_acres`` (else the
  areas' acres) and ``site.common_plan``;
- Lake George §148-7 C: land disturbance of less than 5,000 square feet is
  exempt — ``scope.exempt_under_sq_ft``;
- Lake George §148-11 E: the drain-time table is a standard for major
  projects — ``scope.drain_limits_major_only`` against ``site.project``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from siltwatch.config import SiteConfig

SQ_FT_PER_ACRE = 43_560.0


def disturbed_acres(site: SiteConfig) -> float | None:
    """The site's disturbed acres: as the file says, else the sum of its areas."""
    if site.site.disturbed_acres is not None:
        return site.site.disturbed_acres
    return sum(a.acres for a in site.areas) if site.areas else None


def scope_warnings(site: SiteConfig) -> list[str]:
    """What the operator should know about which packs' rules apply here, and why."""
    rules = site.rules()
    acres = disturbed_acres(site)
    out: list[str] = []
    least = rules.get("scope.min_disturbed_acres")
    plan = site.site.common_plan
    if least is not None and acres is not None and acres < float(least.value) and not plan:
        out.append(
            f"{least.pack} covers sites disturbing {float(least.value):g} acre(s) or more, "
            f"or part of a larger common plan of development ({least.cite()}); this site "
            f"disturbs {acres:g} acres and site.common_plan is not set: its rules may not "
            "apply — set common_plan = true if the site is part of such a plan"
        )
    exempt = rules.get("scope.exempt_under_sq_ft")
    if exempt is not None and acres is not None and acres * SQ_FT_PER_ACRE < float(exempt.value):
        out.append(
            f"{exempt.cite()} exempts land disturbance of less than {float(exempt.value):,.0f} "
            f"square feet; this site disturbs {acres * SQ_FT_PER_ACRE:,.0f} square feet"
        )
    major = rules.get("scope.drain_limits_major_only")
    if major is not None and major.value is True and site.infiltration_practices:
        if site.site.project is None:
            out.append(
                f"{major.cite()}: the drain-time limits are the standard for major projects; "
                'say which this site is (site.project = "major" or "minor")'
            )
        elif site.site.project == "minor":
            out.append(
                f"{major.cite()}: the drain-time limits are the standard for major projects and "
                "this is a minor project: its drain-time alerts are guidance, not this rule"
            )
    return out
