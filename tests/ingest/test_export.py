"""``siltwatch export``: the store's tables out as CSV and Parquet, for pandas and Excel.

A real SQLite store written the way ``serve`` writes it — the Lake George and
Lake Lure example weeks through the ingest service (tests/console/app_world.py),
plus the June records ``siltwatch records`` is tested on (test_records.py) —
is exported, the files read back with the csv module and pyarrow, and every
row compared with what the store holds, read from the file with plain SQL.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from analytics.events import SensorReading
from analytics.timeutil import from_ms, to_ms
from app.cli import main
from ingest.outputs import export, export_cli
from ingest.outputs.records import export_records, parse_day
from ingest.store.sqlite import SqliteStore
from siltwatch.config import load_site
from tests.console.app_world import fill_week
from tests.console.field_world import store_a_checklist
from tests.ingest.test_records import SITE, fill, rows

ROOT = Path(__file__).resolve().parents[2]
LG_FILE, LL_FILE = SITE, ROOT / "examples" / "lake-lure-site.toml"
LG, LL = load_site(LG_FILE), load_site(LL_FILE)
SITES = {LG.site.id: LG, LL.site.id: LL}
BOTH = ["--site", str(LG_FILE), "--site", str(LL_FILE)]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Both example weeks and the June records in one store; one alert late, one withdrawn."""
    db = tmp_path_factory.mktemp("export") / "siltwatch.sqlite3"
    fill_week(db)
    fill_week(db, LL, "lake-lure")
    fill(db)
    store = SqliteStore(db)
    try:
        first, second, *_ = store.alerts(LG.site.id)
        store.save_alert(LG.site.id, first, late=True)
        store.withdraw_alert(LG.site.id, second)
        store_a_checklist(store)  # the field desk's tables
    finally:
        store.close()
    return db


@dataclass(frozen=True)
class Run:
    code: int
    out: str
    err: str


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str], world: Path) -> Iterator[Any]:
    """``siltwatch export --db WORLD ...`` in this process (the options after --db)."""

    def go(*argv: str, db: Path = world) -> Run:
        code = main(["export", "--db", str(db), *argv])
        seen = capsys.readouterr()
        return Run(code, seen.out, seen.err)

    yield go


def sql(db: Path, query: str, *args: object) -> list[tuple[Any, ...]]:
    """What the store holds, read with plain SQL (not through the code under test)."""
    con = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)
    try:
        return con.execute(query, args).fetchall()
    finally:
        con.close()


def stored_readings(db: Path, start: int = -(2**62), end: int = 2**62) -> dict[Any, Any]:
    found = sql(
        db,
        "SELECT site, sensor, t, station, value, seq, flags FROM readings WHERE t >= ? AND t < ?",
        start,
        end,
    )
    return {(s, sensor, t): (station, v, q, f) for s, sensor, t, station, v, q, f in found}


def ms(text: str) -> int:
    return to_ms(datetime.fromisoformat(text))


def csv_readings(path: Path) -> dict[Any, Any]:
    found = rows(path)
    table = {
        (r["site"], r["sensor"], ms(r["time_utc"])): (
            r["station"],
            float(r["value"]),
            int(r["seq"]) if r["seq"] else None,
            r["flags"],
        )
        for r in found
    }
    assert len(table) == len(found)  # no reading twice
    return table


def parquet_rows(path: Path) -> list[dict[str, Any]]:
    rows_: list[dict[str, Any]] = pq.read_table(path).to_pylist()
    return rows_


