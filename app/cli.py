"""The ``siltwatch`` command: the one place that wires the packages together.

Exit codes: 0 done (whatever was found), 1 bad input or failure, 2 usage.
Errors are printed for people, one line per problem, never as a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from app.brokeraccess_cli import add_broker_acl_parser
from app.console_cmd import add_console_options
from app.import_cmd import add_import_parser
from app.serve import add_broker_options, add_serve_options
from app.serving import broker_settings, read_secret
from siltwatch.configerrors import ConfigError
from siltwatch.rulepacks import site_rules

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2
REPO_EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
# Top-level modules of the ``server`` extra (pyproject.toml), and what they import directly
# (urllib3 comes with influxdb-client). A station installs ``siltwatch[edge]`` without them.
SERVER_MODULES = frozenset(
    {
        "pandas",
        "numpy",
        "influxdb_client",
        "urllib3",
        "grafana_client",
        "grafana_foundation_sdk",
        "amqtt",
        # the web console and the report (console/)
        "starlette",
        "uvicorn",
        "jinja2",
        "markupsafe",
        "multipart",
        "python_multipart",
        "argon2",
        "twilio",
        "pyarrow",  # siltwatch export --format parquet
    }
)


def _version() -> str:
    try:
        return metadata.version("siltwatch")
    except metadata.PackageNotFoundError:  # pragma: no cover - running from a bare checkout
        return "0+unknown"


def _version_line() -> str:
    return f"siltwatch {_version()} (wire schema v1, Python {sys.version.split()[0]})"


class _VersionAction(argparse.Action):
    """``siltwatch --version``: the line ``siltwatch version`` prints, unwrapped, then exit 0."""

    def __init__(self, option_strings: Sequence[str], dest: str, help: str | None = None) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        print(_version_line())
        parser.exit(EXIT_OK)


def _err(lines: Sequence[str]) -> None:
    for line in lines:
        print(f"error: {line}", file=sys.stderr)


def _site_option(p: argparse.ArgumentParser) -> None:
    """``--site SITE.toml``: the one site a command reads."""
    p.add_argument("--site", required=True, metavar="SITE.toml", help="the site configuration")


def _site_and_store_options(p: argparse.ArgumentParser) -> None:
    """``--site`` and ``--db``: a command that reads what ``serve`` stored of one site."""
    _site_option(p)
    p.add_argument("--db", required=True, metavar="STORE", help="the store siltwatch serve writes")


# --- commands -------------------------------------------------------------------


def _version_parser(sub: Any) -> None:
    p = sub.add_parser("version", help="print the version")
    p.set_defaults(func=cmd_version)


def cmd_version(args: argparse.Namespace) -> int:
    print(_version_line())
    return EXIT_OK


def _config_parser(sub: Any) -> None:
    p = sub.add_parser("config", help="site configuration commands")
    csub = p.add_subparsers(dest="config_command", metavar="SUBCOMMAND", required=True)
    pc = csub.add_parser(
        "check", help="check site configuration files; every mistake on its own line"
    )
    pc.add_argument("files", nargs="+", metavar="FILE", help="site configuration TOML file(s)")
    pc.set_defaults(func=cmd_config_check)


def cmd_config_check(args: argparse.Namespace) -> int:
    from ingest.reload_guard import emptiness_warning
    from siltwatch.applicability import applicability, scope_warnings
    from siltwatch.config import load_site

    status = EXIT_OK
    for path in args.files:
        try:
            site = load_site(Path(path))
        except ConfigError as exc:
            _err(exc.lines)
            status = EXIT_FAIL
            continue
        rules = site_rules(site)
        print(
            f"{path}: ok — site {site.site.id!r}, {len(site.sensors())} sensors, "
            f"{len(site.turbidity_pairs)} turbidity pairs, {len(site.infiltration_practices)} "
            f"infiltration practices, {len(site.sediment_traps)} sediment traps, "
            f"{len(site.rain_gauges)} rain gauges; rule packs {' > '.join(rules.packs)}"
        )
        for value in rules.overrides():
            print(f"  site override: {value.key} = {value.value!r} ({value.cite()})")
        for line in applicability(site):
            print(f"  pack {line}")
        for warning in scope_warnings(site):
            print(f"  warning: {warning}")
        empty = emptiness_warning(site)
        if empty is not None:
            print(f"  warning: {empty}")
    return status


def _schema_parser(sub: Any) -> None:
    p = sub.add_parser("schema", help="export the wire format's JSON Schemas")
    p.add_argument(
        "--out",
        metavar="DIR",
        help="write one FILE.schema.json per payload into DIR (default: print)",
    )
    p.set_defaults(func=cmd_schema)


def cmd_schema(args: argparse.Namespace) -> int:
    from siltwatch.schemas import json_schemas

    schemas = json_schemas()
    if args.out is None:
        print(json.dumps(schemas, indent=2, sort_keys=True))
        return EXIT_OK
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for name, schema in schemas.items():
        (out / f"{name}.schema.json").write_text(
            json.dumps(schema, indent=2, sort_keys=True) + "\n"
        )
    print(f"wrote {len(schemas)} JSON Schemas to {out}/: {', '.join(sorted(schemas))}")
    return EXIT_OK


class _Progress:
    """A one-line progress bar on stderr, only when stderr is a terminal."""

    def __init__(self) -> None:
        self.enabled = sys.stderr.isatty()

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled or total < 50_000:
            return
        width = 30
        filled = int(width * done / total)
        print(
            f"\rreplaying [{'#' * filled}{'.' * (width - filled)}] {done:,}/{total:,}",
            end="",
            file=sys.stderr,
        )
        if done >= total:
            print(file=sys.stderr)


def _replay_parser(sub: Any) -> None:
    p = sub.add_parser(
        "replay",
        help="replay a recording through the detections",
        description="Replay a recording (CSV time,sensor,value or a JSONL capture) through the same "
        "engine the live service runs; the run ends at the last reading's time.",
    )
    p.add_argument(
        "recording", metavar="RECORDING", help="CSV (time,sensor,value) or JSONL capture"
    )
    _site_option(p)
    p.add_argument("--inspections", metavar="INSPECTIONS.csv", help="CSV time,inspector,duty")
    p.add_argument("--site-log", metavar="LOG.csv", help="CSV time,event,area,by,detail")
    p.add_argument(
        "--alerts-out", required=True, metavar="ALERTS.jsonl", help="alert episodes, one a line"
    )
    p.add_argument("--duties-out", required=True, metavar="DUTIES.jsonl", help="duties, one a line")
    p.add_argument(
        "--rain-log",
        metavar="RAIN.csv",
        help="also write the daily rainfall log per gauge, in the site's time zone (NCG01 Part III §A item 1)",
    )
    _influx_options(p, "load the replay into InfluxDB to try the dashboards on recorded data")
    p.set_defaults(func=cmd_replay)


def cmd_replay(args: argparse.Namespace) -> int:
    from ingest.recordings.csv_rows import RecordingError
    from ingest.recordings.replay import replay_file
    from siltwatch.config import load_site

    recorded: list[Sequence[Any]] = []
    try:
        site = load_site(Path(args.site))
        mirror = _influx_mirror(args, site)
        result = replay_file(
            site,
            Path(args.recording),
            args.inspections,
            progress=_Progress(),
            site_log=args.site_log,
            recorded=recorded.append if mirror is not None else None,
        )
    except (ConfigError, RecordingError) as exc:
        _err(exc.lines)
        return EXIT_FAIL
    except ValueError as exc:
        _err([str(exc)])
        return EXIT_FAIL
    result.write(Path(args.alerts_out), Path(args.duties_out))
    if args.rain_log:
        result.write_rain_log(Path(args.rain_log))
    stats = result.stats
    log = f" and {stats.site_log} site-log entries" if stats.site_log else ""
    print(
        f"replayed {stats.readings_processed:,} readings ({stats.duplicates} duplicates dropped) "
        f"and {stats.inspections} inspections{log} of site {site.site.id!r}: "
        f"{len(result.alerts)} alert episodes -> {args.alerts_out}, {len(result.duties)} duties -> {args.duties_out}"
    )
    return EXIT_OK if mirror is None else _replay_into_influx(mirror, site, recorded, result)


def _replay_into_influx(mirror: Any, site: Any, recorded: list[Sequence[Any]], result: Any) -> int:
    """``replay --influx…``: the recording and its alert and duty changes into InfluxDB."""
    from ingest.influx.replay_load import ReplayLoadError, load_replay

    try:
        loaded = load_replay(mirror, site, recorded[0] if recorded else (), result.events)
    except ReplayLoadError as exc:
        _err([str(exc)])
        return EXIT_FAIL
    finally:
        mirror.writer.close()
    refused = f"; InfluxDB refused {loaded.refused:,} as bad data" if loaded.refused else ""
    print(
        f"loaded into InfluxDB: {loaded.readings:,} readings and "
        f"{loaded.events:,} alert and duty points{refused}"
    )
    return EXIT_FAIL if loaded.refused else EXIT_OK


def _records_parser(sub: Any) -> None:
    p = sub.add_parser(
        "records",
        help="write the records to hand over (inspections, daily rain, site log) as CSV",
        description="From the live store: the inspection log with the fields the law asks "
        "for, the daily rain log and the site log, for a range of local dates.",
    )
    _site_and_store_options(p)
    p.add_argument("--out", required=True, metavar="DIR", help="where the three CSV files go")
    p.add_argument("--from", dest="date_from", metavar="YYYY-MM-DD", help="first local date")
    p.add_argument("--to", dest="date_to", metavar="YYYY-MM-DD", help="last local date")
    p.set_defaults(func=cmd_records)


def cmd_records(args: argparse.Namespace) -> int:
    """Write the inspection log, the daily rain log and the site log from a store as CSV."""
    from ingest.outputs.field_records import export_field_records
    from ingest.outputs.records import export_records, local_bounds_ms, parse_day
    from ingest.store.from_url import open_store_read_only
    from ingest.store.sqlite import StoreError
    from siltwatch.config import load_site

    try:
        site = load_site(Path(args.site))
        start, end = parse_day(args.date_from), parse_day(args.date_to)
    except ConfigError as exc:
        _err(exc.lines)
        return EXIT_FAIL
    except ValueError:
        _err([f"--from/--to: expected a date YYYY-MM-DD, got {args.date_from!r}/{args.date_to!r}"])
        return EXIT_FAIL
    try:
        store = open_store_read_only(args.db)  # a SQLite file or a postgresql:// URL
    except StoreError as exc:
        _err([str(exc)])
        return EXIT_FAIL
    try:
        written = export_records(store, site, Path(args.out), start, end)
        field = export_field_records(
            store, site, Path(args.out), *local_bounds_ms(start, end, site.site.zone)
        )
    finally:
        store.close()
    print(
        f"wrote {written.inspections} inspections, {written.rain_days} gauge-days of rain and "
        f"{written.site_log} site-log entries of site {site.site.id!r} to {written.folder}/"
        "{inspections,rain-log,site-log}.csv"
    )
    print(
        f"wrote {field.records} field-desk checklists, {field.photos} photos and "
        f"{field.actions} corrective actions to {written.folder}/"
        "{field-inspections,field-findings,corrective-actions}.csv, field-records/, photos/"
    )
    return EXIT_OK


def _export_parser(sub: Any) -> None:
    from ingest.outputs.export_cli import add_export_options

    p = sub.add_parser(
        "export",
        help="write the store's readings, alerts, duties, site log and rain log as CSV or Parquet",
        description="From the live store (read only): one file per table with a site column, "
        "for one or more sites and a time range, to load into pandas or a spreadsheet.",
    )
    add_export_options(p)
    p.set_defaults(func=cmd_export)


def cmd_export(args: argparse.Namespace) -> int:
    """Readings, alerts, duties, site log and rain log as CSV or Parquet (ingest/outputs/export_cli.py)."""
    from ingest.outputs.export_cli import run_export

    return run_export(args)


def _report_parser(sub: Any) -> None:
    p = sub.add_parser(
        "report",
        help="write the inspector's report (rain log, storms, inspections, duties, alerts, "
        "plots) as HTML or PDF",
        description="From the live store: the report of a site for a range of its local days, "
        "as one self-contained HTML page, or printed to PDF with headless Chromium.",
    )
    _site_and_store_options(p)
    p.add_argument(
        "--from", dest="date_from", required=True, metavar="YYYY-MM-DD", help="first local day"
    )
    p.add_argument(
        "--to",
        dest="date_to",
        required=True,
        metavar="YYYY-MM-DD",
        help="last local day (included)",
    )
    p.add_argument(
        "--out", required=True, metavar="FILE.html|FILE.pdf", help="the report; .pdf prints it"
    )
    p.set_defaults(func=cmd_report)


def cmd_report(args: argparse.Namespace) -> int:
    """The inspector's report as HTML or PDF (console/report/cli.py)."""
    from console.report.cli import run_report

    return run_report(args)


