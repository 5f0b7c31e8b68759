"""Who the town's official is, in the town's own words.

Each ordinance names the official who receives what the law sends the town:
Lake George's "stormwater management officer" (§148-8 A), Big Flats's
"stormwater management officer", the code enforcement officer or an official
the town board appoints (17.37.070), Lake Lure's "Erosion Control Officer"
(96.03). A message that says "the erosion-control officer" to a New York town
names an office it does not have, so each pack sets ``officer.title`` and every
message that names the official reads it here. A site under no pack that sets
it hears of "the town's officer".
"""

from __future__ import annotations

from typing import Protocol

from siltwatch.rulekeys import RuleKey

OFFICER_TITLE = RuleKey("officer.title", (str,))
GENERIC_TITLE = "the town's officer"


class _Rule(Protocol):
    @property
    def value(self) -> object: ...


class _Rules(Protocol):
    def get(self, key: str) -> _Rule | None: ...


def officer_title(rules: _Rules) -> str:
    """The official as a sentence names them: "the Stormwater Management Officer"."""
    rule = rules.get(OFFICER_TITLE.name)
    if rule is None or not str(rule.value).strip():
        return GENERIC_TITLE
    return f"the {str(rule.value).strip()}"


def officer_notified(rules: _Rules) -> str:
    """The sentence an overdue alert carries: "The Stormwater Management Officer is notified." """
    title = officer_title(rules)
    return f"{title[0].upper()}{title[1:]} is notified."