def as_text(value: object) -> str:
    """A Parquet cell as the CSV writes it, to compare the two files cell by cell."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value)


def csv_cell_for_parquet(value: str, kind: pa.DataType) -> str:
    """A CSV cell brought to ``as_text``'s form for the column's Parquet type."""
    if value and pa.types.is_timestamp(kind):
        return datetime.fromisoformat(value).isoformat()
    if value and pa.types.is_floating(kind):
        return str(float(value))
    return value


def test_the_command_writes_every_stored_row_of_both_sites(world: Path, tmp_path: Path) -> None:
    out = tmp_path / "csv"
    done = subprocess.run(
        [sys.executable, "-m", "app.cli", "export", "--db", str(world), *BOTH],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert done.returncode == 2 and "--out" in done.stderr  # argparse: --out is required
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "app.cli",
            "export",
            "--db",
            str(world),
            *BOTH,
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert csv_readings(out / "readings.csv") == stored_readings(world)

    stored_alerts = sql(world, "SELECT site, id, late, withdrawn, body FROM alerts")
    alerts = {(r["site"], r["id"]): r for r in rows(out / "alerts.csv")}
    assert set(alerts) == {(s, i) for s, i, *_ in stored_alerts}
    assert {r["late"] for r in alerts.values()} == {"true", "false"}
    assert {r["withdrawn"] for r in alerts.values()} == {"true", "false"}
    for site, ident, late, withdrawn, body in stored_alerts:
        row, alert = alerts[site, ident], json.loads(body)
        assert (row["late"], row["withdrawn"]) == (
            str(bool(late)).lower(),
            str(bool(withdrawn)).lower(),
        )
        assert (row["rule"], row["message"], row["severity"]) == (
            alert["rule"],
            alert["message"],
            alert["severity"],
        )
        assert json.loads(row["evidence"]) == alert["evidence"]
        assert ms(row["opened_utc"]) == ms(alert["opened_at"]) == ms(row["opened_local"])

    stored_duties = sql(world, "SELECT site, id, completed_at FROM duties")
    duties = {(r["site"], r["id"]): r for r in rows(out / "duties.csv")}
    assert set(duties) == {(s, i) for s, i, _ in stored_duties}
    for site, ident, completed in stored_duties:
        shown = duties[site, ident]["completed_utc"]
        assert (ms(shown) if shown else None) == (ms(completed) if completed else None)

    log = [
        (r["site"], ms(r["time_utc"]), r["event"], r["area"], r["by"], r["detail"])
        for r in rows(out / "site_log.csv")
    ]
    assert log == sql(
        world,
        "SELECT site, t, event, area, who, detail FROM site_log ORDER BY site = ?, t, id",
        LL.site.id,
    )
    written = {line.split()[0]: line.split()[1] for line in done.stdout.splitlines()[2:]}
    tables = {name: f"{len(rows(out / f'{name}.csv')):,}" for name in export.TABLE_NAMES}
    assert written == {**tables, "photos": "2"}  # the field desk's photos, as files


def test_local_times_are_the_site_zone_of_the_same_instant(
    world: Path, tmp_path: Path, run: Any
) -> None:
    assert run(*BOTH, "--out", str(tmp_path), "--tables", "readings,duties").code == 0
    readings = rows(tmp_path / "readings.csv")
    for r in readings[:: max(1, len(readings) // 500)]:
        local = datetime.fromisoformat(r["time_local"])
        zone = SITES[r["site"]].site.zone
        assert ms(r["time_local"]) == ms(r["time_utc"])
        assert local.utcoffset() == from_ms(ms(r["time_utc"])).astimezone(zone).utcoffset()
        assert r["unit"] == SITES[r["site"]].sensor(r["sensor"]).unit
    for d in rows(tmp_path / "duties.csv"):
        assert ms(d["due_local"]) == ms(d["due_utc"])
        assert (d["completed_local"] == "") == (d["completed_utc"] == "")


def test_parquet_holds_the_csv_rows_typed_in_row_groups(
    world: Path, tmp_path: Path, run: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(export, "READING_CHUNK", 4_999)  # chunks that split an instant's readings
    assert run(*BOTH, "--out", str(tmp_path / "csv")).code == 0
    assert run(*BOTH, "--out", str(tmp_path / "pq"), "--format", "parquet").code == 0
    assert csv_readings(tmp_path / "csv" / "readings.csv") == stored_readings(world)

    stored = sql(world, "SELECT count(*) FROM readings")[0][0]
    readings = pq.ParquetFile(tmp_path / "pq" / "readings.parquet")
    assert readings.metadata.num_rows == stored
    assert readings.metadata.num_row_groups == -(-stored // 4_999)
    schema = readings.schema_arrow
    assert schema.field("time_utc").type == pa.timestamp("ms", tz="UTC")
    assert (schema.field("value").type, schema.field("seq").type) == (pa.float64(), pa.int64())
    alerts_schema = pq.read_schema(tmp_path / "pq" / "alerts.parquet")
    assert alerts_schema.field("late").type == pa.bool_()
    assert pq.read_schema(tmp_path / "pq" / "rain_log.parquet").field("date").type == pa.date32()

    for name in export.TABLE_NAMES:
        table = pq.read_table(tmp_path / "pq" / f"{name}.parquet")
        kinds = {f.name: f.type for f in table.schema}
        from_parquet = [{k: as_text(v) for k, v in r.items()} for r in table.to_pylist()]
        from_csv = [
            {k: csv_cell_for_parquet(v, kinds[k]) for k, v in r.items()}
            for r in rows(tmp_path / "csv" / f"{name}.csv")
        ]
        assert from_parquet == from_csv, name
        assert from_csv, f"{name} is empty: the comparison would prove nothing"


def test_an_instant_range_takes_its_start_and_leaves_its_end(
    world: Path, tmp_path: Path, run: Any
) -> None:
    times = [t for (t,) in sql(world, "SELECT DISTINCT t FROM readings ORDER BY t")]
    (storm,) = sql(world, "SELECT min(opened_at) FROM alerts")  # a range the storm falls in
    at = next(i for i, t in enumerate(times) if t >= ms(storm[0]))
    start, end = times[at - 100], times[at + 100]
    zone = LG.site.zone
    to_text = from_ms(end).astimezone(zone).isoformat()  # an offset other than Z
    done = run(*BOTH, "--out", str(tmp_path), "--from", from_ms(start).isoformat(), "--to", to_text)
    assert done.code == 0, done.err

    got = csv_readings(tmp_path / "readings.csv")
    assert got == stored_readings(world, start, end)
    assert min(t for _, _, t in got) == start and max(t for _, _, t in got) < end
    assert {s for s, _, _ in got} == set(SITES)

    expected_alerts = {
        (site, ident)
        for site, ident, opened, resolved in sql(
            world, "SELECT site, id, opened_at, resolved_at FROM alerts"
        )
        if ms(opened) < end and (resolved is None or ms(resolved) >= start)
    }
    assert {(r["site"], r["id"]) for r in rows(tmp_path / "alerts.csv")} == expected_alerts
    assert expected_alerts  # the week's storm alerts were open then ...
    assert len(expected_alerts) < len(sql(world, "SELECT id FROM alerts"))  # ... not all
    log_times = [ms(r["time_utc"]) for r in rows(tmp_path / "site_log.csv")]
    assert all(start <= t < end for t in log_times)
    assert (
        len(log_times)
        == sql(world, "SELECT count(*) FROM site_log WHERE t >= ? AND t < ?", start, end)[0][0]
    )


def test_local_dates_take_whole_local_days_and_a_local_time_is_the_sites(
    world: Path, tmp_path: Path, run: Any
) -> None:
    day = date(2026, 5, 5)
    assert (
        run(
            *BOTH, "--out", str(tmp_path / "day"), "--from", "2026-05-05", "--to", "2026-05-05"
        ).code
        == 0
    )
    readings = rows(tmp_path / "day" / "readings.csv")
    in_day = [
        key
        for key in stored_readings(world)
        if from_ms(key[2]).astimezone(SITES[key[0]].site.zone).date() == day
    ]
    assert len(readings) == len(in_day) > 0
    assert {r["time_local"][:10] for r in readings} == {day.isoformat()}
    assert min(r["time_local"] for r in readings) == "2026-05-05T00:00:00-04:00"
    rain_days = {r["date"] for r in rows(tmp_path / "day" / "rain_log.csv")}
    assert rain_days == {day.isoformat()}

    assert (
        run(
            *BOTH,
            "--out",
            str(tmp_path / "naive"),
            "--from",
            "2026-05-05T06:00",
            "--to",
            "2026-05-05T07:00",
        ).code
        == 0
    )
    assert (
        run(
            *BOTH,
            "--out",
            str(tmp_path / "aware"),
            "--from",
            "2026-05-05T10:00Z",
            "--to",
            "2026-05-05T11:00Z",
        ).code
        == 0
    )
    naive = csv_readings(tmp_path / "naive" / "readings.csv")
    assert naive and naive == csv_readings(tmp_path / "aware" / "readings.csv")


def test_the_rain_log_and_site_log_are_what_records_writes(
    world: Path, tmp_path: Path, run: Any
) -> None:
    store = SqliteStore(world)
    try:
        export_records(
            store, LG, tmp_path / "records", parse_day("2026-06-01"), parse_day("2026-06-03")
        )
    finally:
        store.close()
    done = run(
        "--site",
        str(LG_FILE),
        "--out",
        str(tmp_path / "export"),
        "--from",
        "2026-06-01",
        "--to",
        "2026-06-03",
    )
    assert done.code == 0, done.err

    rain = rows(tmp_path / "export" / "rain_log.csv")
    assert {r.pop("site") for r in rain} == {LG.site.id}
    assert rain == rows(tmp_path / "records" / "rain-log.csv")
    assert len(rain) >= 2  # the June days fill() stored

    log = rows(tmp_path / "export" / "site_log.csv")
    assert [
        {"time": r["time_local"], **{k: r[k] for k in ("event", "area", "by", "detail")}}
        for r in log
    ] == rows(tmp_path / "records" / "site-log.csv")
    assert log


@pytest.mark.parametrize(
    ("options", "says"),
    [
        (["--tables", "readings,rainlog"], "--tables: unknown table 'rainlog' (expected"),
        (
            ["--from", "2026-06-03", "--to", "2026-06-01"],
            "--from 2026-06-03 is not before --to 2026-06-01",
        ),
        (["--from", "2026-06-01T12:00Z", "--to", "2026-06-01T12:00Z"], "is not before --to"),
        (["--from", "last tuesday"], "--from: expected a date YYYY-MM-DD or an ISO 8601 time"),
        (["--site", str(LG_FILE)], "site 'lg-route9n' is also"),
    ],
)
def test_a_wrong_option_is_named_and_nothing_is_written(
    tmp_path: Path, run: Any, options: list[str], says: str
) -> None:
    done = run(*BOTH, "--out", str(tmp_path / "out"), *options)
    assert done.code == 1 and says in done.err, done.err
    assert not (tmp_path / "out").exists()


def test_a_missing_or_foreign_store_is_refused_and_not_created(tmp_path: Path, run: Any) -> None:
    missing = tmp_path / "nope.sqlite3"
    done = run(*BOTH, "--out", str(tmp_path / "out"), db=missing)
    assert done.code == 1 and f"{missing}: no such store" in done.err
    assert not missing.exists()  # looking did not create it
    text = tmp_path / "notes.txt"
    text.write_text("not a database\n" * 100)
    done = run(*BOTH, "--out", str(tmp_path / "out"), db=text)
    assert done.code == 1 and f"{text}: is not a usable siltwatch SQLite store" in done.err
    assert not (tmp_path / "out").exists()


def test_an_older_store_is_refused_not_upgraded(world: Path, tmp_path: Path, run: Any) -> None:
    old = tmp_path / "old.sqlite3"
    shutil.copy(world, old)
    con = sqlite3.connect(old)
    con.execute("PRAGMA user_version=3")
    con.close()
    done = run(*BOTH, "--out", str(tmp_path / "out"), db=old)
    assert done.code == 1 and "store schema v3" in done.err and "siltwatch serve" in done.err
    assert sql(old, "PRAGMA user_version") == [(3,)]


def test_a_site_the_store_does_not_hold_warns_and_exports_no_rows(
    world: Path, tmp_path: Path, run: Any
) -> None:
    ghost = tmp_path / "ghost-site.toml"
    ghost.write_text(LG_FILE.read_text().replace('id = "lg-route9n"', 'id = "ghost-hill"', 1))
    assert load_site(ghost).site.id == "ghost-hill"
    done = run("--site", str(ghost), "--site", str(LL_FILE), "--out", str(tmp_path / "out"))
    assert done.code == 0, done.err
    assert "warning:" in done.err and "'ghost-hill'" in done.err and str(ghost) in done.err
    for name in export.TABLE_NAMES:
        sites = {r["site"] for r in rows(tmp_path / "out" / f"{name}.csv")}
        assert sites == {LL.site.id}, name
    assert len(rows(tmp_path / "out" / "readings.csv")) == site_reading_count(world)


def site_reading_count(db: Path, site: str = LL.site.id) -> int:
    return int(sql(db, "SELECT count(*) FROM readings WHERE site = ?", site)[0][0])


def test_parquet_without_pyarrow_says_to_install_the_server_extra(
    world: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    hide = (
        "import sys\n"
        "sys.modules['pyarrow'] = None  # as if not installed: importing it fails\n"
        "from app.cli import main\n"
        f"sys.exit(main({['export', '--db', str(world), *BOTH, '--out', str(out), '--format', 'parquet']!r}))\n"
    )
    done = subprocess.run([sys.executable, "-c", hide], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 1, done.stderr
    assert "--format parquet needs pyarrow: pip install 'siltwatch[server]'" in done.stderr
    assert not out.exists()


def test_an_export_beside_a_live_writer_reads_what_is_committed(
    world: Path, tmp_path: Path, run: Any
) -> None:
    db = tmp_path / "live.sqlite3"
    shutil.copy(world, db)
    writer = SqliteStore(db, synchronous="FULL")
    try:
        writer.claim_writer("siltwatch serve")
        late = max(t for (t,) in sql(db, "SELECT t FROM readings")) + 60_000
        pending = writer.insert_readings(
            LG.site.id, [("basin-1", SensorReading("rain-1", late, 0.01))], 0
        )
        assert pending  # inside the writer's open transaction, not committed
        done = run(
            "--site", str(LG_FILE), "--out", str(tmp_path / "out"), "--tables", "readings", db=db
        )
        assert done.code == 0, done.err
        exported = csv_readings(tmp_path / "out" / "readings.csv")
        assert (LG.site.id, "rain-1", late) not in exported
        assert len(exported) == site_reading_count(db, LG.site.id)
        writer.db.commit()  # the writer carries on undisturbed
    finally:
        writer.close()
    assert sql(db, "SELECT count(*) FROM readings WHERE t = ?", late) == [(1,)]


def test_the_help_names_the_tables_and_formats_the_export_knows() -> None:
    assert export_cli.TABLES == export.TABLE_NAMES
    assert tuple(f.value for f in export.ExportFormat) == export_cli.FORMATS


@pytest.mark.integration
def test_an_export_from_postgresql_equals_the_export_from_sqlite(
    world: Path, postgres_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--db postgresql://…`` is read the same way: the same store, the same files."""
    from ingest.store.from_url import open_store

    source, target = SqliteStore.open_read_only(world), open_store(postgres_url)
    try:
        for site in source.sites():
            for chunk in source.readings_between(site, None, None):
                target.add_readings(site, chunk, 0)
            for entry in source.site_log(site):
                target.add_site_log(site, entry, 0)
            for ins in source.inspections_after(site, None):
                target.add_inspection(site, ins, 0)
            for stored in source.alert_records(site):
                target.save_alert(site, stored.alert, late=stored.late)
                if stored.withdrawn:
                    target.withdraw_alert(site, stored.alert)
            for duty in source.duties(site):
                target.save_duty(site, duty)
        store_a_checklist(target)  # as in the SQLite world
    finally:
        source.close()
        target.close()
    outs = {}
    for name, db in (("sqlite", str(world)), ("postgres", postgres_url)):
        out = tmp_path / name
        code = main(["export", "--db", db, *BOTH, "--out", str(out)])
        assert code == 0, capsys.readouterr().err
        files = sorted(p for p in out.rglob("*") if p.is_file())
        outs[name] = {str(p.relative_to(out)): p.read_bytes() for p in files}
    assert outs["postgres"] == outs["sqlite"]
    assert len(outs["sqlite"]) == 7 + 2 and all(outs["sqlite"].values())  # tables, photos