LOG_AHEAD_S = 300.0  # the live service refuses entries dated further ahead (serve's skew bound)
PUBACK_WAIT_S = 15.0


def _log_parser(sub: Any) -> None:
    from siltwatch.vocabulary import Milestone, SiteEvent

    p = sub.add_parser(
        "log",
        help="record what was done on the site (the site log) through the live service",
        description="Publish one site-log entry on the site's log topic (QoS 1) and wait for "
        "the broker's acknowledgement; 'siltwatch serve' stores it and its detections take it "
        "in event time. Area events (disturbed, cleared, graded, active, inactive, "
        "temporary_cover, permanent_cover) name --area; milestone and notice name the "
        "milestone as --detail (" + ", ".join(m.value for m in Milestone) + "); "
        "corrective_action takes the alert id and what was done as --detail.",
    )
    p.add_argument("event", metavar="EVENT", choices=[e.value for e in SiteEvent], help="one of "
                   + ", ".join(e.value for e in SiteEvent))  # fmt: skip
    _site_option(p)
    add_broker_options(p)
    p.add_argument("--area", metavar="AREA", help="the area's id in the site file")
    p.add_argument("--by", metavar="NAME", help="who did it (default: your login name)")
    p.add_argument("--detail", metavar="TEXT", help="the milestone, or what was done")
    p.add_argument(
        "--time",
        metavar="ISO",
        help="when it happened, ISO 8601 with an offset (default: now); for inactive, "
        "the last day of substantial work",
    )
    p.set_defaults(func=cmd_log)


