"""Who may import whom (README.md, "Folders"): the direction is checked, not hoped for."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OURS = {"siltwatch", "hardware", "edge", "ingest", "analytics", "alerts", "dashboards", "console"}
MAY_IMPORT = {
    "siltwatch": {"siltwatch"},
    "hardware": {"siltwatch", "hardware"},
    "edge": {"hardware", "siltwatch", "edge"},
    "ingest": {"analytics", "siltwatch", "ingest"},
    "analytics": {"siltwatch", "analytics"},
    "alerts": {"analytics", "siltwatch", "alerts"},
    "dashboards": {"siltwatch", "dashboards"},
    # The web console and the report: reads the store through ingest, acknowledgement
    # links and the delivery audit through alerts, rain days through analytics.
    "console": {"siltwatch", "ingest", "analytics", "alerts", "console"},
}
# Only the CLI (and the demo and the services it runs) wires the packages together.
WIRING = {
    ROOT / "siltwatch" / "cli.py",
    ROOT / "siltwatch" / "demo.py",
    ROOT / "siltwatch" / "serve.py",
    ROOT / "siltwatch" / "serve_fleet.py",
    ROOT / "siltwatch" / "fleet_notify.py",
    ROOT / "siltwatch" / "console_cmd.py",
}
# The analytics are pure: no I/O, no clock, no network, no database.
FORBIDDEN_IN_ANALYTICS = {
    "time",
    "os",
    "socket",
    "sqlite3",
    "subprocess",
    "logging",
    "paho",
    "io",
    "pathlib",
}


def imported_packages(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


def test_import_direction() -> None:
    problems = []
    for package, allowed in MAY_IMPORT.items():
        for path in sorted((ROOT / package).rglob("*.py")):
            if path in WIRING:
                continue
            bad = (imported_packages(path) & OURS) - allowed
            if bad:
                problems.append(f"{path.relative_to(ROOT)} imports {sorted(bad)}")
    assert not problems, "\n".join(problems)


def forbidden_calls(path: Path) -> set[str]:
    """Calls of the builtin open() and of clock reads (datetime.now(), date.today(), ...)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id == "open":
            found.add("open()")
        elif isinstance(func, ast.Attribute) and func.attr in ("now", "utcnow", "today"):
            found.add(f".{func.attr}()")
    return found


def test_analytics_do_no_io_and_read_no_clock() -> None:
    problems = []
    for path in sorted((ROOT / "analytics").rglob("*.py")):
        bad = (imported_packages(path) & FORBIDDEN_IN_ANALYTICS) | forbidden_calls(path)
        if bad:
            problems.append(f"{path.relative_to(ROOT)}: {sorted(bad)}")
    assert not problems, "\n".join(problems)


def test_the_checks_catch_what_they_look_for(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("import time\nfrom ingest.store import X\nopen('f')\ndatetime.now()\n")
    assert imported_packages(sample) == {"time", "ingest"}
    assert forbidden_calls(sample) == {"open()", ".now()"}