def test_the_field_desks_records_go_out_with_their_photos_as_files(
    run: Any, world: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """export: the checklist (content as signed, its hash, intact), the corrective action,
    and each photo as a file named by its SHA-256; records: the same for people."""
    out = tmp_path / "export"
    done = run(*BOTH, "--out", str(out))
    assert done.code == 0
    assert ["photos", "2", str(out / "photos")] in [line.split() for line in done.out.splitlines()]
    (record,) = rows(out / "field_records.csv")
    assert (record["site"], record["record"], record["intact"]) == (LL.site.id, "fr-stored", "true")
    assert hashlib.sha256(record["body"].encode()).hexdigest() == record["sha256"]
    (action,) = rows(out / "corrective_actions.csv")
    assert (action["practice"], action["owner"], action["closed_utc"]) == (
        "sf-lot1",
        "Dana Ruiz",
        "",
    )
    photos = sorted((out / "photos").iterdir())
    assert len(photos) == 2
    for photo in photos:
        assert photo.name == hashlib.sha256(photo.read_bytes()).hexdigest() + ".jpg"

    records = tmp_path / "records"
    code = main(["records", "--site", str(LL_FILE), "--db", str(world), "--out", str(records)])
    assert (
        code == 0
        and "1 field-desk checklists, 2 photos and 1 corrective actions" in capsys.readouterr().out
    )
    (line,) = rows(records / "field-inspections.csv")
    assert (line["signed_at"], line["intact"], line["photos"]) == (
        "2026-05-12 09:30 EDT",
        "yes",
        "2",
    )
    findings = rows(records / "field-findings.csv")
    assert [(f["item"], f["needs_maintenance"]) for f in findings][:2] == [
        ("sf-lot1", "yes"),
        ("ce-main", "no"),
    ]
    assert (
        findings[0]["photos"].startswith("photos/") and (records / findings[0]["photos"]).is_file()
    )
    body = (records / "field-records" / "fr-stored.json").read_bytes()
    assert hashlib.sha256(body).hexdigest() == line["sha256"]
    (closing,) = rows(records / "corrective-actions.csv")
    assert closing["due"] == "2026-05-19 09:30 EDT" and closing["closed"] == ""
