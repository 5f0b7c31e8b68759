"""The resolved rules of one site: each value the law sets, with where it comes from.

What the detections, the rule maths and the messages read. Resolving a site's
packs into these (siltwatch/rulepacks.py) checks the packs against every key the
detections declare, so it stands above the registry; the resolved values stand
below it, and import nothing of siltwatch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

Verified = Literal["seed", "primary", "secondary", "default"]


@dataclass(frozen=True)
class RuleValue:
    """One resolved rule: its value and where it comes from."""

    key: str
    value: Any
    citation: str
    verified: Verified
    pack: str
    text: str = ""
    site_override: bool = False

    def cite(self) -> str:
        """The citation as an alert text shows it.

        A site override says so; a value only seen in a summary says "per"
        (README.md, "Site configuration and rule packs": a secondary value is cited
        as "per …" in alerts).
        """
        if self.site_override and self.pack == "site":
            return f"site configuration ({self.key})"
        if self.site_override:
            return f"site override of {self.citation}"
        if self.verified == "secondary":
            return f"per {self.citation}"
        return self.citation


class Rules:
    """The resolved rules of one site: packs stacked, then the site's overrides."""

    def __init__(self, values: dict[str, RuleValue], packs: list[str]) -> None:
        self._values = values
        self.packs = packs

    def get(self, key: str) -> RuleValue | None:
        return self._values.get(key)

    def require(self, key: str) -> RuleValue:
        value = self._values.get(key)
        if value is None:
            raise KeyError(
                f"no rule pack of this site sets {key!r} (packs: {', '.join(self.packs)})"
            )
        return value

    def number(self, key: str) -> float:
        return float(self.require(key).value)

    def overrides(self) -> list[RuleValue]:
        """The values the site overrode: logged at start-up and shown in alert texts."""
        return [v for v in self._values.values() if v.site_override]

    def items(self) -> list[RuleValue]:
        return [self._values[k] for k in sorted(self._values)]

    def without(self, keys: set[str] | frozenset[str]) -> Rules:
        """These rules less ``keys`` (rules that do not apply to the site, see
        siltwatch/applicability.py)."""
        return Rules({k: v for k, v in self._values.items() if k not in keys}, self.packs)