def cmd_log(args: argparse.Namespace) -> int:
    """Publish one site-log entry (QoS 1) and wait for the broker's PUBACK."""
    import time

    from siltwatch.config import load_site
    from siltwatch.schema import iso_utc, site_log_topic

    try:
        site = load_site(Path(args.site))
    except ConfigError as exc:
        _err(exc.lines)
        return EXIT_FAIL
    try:
        record = _site_log_record(args, site, now_ms=int(time.time() * 1000))
        broker = broker_settings(args)
    except ValueError as exc:
        _err([str(exc)])
        return EXIT_FAIL
    topic = site_log_topic(site.site.id)
    import os

    from ingest.mqtt.publish import NotAcknowledged, publish_acknowledged

    try:
        publish_acknowledged(
            broker,
            topic,
            record.model_dump_json().encode(),
            client_id=f"siltwatch-log-{os.getpid()}",
            timeout_s=PUBACK_WAIT_S,
            refused_hint="may this user write the site's log?",
        )
    except NotAcknowledged as exc:
        maybe = "; it may not have been logged" if exc.maybe_sent else ""
        _err([f"{exc}{maybe}"])
        return EXIT_FAIL
    where = f" in {record.area}" if record.area else ""
    detail = f" ({record.detail})" if record.detail else ""
    print(
        f"logged {record.event.value}{where}{detail} by {record.by} at "
        f"{iso_utc(record.time)} on {topic}: acknowledged by {broker.url}"
    )
    return EXIT_OK


