"""``siltwatch console``: one web console over every site of a fleet, apart from its workers.

A fleet is N ``serve --partition k/N`` workers on one PostgreSQL store; each can
serve the console with ``--http``, but only over its own partition. This
command serves the console alone, over every site file given, reading the
shared store: it claims no writer lock and writes none of the store's tables
(only the console's own book: accounts, acknowledgements, notes, audit). What
people record goes to the site's worker over MQTT (console/mqtt_desk.py), as a
field tablet's record does. Acknowledgements (in the console, by link, by SMS)
are written to the book in the same database, where every worker's delivery
reads them, so they stop escalations whichever worker raised the alert.

It holds no state of its own, so any number of replicas may run behind a load
balancer. SIGTERM and SIGINT stop it: the HTTP server closes, then the store and
the book. A bad site file, a store without the siltwatch schema, or an address
that cannot be had end the start with one line on stderr and exit 1.
"""

from __future__ import annotations

import argparse
from typing import Any

from app.serve import add_broker_options, add_site_files_options, add_trusted_proxy_option
from app.serving import (
    EXIT_FAIL,
    EXIT_OK,
    Stopping,
    Voice,
    broker_settings,
    now_ms,
    read_secret,
)
from siltwatch.configerrors import ConfigError
from siltwatch.site_files import read_site_files, site_paths


def add_console_options(p: argparse.ArgumentParser) -> None:
    """The options of ``siltwatch console`` (the broker's are serve's own)."""
    add_site_files_options(
        p,
        site="a site file (repeatable)",
        sites="every site file (*.toml with a [site] table) in DIR: all partitions' sites",
    )
    p.add_argument(
        "--db",
        required=True,
        metavar="FILE|URL",
        help="the workers' store (postgresql://… for a fleet, or a SQLite file); read only, "
        "besides the console's own accounts and notes",
    )
    p.add_argument("--http", required=True, metavar="HOST:PORT", help="serve the console here")
    add_trusted_proxy_option(p)
    add_broker_options(p)
    p.add_argument(
        "--public-url",
        metavar="URL",
        help="where people and the SMS gateway reach the console (https://...), for Twilio's "
        "signature check and Secure cookies (default: http://HOST:PORT of --http)",
    )
    p.add_argument(
        "--twilio-token-file",
        metavar="FILE",
        help="file holding the SMS gateway's auth token (the workers' NOTIFY.toml "
        "sms.auth_token_file), to take acknowledgements by SMS reply; without it "
        "inbound SMS is refused",
    )
    p.add_argument("--log-json", action="store_true", help="log one JSON object per line")


def run_console(args: argparse.Namespace) -> int:
    """Serve the console until SIGTERM/SIGINT; 1 (said on stderr) when it cannot start."""
    from siltwatch.logjson import configure_logging

    configure_logging(json_lines=args.log_json)
    voice = Voice(args.log_json)
    parts = voice.checked(lambda: _checked(args))
    if parts is None:
        return EXIT_FAIL
    sites, broker, listen, token = parts
    try:
        app = _app(args, sites, broker, token)
    except ValueError as exc:
        voice.err([str(exc)])
        return EXIT_FAIL
    return _serve(app, listen, sites, broker, voice, args.trusted_proxy)


def _checked(args: argparse.Namespace) -> tuple[dict[str, Any], Any, tuple[str, int], str | None]:
    """The sites, the broker, the listen address and the SMS token the options name;
    ConfigError or ValueError says what is wrong."""
    from console.server import parse_listen

    if not args.site and not args.sites:
        raise ValueError("give --sites DIR or --site SITE.toml (once or more)")
    found = read_site_files(site_paths(args.site or [], args.sites or []))
    if found.problems:
        raise ConfigError(found.lines)
    if not found.sites:
        raise ValueError(f"no site files in {', '.join(args.sites or args.site)}")
    try:
        listen = parse_listen(args.http)
    except ValueError as exc:
        raise ValueError(f"--http: {exc}") from None
    broker = broker_settings(args)
    token = read_secret(args.twilio_token_file, "SMS gateway auth token")
    return found.sites, broker, listen, token


def _app(args: argparse.Namespace, sites: dict[str, Any], broker: Any, token: str | None) -> Any:
    """The console app over the store; ValueError when the store cannot be read.

    The store is first opened read only: a database the workers have not made
    yet (or of another schema version) is refused with the reason, and the
    console's own open then finds the schema in place and changes nothing.
    """
    from console.app import make_app
    from console.book import BookError
    from console.mqtt_desk import MqttDesk
    from ingest.store.from_url import open_store_read_only
    from ingest.store.sqlite import StoreError

    try:
        open_store_read_only(args.db).close()
        desk = MqttDesk(sites, broker, now_ms)
        return make_app(sites, args.db, desk=desk, public_url=args.public_url, twilio_token=token)
    except (StoreError, BookError) as exc:
        raise ValueError(str(exc)) from None


def _serve(
    app: Any,
    listen: tuple[str, int],
    sites: dict[str, Any],
    broker: Any,
    voice: Voice,
    trusted_proxies: list[str],
) -> int:
    from console.server import ConsoleServer

    server = ConsoleServer(app, *listen, trusted_proxies=trusted_proxies)
    stopping = Stopping(Stopping.ENDING)
    stopping.install()
    try:
        if voice.json_lines:  # uvicorn set up its own handlers when the server was made
            from siltwatch.logjson import adopt_uvicorn_logs

            adopt_uvicorn_logs()
        try:
            server.start()
        except OSError as exc:
            voice.err([f"--http {listen[0]}:{listen[1]}: the web console cannot listen: {exc}"])
            return EXIT_FAIL
        store = app.state.console.store
        voice.say(
            f"siltwatch console for {len(sites)} sites ({_shown(sorted(sites))}) on "
            f"{server.url}; store {store.where} (read only); records sent to the sites' "
            f"workers through {broker.url}; Ctrl-C or SIGTERM to stop"
        )
        stopping.wait()
    finally:
        stopping.restore()
        server.stop()
        app.state.console.close()
    voice.say("stopped")
    return EXIT_OK


def _shown(ids: list[str]) -> str:
    if len(ids) <= 6:
        return ", ".join(ids)
    return ", ".join(ids[:4]) + f" and {len(ids) - 4} more"
