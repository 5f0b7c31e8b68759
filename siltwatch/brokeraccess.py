"""Broker accounts and the Mosquitto ACL, generated from the site configurations.

Why generated: the broker is where "a device may publish only under its own
station's topic" (docs/wire-format.md) is enforced, and a hand-written ACL drifts from
the sites it guards. A pattern such as ``pattern write siltwatch/v1/+/%u/#`` lets
station ``up-1`` write under *every* site that has (or will have) an ``up-1``, and
any account named like a station id gets that station's topics. Here every account
is an explicit ``user`` block listing exactly the topics of the sites it belongs to.

Accounts:

``ingest``
    The siltwatch services: read ``siltwatch/#`` (readings, status, inspections),
    write ``siltwatch/v1/+/alerts/#`` (one topic per episode, ingest/mqtt/alert_topic.py)
    and the stations' resend requests (``siltwatch/v1/+/+/cmd/resend``, ingest/gaps.py).
``{site}/{station}``
    One per edge station: write only its readings
    (``siltwatch/v1/{site}/{station}/+/reading``) and its retained status and last
    will (``.../{station}/status``); read only its own resend requests
    (``.../{station}/cmd/resend``): it cannot forge a request, nor read another
    station's. The separator is
    ``/`` because it cannot occur in an id (``siltwatch.schema`` allows letters,
    digits, ``_``, ``.`` and ``-``, and ``/`` is the topic level separator): with
    ``.`` site ``a.b`` station ``c`` and site ``a`` station ``b.c`` would share
    the account ``a.b.c``.
a person (``--operators`` TOML)
    Write only ``siltwatch/v1/{site}/{record}`` for the field records in
    :data:`FIELD_RECORDS` of the sites listed for them, read those sites' alerts.
    Their names cannot contain ``/``, so they never collide with a station.

This module is pure: it validates and builds text. Reading the site files and
writing the output is ``app/brokeraccess_cli.py``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, field_validator

from siltwatch.schema import TOPIC_ROOT, Identifier
from siltwatch.topic_words import filter_covers, reserved_reason

INGEST_USER = "ingest"
STATION_USER_SEPARATOR = "/"
# What people record in the field, one topic per site each: inspections, and the site
# log (what was done to which area, milestones, notices; ``siltwatch log``).
FIELD_RECORDS: tuple[str, ...] = ("inspections", "log")
# A person's account name: no "/" (stations), ":" (the password file's separator),
# whitespace, "+" or "#" (MQTT wildcards), so it reads the same in every tool.
PERSON_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$"


@dataclass(frozen=True)
class SiteStations:
    """What the ACL needs of one site configuration: its id and its stations' ids."""

    site: str
    stations: tuple[str, ...]


class OperatorAccount(BaseModel):
    """One ``[[account]]`` of the operators file: a person and the sites they record for."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    user: str
    sites: list[Identifier] = Field(min_length=1)

    @field_validator("user")
    @classmethod
    def _person_name(cls, value: str) -> str:
        if not re.match(PERSON_PATTERN, value):
            raise ValueError(
                f"{value!r} is not a person's account name: up to 64 letters, digits, "
                '_ . @ - (no "/": that is how station accounts are named)'
            )
        return value


class OperatorsFile(BaseModel):
    """The ``--operators`` TOML: ``[[account]]`` tables with ``user`` and ``sites``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    account: list[OperatorAccount] = Field(default_factory=list)


def station_user(site: str, station: str) -> str:
    """The broker account of a station: ``lg-route9n/up-1``."""
    return f"{site}{STATION_USER_SEPARATOR}{station}"


def operator_problems(
    source: str,
    operators: Sequence[OperatorAccount],
    sites: Sequence[SiteStations],
    ingest_user: str = INGEST_USER,
) -> list[str]:
    """Mistakes the schema cannot see, one line each naming file and key."""
    known = {s.site for s in sites}
    listed = ", ".join(sorted(known))
    problems: list[str] = []
    seen: dict[str, int] = {}
    for i, account in enumerate(operators):
        if account.user == ingest_user:
            problems.append(
                f"{source}: account[{i}].user: {account.user!r} is the services' account"
            )
        if account.user in seen:
            problems.append(
                f"{source}: account[{i}].user: {account.user!r} is already "
                f"account[{seen[account.user]}]"
            )
        seen.setdefault(account.user, i)
        for j, site in enumerate(account.sites):
            if site not in known:
                problems.append(
                    f"{source}: account[{i}].sites[{j}]: unknown site {site!r} "
                    f"(the --site files give: {listed})"
                )
    return problems