def _site_log_record(args: argparse.Namespace, site: Any, *, now_ms: int) -> Any:
    """The entry the options describe, checked against the site; ValueError says what is wrong."""
    from pydantic import ValidationError

    from analytics.timeutil import from_ms
    from ingest.recordings.csv_rows import parse_time
    from siltwatch.schema import SiteLogRecord, site_log_problem
    from siltwatch.vocabulary import SiteEvent, milestone_of, milestone_problem

    event = SiteEvent(args.event)
    if event in (SiteEvent.MILESTONE, SiteEvent.NOTICE):  # typed in words, or as its id
        milestone = milestone_of(args.detail or "")
        if milestone is None:
            raise ValueError(f"--detail: the {event} {milestone_problem(args.detail)}")
        args.detail = milestone.value
    areas = [area.id for area in site.areas]
    known = f"the areas of site {site.site.id!r}: {', '.join(areas) or 'none'}"
    problem = site_log_problem(event, args.area, args.detail)
    if problem is not None:
        option, why = problem
        raise ValueError(f"--{option}: {why}" + (f" ({known})" if option == "area" else ""))
    if args.area is not None and args.area not in areas:
        raise ValueError(f"--area: {args.area!r} is not an area of the site ({known})")
    t = now_ms
    if args.time is not None:
        try:
            t = parse_time(args.time)
        except ValueError as exc:
            raise ValueError(f"--time: {exc}") from None
        if t > now_ms + LOG_AHEAD_S * 1000:
            raise ValueError(
                f"--time: {args.time} is ahead of now; the live service refuses entries dated "
                f"more than {LOG_AHEAD_S:.0f} s ahead (give the time it happened)"
            )
    by = args.by if args.by is not None else _login_name()
    try:
        return SiteLogRecord(
            site=site.site.id,
            time=from_ms(t),
            event=event,
            area=args.area,
            by=by,
            detail=args.detail,
        )
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ValueError(f"--{where}: {first['msg'].removeprefix('Value error, ')}") from None


