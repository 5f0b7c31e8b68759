"""The house's rules that import-linter cannot state: every package under the contracts,
and analytics that do no I/O and read no clock."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CONTRACTS = ROOT / ".importlinter"
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


def installed_folders() -> set[str]:
    """The folders the wheel carries: setup.py's ``FOLDERS``."""
    tree = ast.parse((ROOT / "setup.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "FOLDERS" for t in node.targets
        ):
            return set(ast.literal_eval(node.value))
    raise AssertionError("setup.py declares no FOLDERS")


def contract_roots() -> list[str]:
    """The packages .importlinter's contracts hold."""
    text = CONTRACTS.read_text(encoding="utf-8")
    return text.split("root_packages =", 1)[1].split("[", 1)[0].split()


def test_every_production_package_is_under_the_contracts() -> None:
    """Who may import whom is .importlinter's (checked by ``lint-imports`` in ``make lint``);
    a package the contracts do not name would escape them, so each installed one must be named."""
    installed = installed_folders()
    text = CONTRACTS.read_text(encoding="utf-8")
    roots = contract_roots()
    assert installed == set(roots), (
        f"setup.py installs {sorted(installed)}, .importlinter names {roots}"
    )
    assert "ignore_imports" not in text, "the house has no exemptions: move the helper down instead"


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
    sample.write_text("import time\nfrom ingest.store.sqlite import X\nopen('f')\ndatetime.now()\n")
    assert imported_packages(sample) == {"time", "ingest"}
    assert forbidden_calls(sample) == {"open()", ".now()"}
