"""What a detection kind is, said once: the types every description is made of.

A *description* (:class:`Description`) is to a siltwatch detection what Home
Assistant's ``EntityDescription`` is to an entity: a frozen record of
everything the rest of the system needs to know about it, so that routing,
messages, dashboards and the configuration checks loop over descriptions
instead of switching on kind strings. A detection's *behaviour* (its state
machine) stays in its ``analytics/`` module, named by ``engine_module``.

It stands below ``siltwatch.rulepacks`` and ``siltwatch.config``, which read the
registry: it imports only the site model (siltwatch/sitemodel.py), the resolved
rules (siltwatch/rules.py) and the rule keys (siltwatch/rulekeys.py), never them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import tzinfo
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from siltwatch.naming import OVERDUE_SUFFIX
from siltwatch.panels import Panel
from siltwatch.rulekeys import RuleKey
from siltwatch.timefmt import local_time

if TYPE_CHECKING:
    from siltwatch.rules import Rules
    from siltwatch.sitemodel import SiteConfig


# --- alerts and who hears them ----------------------------------------------------


class Officer(StrEnum):
    """When the town's officer hears about an alert episode (alerts/routing.py).

    The site operator and the qualified inspector hear every opening, escalation
    and resolution of every kind; the officer only what the law makes the town's
    business, once when it becomes so and once when it clears.
    """

    NEVER = "never"  # siltwatch's own diagnostics and forecasts: the site's people only
    ON_CRITICAL = "on_critical"  # a regulatory episode that reached critical
    ON_OPEN = "on_open"  # from its opening (e.g. a missed legal deadline)
    ONCE = "once"  # a fact the town must know, once: its opening only (a missed notice)


class Evidence(BaseModel):
    """Base of the typed evidence of one alert kind.

    The fields declared on a subclass are those people are told (the SMS's "by
    how much", the console's columns); they are required where the detector
    always writes them, so a renamed key fails the evidence tests instead of
    silently emptying a message. Further keys are kept as detail for the email
    and the audit log (``extra="allow"``).
    """

    model_config = ConfigDict(extra="allow", frozen=True)


E = TypeVar("E", bound=Evidence)


def short_number(value: float | None, digits: int = 1) -> str | None:
    """``value`` with at most ``digits`` decimals and no trailing zeros; None for None."""
    if value is None:
        return None
    if not digits:
        return f"{value:.0f}"
    return f"{value:.{digits}f}".rstrip("0").rstrip(".")


def _nothing(_evidence: Any, _zone: tzinfo) -> str:
    return ""


@dataclass(frozen=True)
class AlertSpec(Generic[E]):
    """One alert kind: its words, whether the law is behind it, who hears it, its evidence."""

    kind: str  # ``kind`` in ALERTS.jsonl, declared here and nowhere else
    label: str  # what people call it ("turbidity contrast")
    regulatory: bool  # a breach of a rule pack's law, not a siltwatch diagnostic
    officer: Officer
    evidence: type[E]
    # "By how much", from the typed evidence, times in the site's zone: the SMS's
    # middle part ('' when there is nothing to say).
    amount: Callable[[E, tzinfo], str] = _nothing

    def read_evidence(self, evidence: Mapping[str, Any]) -> E | None:
        """The evidence as its model, or None when it is not what this kind writes
        (an alert from another release): people then get the message, not a guess."""
        try:
            return self.evidence.model_validate(dict(evidence))
        except ValidationError:
            return None

    def how_much(self, evidence: Mapping[str, Any], zone: tzinfo) -> str:
        ev = self.read_evidence(evidence)
        return self.amount(ev, zone) if ev is not None else ""


def regulatory(
    kind: str,
    label: str,
    evidence: type[E],
    amount: Callable[[E, tzinfo], str],
    officer: Officer = Officer.ON_CRITICAL,
) -> AlertSpec[E]:
    """A breach of the law a rule pack cites: the officer hears it (on critical, by default)."""
    return AlertSpec(kind, label, True, officer, evidence, amount)


def diagnostic(
    kind: str, label: str, evidence: type[E], amount: Callable[[E, tzinfo], str] = _nothing
) -> AlertSpec[E]:
    """siltwatch's own finding (a dead probe, a forecast): the site's people only."""
    return AlertSpec(kind, label, False, Officer.NEVER, evidence, amount)


@dataclass(frozen=True)
class DutySpec:
    """One duty kind: the reasons it is created for, and the alert its missed deadline raises."""

    kind: str  # ``kind`` in DUTIES.jsonl, declared here and nowhere else
    label: str
    reasons: tuple[str, ...]
    overdue: AlertSpec[Any] | None = None

    @property
    def overdue_kind(self) -> str:
        """The kind of the alert its missed deadline raises (``<duty kind>_overdue``)."""
        if self.overdue is None:
            raise AttributeError(f"a missed {self.kind!r} duty raises no alert")
        return self.overdue.kind


class OverdueEvidence(Evidence):
    """What every ``<duty kind>_overdue`` alert says (analytics/inspection_overdue.py)."""

    due_at: str
    overdue_h: float


def overdue_amount(ev: OverdueEvidence, zone: tzinfo) -> str:
    late = short_number(ev.overdue_h)
    return f"{late} h overdue (due {local_time(ev.due_at, zone, short=True)})" if late else ""


def deadline_duty(kind: str, label: str, reasons: tuple[str, ...], law: bool = True) -> DutySpec:
    """A duty kind whose missed deadline raises the replay contract's ``<duty kind>_overdue``
    alert: the town's business from its opening where a law sets the deadline (routed like
    ``inspection_overdue``), the site's people's only where the date is siltwatch's or the
    site's own (``law=False``)."""
    words = (f"{kind}{OVERDUE_SUFFIX}", f"{label} overdue", OverdueEvidence, overdue_amount)
    overdue = regulatory(*words, Officer.ON_OPEN) if law else diagnostic(*words)
    return DutySpec(kind, label, reasons, overdue)