def _login_name() -> str:
    import getpass

    try:
        return getpass.getuser()
    except (KeyError, OSError):
        raise ValueError("--by: say who did it (your login name is not known here)") from None


def _demo_parser(sub: Any) -> None:
    p = sub.add_parser("demo", help="run siltwatch on its embedded defaults with a scripted storm")
    p.add_argument(
        "--out", default="out/demo", metavar="DIR", help="where the alert log and outputs go"
    )
    p.add_argument(
        "--web",
        metavar="HOST:PORT",
        help="after the scripted week, serve the web console here (e.g. 127.0.0.1:8080) "
        "until Ctrl-C; a demo account's password is printed",
    )
    p.add_argument(
        "--examples", default=str(REPO_EXAMPLES), metavar="DIR", help="the examples folder"
    )
    p.set_defaults(func=cmd_demo)


def cmd_demo(args: argparse.Namespace) -> int:
    from app.demo import run_demo

    return run_demo(Path(args.out), examples=Path(args.examples), web=args.web)


def _record_parser(sub: Any) -> None:
    p = sub.add_parser("record", help="capture a site's MQTT traffic to JSONL for replay")
    p.add_argument("site_id", metavar="SITE_ID", help="the site id (topic level)")
    p.add_argument(
        "--out", required=True, metavar="CAPTURE.jsonl", help="the capture file (appended)"
    )
    add_broker_options(p)
    p.add_argument("--seconds", type=float, help="stop after this long (default: until Ctrl-C)")
    p.set_defaults(func=cmd_record)


