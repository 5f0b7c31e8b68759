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
  projects — ``scope.drain_limits_major_only`` against ``site.project`` (a site
  that does not say its class is warned; a minor one does not get the table at
  all: its keys are in ``scope.major_projects_only``, below).

Two scopes withhold rules outright, because a duty the law does not impose is
a false alert to the officer: ``scope.major_projects_only`` (Lake George
§148-11 I(3): "additional requirements shall apply to major projects") lists
the rule keys a ``project = "minor"`` site does not get, and
``scope.park_only`` (§148-6 D, §148-11 A: §148-11 applies within the Lake
George Park) those a site with ``in_lake_george_park = false`` does not get.
A site that does not say its class is treated as major (§148-11 E(2): a
project not exempt nor minor is major) and warned; one that does not say
whether it is in the Park is taken to be inside (the town lies in the Park).
:func:`applicable_rules` is what the engine runs on; :func:`applicability`
is what ``config check`` says about each pack.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from siltwatch.rulepacks import site_rules

if TYPE_CHECKING:
    from siltwatch.config import SiteConfig
    from siltwatch.rulepacks import Rules

SQ_FT_PER_ACRE = 43_560.0


def disturbed_acres(site: SiteConfig) -> float | None:
    """The site's disturbed acres: as the file says, else the sum of its areas."""
    if site.site.disturbed_acres is not None:
        return site.site.disturbed_acres
    return sum(a.acres for a in site.areas) if site.areas else None


def scope_warnings(site: SiteConfig) -> list[str]:
    """What the operator should know about which packs' rules apply here, and why."""
    rules = site_rules(site)
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
    classes = rules.get("scope.major_projects_only")
    if classes is not None and site.site.project is None and in_park(site, rules):
        out.append(
            f"{classes.cite()}: site.project is not set, so this site is treated as a major "
            "project (§148-11 E: a project neither exempt nor minor is major) and gets the "
            'major-project duties; say project = "major" or "minor"'
        )
    major = rules.get("scope.drain_limits_major_only")
    if (
        major is not None
        and major.value is True
        and site.infiltration_practices
        and site.site.project is None
        and classes is None
    ):
        out.append(
            f"{major.cite()}: the drain-time limits are the standard for major projects; "
            'say which this site is (site.project = "major" or "minor")'
        )
    return out


def in_park(site: SiteConfig, rules: Rules) -> bool:
    """Whether the site is inside the Lake George Park: as its file says, else inside
    when one of its packs scopes rules to the Park (the town lies in it)."""
    if site.site.in_lake_george_park is not None:
        return site.site.in_lake_george_park
    return rules.get("scope.park_only") is not None


def withheld(site: SiteConfig, rules: Rules | None = None) -> dict[str, str]:
    """The rule keys that do not apply to this site, each with why (the citation)."""
    rules = rules if rules is not None else site_rules(site)
    out: dict[str, str] = {}
    park = rules.get("scope.park_only")
    if park is not None and not in_park(site, rules):
        for key in park.value:
            out[str(key)] = f"outside the Lake George Park ({park.cite()})"
    major = rules.get("scope.major_projects_only")
    if major is not None and site.site.project == "minor":
        for key in major.value:
            out.setdefault(str(key), f"a minor project ({major.cite()})")
    return {k: v for k, v in out.items() if rules.get(k) is not None}


def applicable_rules(site: SiteConfig) -> Rules:
    """The site's rules less those that do not apply to it: what the engine runs on, so
    a rule that does not apply creates no duty and raises no alert."""
    rules = site_rules(site)
    return rules.without(frozenset(withheld(site, rules)))


def applicability(site: SiteConfig) -> list[str]:
    """Why each of the site's rule packs applies, and which of its rules do not, in words
    (``config check``)."""
    rules = site_rules(site)
    held = withheld(site, rules)
    acres = disturbed_acres(site)
    out: list[str] = []
    for pack in rules.packs:
        facts: list[str] = []
        park = rules.get("scope.park_only")
        if park is not None and park.pack == pack:
            said = site.site.in_lake_george_park is not None
            where = "inside" if in_park(site, rules) else "outside"
            how = "site.in_lake_george_park" if said else "site.in_lake_george_park unset"
            facts.append(f"{where} the Lake George Park ({how}; {park.cite()})")
        major = rules.get("scope.major_projects_only")
        if major is not None and major.pack == pack:
            project = site.site.project or "not set, treated as major"
            facts.append(f"project {project} ({major.cite()})")
        exempt = rules.get("scope.exempt_under_sq_ft")
        if exempt is not None and exempt.pack == pack and acres is not None:
            sq_ft = acres * SQ_FT_PER_ACRE
            verdict = "under" if sq_ft < float(exempt.value) else "not under"
            facts.append(
                f"{sq_ft:,.0f} sq ft disturbed, {verdict} the {float(exempt.value):,.0f} sq ft "
                f"exemption ({exempt.cite()})"
            )
        least = rules.get("scope.min_disturbed_acres")
        if least is not None and least.pack == pack and acres is not None:
            verdict = "at or over" if acres >= float(least.value) else "under"
            plan = "; part of a common plan" if site.site.common_plan else ""
            facts.append(
                f"{acres:g} acres disturbed, {verdict} {float(least.value):g} ({least.cite()}){plan}"
            )
        mine = sorted(k for k in held if (v := rules.get(k)) is not None and v.pack == pack)
        if mine:
            facts.append("not applied here: " + "; ".join(f"{k} ({held[k]})" for k in mine))
        if pack in site.site.rule_packs:
            why = "named in site.rule_packs"
        elif pack == "siltwatch-defaults":
            why = "siltwatch's defaults, under every site"
        else:
            why = "extended by a pack the site names"
        out.append(f"{pack}: applies ({why})" + "".join(f"; {f}" for f in facts))
    return out