# --- configuration checks -----------------------------------------------------------


def repeated_names(
    items: Iterable[Mapping[str, Any]], field_name: str
) -> Iterator[tuple[int, str, int]]:
    """(index, name, first index) for each raw table whose string ``field_name``
    repeats an earlier table's: ids and names must be unique, and the operator is
    told where the first one stands. Non-string values are left to the type checks."""
    seen: dict[str, int] = {}
    for i, item in enumerate(items):
        name = item.get(field_name)
        if not isinstance(name, str):
            continue
        if name in seen:
            yield i, name, seen[name]
        seen.setdefault(name, i)


@dataclass
class ConfigView:
    """The raw site file as the configuration checks see it, before the model exists.

    Checks work on the raw TOML so that cross-reference mistakes are reported
    together with the type errors pydantic finds: the operator sees all at once.
    """

    data: dict[str, Any]
    sensors: dict[str, dict[str, Any]]  # sensor id -> its raw table
    rules: Rules | None  # None when a pack did not resolve (reported elsewhere)
    problems: list[tuple[str, str]] = field(default_factory=list)

    def items(self, key: str, within: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        """The tables of array ``key`` (of ``within``, default the file); a non-table is {}."""
        value = (self.data if within is None else within).get(key)
        if not isinstance(value, list):
            return []
        return [item if isinstance(item, dict) else {} for item in value]

    def problem(self, path: str, expected: str) -> None:
        self.problems.append((path, expected))

    def sensor_ref(self, path: str, sensor_id: Any, kind: str) -> None:
        """``sensor_id`` (at ``path``) names a sensor of ``kind`` on some station."""
        if not isinstance(sensor_id, str):
            return
        sensor = self.sensors.get(sensor_id)
        if sensor is None:
            known = (
                ", ".join(sorted(k for k, v in self.sensors.items() if v.get("kind") == kind))
                or "none"
            )
            self.problem(
                path, f"no sensor {sensor_id!r} on any station (known {kind} sensors: {known})"
            )
        elif sensor.get("kind") != kind:
            self.problem(
                path,
                f"sensor {sensor_id!r} is a {sensor.get('kind')} sensor, expected a {kind} sensor",
            )


@dataclass(frozen=True)
class Section:
    """The site file's array of what a detection watches, and what the file must get right.

    ``sensor_refs``: (field, sensor kind) pairs each item must name an existing
    sensor of that kind by; ``officer_label``: the words in "the officer is sent
    critical ... alerts" when the site has items (a site under a pack must name
    an officer).
    """

    key: str  # "turbidity_pairs"
    label: str  # "turbidity pair"
    sensor_refs: tuple[tuple[str, str], ...] = ()
    officer_label: str = ""


ConfigCheck = Callable[[ConfigView], None]
# What the officer is sent for this site by this detection: ("duty", "overdue
# inspections") or ("critical", "turbidity"), or None when nothing.
OfficerWords = tuple[Literal["duty", "critical"], str]


# --- dashboards ----------------------------------------------------------------------


@dataclass(frozen=True)
class Dashboard:
    """A detection's row: one panel per item of its section; rows are laid out by
    ``position`` (rain sits next to turbidity, which it drives), not by build order."""

    row: str
    position: int
    panel: Callable[[SiteConfig, Rules, Any], Panel]


# --- the description -------------------------------------------------------------------


@dataclass(frozen=True)
class Description:
    """Everything outside the detector's own module needs to know about one detection.

    ``order`` is the order detectors are built and called in (it decides the
    order of alerts raised at the same instant, so it is part of the replay's
    byte-for-byte output); ``engine_module`` the ``analytics`` module whose
    ``build(site, ctx)`` returns the detectors (by convention ``analytics.<key>``).
    What the detection detects, and the law's sections behind it, are said once, in
    the docstring of the module that declares it (tests/foundation/test_registry.py
    checks that each cites its law): the description holds what code reads.
    """

    key: str
    order: int
    alerts: tuple[AlertSpec[Any], ...] = ()
    duties: tuple[DutySpec, ...] = ()
    rule_keys: tuple[RuleKey, ...] = ()
    section: Section | None = None
    check_config: ConfigCheck | None = None  # checks beyond the section's sensor references
    officer_sends: Callable[[ConfigView], OfficerWords | None] | None = None  # beyond the section's
    dashboard: Dashboard | None = None
    engine_module: str = ""  # default: analytics.<key>

    def officer_words(self, view: ConfigView) -> OfficerWords | None:
        """What the officer is sent for this site by this detection, if anything."""
        if self.officer_sends is not None:
            return self.officer_sends(view)
        section = self.section
        if section is None or not section.officer_label or not view.items(section.key):
            return None
        if any(spec.officer == Officer.ON_CRITICAL for spec in self.alerts):
            return ("critical", section.officer_label)
        return None

    def check(self, view: ConfigView) -> None:
        """The section's sensor references, then the detection's own checks."""
        if self.section is not None:
            for i, item in enumerate(view.items(self.section.key)):
                for field_name, kind in self.section.sensor_refs:
                    view.sensor_ref(
                        f"{self.section.key}[{i}].{field_name}", item.get(field_name), kind
                    )
        if self.check_config is not None:
            self.check_config(view)

    def panels(self, site: SiteConfig, rules: Rules) -> tuple[Panel, ...]:
        """Its dashboard panels for ``site`` (whose resolved rules are ``rules``): one per
        item of its section."""
        if self.dashboard is None or self.section is None:
            return ()
        return tuple(
            self.dashboard.panel(site, rules, item) for item in getattr(site, self.section.key)
        )

    def __post_init__(self) -> None:
        if not self.engine_module:
            object.__setattr__(self, "engine_module", f"analytics.{self.key}")
        if not self.engine_module.startswith("analytics."):
            raise ValueError(f"{self.key}: engine_module must be an analytics module")


def rules_set(rules: Rules | None, *keys: str) -> bool:
    """Some of ``keys`` is set (and not False) in the resolved rules."""
    if rules is None:
        return False
    return any((e := rules.get(k)) is not None and e.value is not False for k in keys)