def cmd_record(args: argparse.Namespace) -> int:
    import time

    from ingest.recordings.capture import Recorder
    from siltwatch.schema import site_subscription

    try:
        broker = broker_settings(args)
    except ValueError as exc:
        _err([str(exc)])
        return EXIT_FAIL
    rec = Recorder(args.site_id, Path(args.out), broker, clock_ms=lambda: int(time.time() * 1000))
    try:
        rec.start()
    except OSError as exc:  # refused, unreachable, or a TLS handshake that failed
        _err([f"cannot reach the broker at {broker.url}: {exc}"])
        return EXIT_FAIL
    print(
        f"recording {site_subscription(args.site_id)} from {broker.url} to {args.out}; "
        "Ctrl-C to stop"
    )
    try:
        deadline = None if args.seconds is None else time.monotonic() + args.seconds
        while deadline is None or time.monotonic() < deadline:
            time.sleep(0.2)
    except KeyboardInterrupt:
        pass
    finally:
        rec.stop()
    print(f"recorded {rec.count} messages to {args.out}")
    return EXIT_OK


def _serve_parser(sub: Any) -> None:
    p = sub.add_parser(
        "serve", help="run the live ingest service for one site against an MQTT broker"
    )
    add_serve_options(p)
    _influx_options(p)
    p.set_defaults(func=cmd_serve)


def cmd_serve(args: argparse.Namespace) -> int:
    from app.serve import cmd_serve as serve

    return serve(args, _influx_writer)


def _console_parser(sub: Any) -> None:
    p = sub.add_parser(
        "console",
        help="serve the web console alone, over every site of a fleet (all partitions)",
        description="One web console over every site given, reading the workers' store (it "
        "writes only its own accounts and notes) and sending what people record over MQTT, "
        "QoS 1, to the site's worker (docs/fleet.md, 'One console for every partition').",
    )
    add_console_options(p)
    p.set_defaults(func=cmd_console)


def cmd_console(args: argparse.Namespace) -> int:
    """The web console alone, over every site of a fleet (app/console_cmd.py)."""
    from app.console_cmd import run_console

    return run_console(args)


def _influx_mirror(args: argparse.Namespace, site: Any) -> Any:
    """The InfluxDB mirror of one site the options ask for, or None; ValueError for bad options."""
    from ingest.influx.mirror import InfluxMirror

    writer = _influx_writer(args)
    # Ingest only queues; a MirrorFlusher thread (serve) or the replay's loader writes.
    return None if writer is None else InfluxMirror(site, writer, auto_flush=False)


def _influx_writer(args: argparse.Namespace) -> Any:
    """The InfluxDB writer (v1 or v2) the --influx-… options ask for, or None; ValueError for
    bad options. One site's mirror or a fleet's mirrors write through it."""
    from ingest.influx.mirror import InfluxV1Writer, InfluxV2Writer, RetryPolicy

    once = RetryPolicy(attempts=1)  # the mirror retries across calls; never sleep under the lock
    if args.influx_url and args.influx_v2_url:
        raise ValueError("give either --influx-url (InfluxDB 1.x) or --influx-v2-url, not both")
    if args.influx_url:
        if not args.influx_db:
            raise ValueError("--influx-url needs --influx-db")
        writer: Any = InfluxV1Writer(
            args.influx_url,
            args.influx_db,
            username=args.influx_user,
            password=read_secret(args.influx_password_file, "InfluxDB password"),
            retry=once,
        )
    elif args.influx_v2_url:
        missing = [
            flag
            for flag, value in (
                ("--influx-org", args.influx_org),
                ("--influx-bucket", args.influx_bucket),
                ("--influx-token-file", args.influx_token_file),
            )
            if not value
        ]
        if missing:
            raise ValueError(f"--influx-v2-url needs {', '.join(missing)}")
        token = read_secret(args.influx_token_file, "InfluxDB token") or ""
        writer = InfluxV2Writer(
            args.influx_v2_url,
            org=args.influx_org,
            bucket=args.influx_bucket,
            token=token,
            retry=once,
        )
    else:
        return None
    return writer