def _topic(*levels: str) -> str:
    return "/".join((TOPIC_ROOT, *levels))


def acl_text(
    sites: Sequence[SiteStations],
    operators: Sequence[OperatorAccount] = (),
    *,
    command: str,
    ingest_user: str = INGEST_USER,
) -> str:
    """The Mosquitto ``acl_file``; ``command`` is how to regenerate it (for its header)."""
    ordered = sorted(sites, key=lambda s: s.site)
    lines = [
        "# siltwatch broker ACL: GENERATED from the site configurations, do not edit by hand.",
        "# Regenerate after adding a site, a station or a person, then reload Mosquitto",
        "# (SIGHUP) and create the new accounts listed in passwd.todo:",
        f"#   {command}",
        "#",
        f"# {ingest_user:<24} the siltwatch services: read everything, publish alerts",
        "# <site>/<station>         one per edge station: write its readings and status,",
        "#                          read its resend requests",
        "# <person>                 record "
        + ", ".join(FIELD_RECORDS)
        + " for their sites, read those sites' alerts",
        "#",
        "# Every account is listed with its topics; Mosquitto denies whatever is not listed.",
        "",
        f"user {ingest_user}",
        f"topic read {'siltwatch/#'}",
        f"topic write {_topic('+', 'alerts', '#')}",  # one retained topic per episode
        # The one-owner lease of each site's ingest service (ingest/mqtt/session.py).
        f"topic write {_topic('+', 'ingest', 'owner')}",
        # Resend requests for what a broker lost (ingest/gaps.py, edge/publisher.py).
        f"topic write {_topic('+', '+', 'cmd', 'resend')}",
    ]
    for s in ordered:
        lines += ["", f"# site {s.site}: its stations"]
        for station in s.stations:
            _refuse_parent_grant(s, station)
            lines += [
                f"user {station_user(s.site, station)}",
                f"topic write {_topic(s.site, station, '+', 'reading')}",
                f"topic write {_topic(s.site, station, 'status')}",
                f"topic read {_topic(s.site, station, 'cmd', 'resend')}",
            ]
    if operators:
        lines += ["", "# people (--operators)"]
    for i, account in enumerate(operators):
        lines += ([] if i == 0 else [""]) + [f"user {account.user}"]
        for site in sorted(set(account.sites)):
            lines += [f"topic write {_topic(site, record)}" for record in FIELD_RECORDS]
            lines.append(f"topic read {_topic(site, 'alerts', '#')}")
    return "\n".join(lines) + "\n"


def _refuse_parent_grant(site: SiteStations, station: str) -> None:
    """ValueError when ``station``'s grant would cover a topic that is not its own.

    The topics it must never write: the site's field records and alerts, the
    services' lease, and every other station's topics (siltwatch/topic_words.py).
    """
    grant = _topic(site.site, station, "#")
    others = [_topic(site.site, word) for word in (*FIELD_RECORDS, "alerts")]
    others.append(_topic(site.site, "ingest", "owner"))
    others += [_topic(site.site, o, "status") for o in site.stations if o != station]
    covered = [topic for topic in others if filter_covers(grant, topic)]
    if covered:
        why = reserved_reason("station", station) or "it names another account's topic"
        raise ValueError(
            f"site {site.site!r} station {station!r}: the grant {grant} would cover "
            f"{', '.join(covered)}: {why}"
        )


def account_names(
    sites: Sequence[SiteStations],
    operators: Sequence[OperatorAccount] = (),
    ingest_user: str = INGEST_USER,
) -> list[str]:
    """Every account the ACL names, in its order: each needs a password of its own."""
    ordered = sorted(sites, key=lambda s: s.site)
    return (
        [ingest_user]
        + [station_user(s.site, station) for s in ordered for station in s.stations]
        + [account.user for account in operators]
    )


def passwd_todo_text(
    sites: Sequence[SiteStations],
    operators: Sequence[OperatorAccount] = (),
    ingest_user: str = INGEST_USER,
) -> str:
    """The accounts to create in Mosquitto's password file, one per line, with how."""
    names = account_names(sites, operators, ingest_user)
    header = [
        "# Broker accounts named in the generated acl: each needs its own password.",
        "# mosquitto_passwd asks for it (nothing lands in the shell history); -c creates",
        "# the file, so use it for the first account only:",
        f"#   mosquitto_passwd -c passwd {names[0]}",
        "#   mosquitto_passwd passwd <account>        # for each further line below",
        '# A station\'s edge.toml then sets username = "<site>/<station>" and its password.',
    ]
    return "\n".join(header + names) + "\n"
