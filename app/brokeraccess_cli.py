"""``siltwatch broker-acl``: write the Mosquitto ACL and the list of accounts to create.

Kept out of app/cli.py so the command can be reviewed on its own; cli.py only
registers it (``add_broker_acl_parser(sub)``). The text comes from
siltwatch/brokeraccess.py; this module reads the site and operators files, reports
every mistake at once (file and key, as ``config check`` does) and writes::

    DIR/acl           Mosquitto's acl_file (deploy/mosquitto/acl is one, for the examples)
    DIR/passwd.todo   the accounts that need a password, and how to create them

Passwords are not generated or written: they belong in the operator's password
manager and in each station's edge.toml, not in a folder next to the ACL.
"""

from __future__ import annotations

import argparse
import re
import shlex
import sys
from pathlib import Path

from siltwatch.brokeraccess import (
    INGEST_USER,
    PERSON_PATTERN,
    OperatorAccount,
    OperatorsFile,
    SiteStations,
    acl_text,
    operator_problems,
    passwd_todo_text,
)
from siltwatch.config import load_site
from siltwatch.configerrors import ConfigError, load_toml_model

EXIT_OK, EXIT_FAIL = 0, 1


def add_broker_acl_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``broker-acl`` on the CLI's subcommands."""
    p = sub.add_parser(
        "broker-acl",
        help="generate the Mosquitto ACL and account list from site configurations",
        description=(
            "Write DIR/acl (each station may write only its own topics, each person only "
            "the inspections of their sites) and DIR/passwd.todo (the accounts to create "
            "with mosquitto_passwd). Station accounts are named <site>/<station>."
        ),
    )
    p.add_argument(
        "--site",
        action="append",
        required=True,
        metavar="SITE.toml",
        help="a site configuration (repeat for every site the broker serves)",
    )
    p.add_argument(
        "--operators",
        metavar="OPERATORS.toml",
        help='people\'s accounts: [[account]] user = "...", sites = ["site-id", ...]',
    )
    p.add_argument(
        "--ingest-user",
        default=INGEST_USER,
        metavar="NAME",
        help=f"the services' account (default {INGEST_USER})",
    )
    p.add_argument(
        "--out", required=True, metavar="DIR", help="folder to write acl and passwd.todo"
    )
    p.set_defaults(func=cmd_broker_acl)


def _command(args: argparse.Namespace) -> str:
    """The command line that regenerates this output, for the ACL's header."""
    parts = ["siltwatch", "broker-acl"]
    for site in args.site:
        parts += ["--site", site]
    if args.operators:
        parts += ["--operators", args.operators]
    if args.ingest_user != INGEST_USER:
        parts += ["--ingest-user", args.ingest_user]
    parts += ["--out", args.out]
    return shlex.join(parts)


def _load_sites(paths: list[str], problems: list[str]) -> list[SiteStations]:
    sites: list[SiteStations] = []
    first_file: dict[str, str] = {}
    for path in paths:
        try:
            cfg = load_site(Path(path))
        except ConfigError as exc:
            problems += exc.lines
            continue
        site = cfg.site.id
        if site in first_file:
            problems.append(f"{path}: site.id: {site!r} is also the site of {first_file[site]}")
            continue
        first_file[site] = path
        sites.append(SiteStations(site, tuple(s.id for s in cfg.stations)))
    return sites


def _load_operators(
    path: str | None, sites: list[SiteStations], ingest_user: str, problems: list[str]
) -> list[OperatorAccount]:
    if path is None:
        return []
    try:
        operators = load_toml_model(Path(path), OperatorsFile).account
    except ConfigError as exc:
        problems += exc.lines
        return []
    problems += operator_problems(path, operators, sites, ingest_user)
    return operators


def cmd_broker_acl(args: argparse.Namespace) -> int:
    """Validate every input, then write DIR/acl and DIR/passwd.todo (nothing on a mistake)."""
    problems: list[str] = []
    if not re.match(PERSON_PATTERN, args.ingest_user):
        problems.append(f"--ingest-user: {args.ingest_user!r} is not a valid account name")
    sites = _load_sites(list(args.site), problems)
    operators = _load_operators(args.operators, sites, args.ingest_user, problems)
    if problems:
        for line in problems:
            print(f"error: {line}", file=sys.stderr)
        return EXIT_FAIL
    try:
        acl = acl_text(sites, operators, command=_command(args), ingest_user=args.ingest_user)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_FAIL
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "acl").write_text(acl, encoding="utf-8")
    todo = passwd_todo_text(sites, operators, args.ingest_user)
    (out / "passwd.todo").write_text(todo, encoding="utf-8")
    stations = sum(len(s.stations) for s in sites)
    print(
        f"wrote {out / 'acl'} and {out / 'passwd.todo'}: {len(sites)} sites, "
        f"{stations} station accounts, {len(operators)} people, 1 services account"
    )
    return EXIT_OK