def _influx_options(
    p: argparse.ArgumentParser,
    title: str = "InfluxDB mirror for Grafana (optional; SQLite stays the record)",
) -> None:
    g = p.add_argument_group(title)
    g.add_argument("--influx-url", metavar="URL", help="InfluxDB 1.x: http://host:8086")
    g.add_argument("--influx-db", metavar="DB", help="InfluxDB 1.x database")
    g.add_argument("--influx-user", metavar="USER", help="InfluxDB 1.x user")
    g.add_argument("--influx-password-file", metavar="FILE", help="file holding its password")
    g.add_argument(
        "--influx-v2-url", metavar="URL", help="InfluxDB 2.x/3.x (or 1.8+): /api/v2/write"
    )
    g.add_argument("--influx-org", metavar="ORG", help="InfluxDB 2.x organization")
    g.add_argument("--influx-bucket", metavar="BUCKET", help="InfluxDB 2.x bucket")
    g.add_argument("--influx-token-file", metavar="FILE", help="file holding the API token")


def _dashboards_parser(sub: Any) -> None:
    p = sub.add_parser(
        "dashboards",
        help="build the Grafana dashboards and provisioning, or push them to a Grafana",
        description="One dashboard per site in raw InfluxQL (docs/dashboards.md). With --out: "
        "provisioning YAML and dashboard JSON into DIR; with --push: the data source and "
        "dashboards to a running Grafana; with neither: print the dashboards' JSON.",
    )
    p.add_argument(
        "--site", action="append", required=True, metavar="SITE.toml", help="a site (repeatable)"
    )
    p.add_argument("--out", metavar="DIR", help="write provisioning files and dashboards here")
    p.add_argument(
        "--dashboards-path",
        default="/var/lib/grafana/dashboards/siltwatch",
        metavar="PATH",
        help="where Grafana sees DIR/dashboards (the provider file names it)",
    )
    p.add_argument("--influx-url", default="http://influxdb:8086", metavar="URL")
    p.add_argument("--influx-db", default="siltwatch", metavar="DB", help="database (2.x: DBRP)")
    p.add_argument("--influx-version", choices=["1", "2"], default="1")
    p.add_argument("--influx-user", metavar="USER", help="InfluxDB 1.x user for Grafana")
    p.add_argument(
        "--prometheus-url",
        default="http://prometheus:9090",
        metavar="URL",
        help="the Prometheus scraping `serve --metrics`, for the service's own dashboard",
    )
    p.add_argument("--push", metavar="GRAFANA_URL", help="push to this Grafana over its HTTP API")
    p.add_argument("--token-file", metavar="FILE", help="file holding the Grafana token")
    p.add_argument(
        "--influx-secret-file",
        metavar="FILE",
        help="file holding the InfluxDB password (1.x) or token (2.x) Grafana should use",
    )
    p.set_defaults(func=cmd_dashboards)


def cmd_dashboards(args: argparse.Namespace) -> int:
    from dashboards.provisioning import InfluxSource, PrometheusSource, write_provisioning
    from siltwatch.config import load_site

    sites = []
    for path in args.site:
        try:
            sites.append(load_site(Path(path)))
        except ConfigError as exc:
            _err(exc.lines)
            return EXIT_FAIL
    source = InfluxSource(
        args.influx_url, args.influx_db, version=args.influx_version, user=args.influx_user
    )
    if args.out:
        written = write_provisioning(
            Path(args.out),
            sites,
            source,
            prometheus=PrometheusSource(args.prometheus_url),
            dashboards_path=args.dashboards_path,
        )
        print(f"wrote {len(written)} files to {args.out}/")
    if args.push:
        from dashboards.push import PushError, push

        if not args.token_file:
            _err(["--push needs --token-file (a Grafana service account token)"])
            return EXIT_USAGE
        try:
            token = read_secret(args.token_file, "Grafana token") or ""
            secret = read_secret(args.influx_secret_file, "InfluxDB password or token")
            result = push(
                args.push,
                token,
                sites,
                source,
                influx_secret=secret,
                prometheus=PrometheusSource(args.prometheus_url),
            )
        except (ValueError, PushError) as exc:
            _err([str(exc)])
            return EXIT_FAIL
        print(
            f"pushed to {args.push}: data source {result.datasource}, Prometheus data source "
            f"{result.prometheus}; dashboards " + ", ".join(result.dashboards)
        )
    if not args.out and not args.push:
        print(dashboards_json(sites))
    return EXIT_OK


def dashboards_json(sites: Sequence[Any]) -> str:
    from dashboards.build import build_dashboard

    return json.dumps([build_dashboard(s) for s in sites], indent=2, sort_keys=True)


def _users_parser(sub: Any) -> None:
    p = sub.add_parser(
        "users",
        help="manage the web console's accounts (add, grant, revoke, passwd, remove, list)",
        description="ACTION is add, grant, revoke, passwd, remove or list; "
        "'siltwatch users ACTION --help' describes each.",
    )
    p.add_argument("users_args", nargs=argparse.REMAINDER, metavar="ACTION ...")
    p.set_defaults(func=cmd_users)


def cmd_users(args: argparse.Namespace) -> int:
    from console.users_cli import main as users_main

    return users_main(args.users_args)


def _edge_parser(sub: Any) -> None:
    p = sub.add_parser("edge", help="run the Raspberry Pi edge agent")
    p.add_argument(
        "--config", required=True, metavar="EDGE.toml", help="the station's agent configuration"
    )
    p.add_argument("--check", action="store_true", help="only check the configuration, then exit")
    p.set_defaults(func=cmd_edge)


def cmd_edge(args: argparse.Namespace) -> int:
    from edge.agent import main as edge_main

    argv = ["--config", args.config] + (["--check"] if args.check else [])
    # The agent says 2 for a bad config; for siltwatch that is bad input: 1.
    return EXIT_FAIL if edge_main(argv) else EXIT_OK


# --- the table of commands ---------------------------------------------------------

# The commands, in the order ``siltwatch --help`` lists them; each declares its own parser.
COMMANDS: tuple[Callable[[Any], None], ...] = (
    _version_parser,
    _config_parser,
    _schema_parser,
    _replay_parser,
    _log_parser,
    _records_parser,
    _export_parser,
    add_import_parser,
    _report_parser,
    _demo_parser,
    _serve_parser,
    add_broker_acl_parser,
    _console_parser,
    _dashboards_parser,
    _record_parser,
    _users_parser,
    _edge_parser,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="siltwatch",
        description="Watch construction-site stormwater controls and alert when a site breaks the "
        "erosion and sediment control law.",
    )
    parser.add_argument("--version", action=_VersionAction, help="print the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for add_parser in COMMANDS:
        add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except ModuleNotFoundError as exc:
        # One place for every command: without the server extra, say so in one line.
        missing = (exc.name or "").partition(".")[0]
        if missing not in SERVER_MODULES:
            raise
        command = " ".join(filter(None, (args.command, getattr(args, "config_command", None))))
        _err(
            [
                f"'siltwatch {command}' needs the server parts (missing module {missing!r}): "
                "pip install 'siltwatch[server]'"
            ]
        )
        return EXIT_FAIL
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except OSError as exc:
        _err([f"{exc.filename or ''}: {exc.strerror or exc}"])
        return EXIT_FAIL


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
