"""docs/compliance-matrix.md: the ordinances provision by provision, held to the code.

The matrix says, for every provision of the three ordinances a monitoring tool
could act on, whether siltwatch enforces it, reminds about it, records it, plans
it or leaves it out, and where in the repository that happens. A matrix that
names a pack key, a module or a test that does not exist, or whose counts drift
from its rows, tells a town officer something untrue; these tests read the
markdown (never the ordinances: a clone carries only the matrix) and check that
every status is one of the five, ids are unique, the counts table adds up, every
backticked reference exists, and only built rows cite code.

A built row (enforced, reminded or recorded) must also name a test that shows it,
as ``tests/...py::test_name``, and every test a row names must be one pytest
really collects: a function that exists but is not a test (a helper, a test
renamed with a leading underscore, a file outside the test paths) shows nothing.
pytest's own collection of the named files, run once in a subprocess, decides.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MATRIX = ROOT / "docs" / "compliance-matrix.md"
PACKS = ROOT / "siltwatch" / "packs"

STATUSES = ("enforced", "reminded", "recorded", "planned", "out of scope")
BUILT = frozenset({"enforced", "reminded", "recorded"})
MATRIX_COLUMNS = ("id", "section", "provision", "status", "where")
COUNTS_COLUMNS = ("status", "rows")
MIN_ROWS = 100

BACKTICKED = re.compile(r"`([^`]*)`")
PACK_KEY = re.compile(r"[a-z][a-z0-9_]*(?:\.[a-z0-9_]+)+")
RULE_HEADER = re.compile(r'^\[rules\."([^"]+)"\]', re.MULTILINE)
TEST_REF = re.compile(r"tests/[A-Za-z0-9_/]+\.py::[A-Za-z_][A-Za-z0-9_]*")
COLLECT_TIMEOUT_S = 120
THIS = "tests/foundation/test_compliance_matrix.py"


@dataclass(frozen=True)
class Row:
    line: int
    id: str
    section: str
    provision: str
    status: str
    where: str

    def refs(self) -> list[str]:
        return BACKTICKED.findall(self.where)


def cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def tables(text: str) -> list[tuple[tuple[str, ...], list[tuple[int, list[str]]]]]:
    """Every markdown table: (header words, [(line number, cells)]) without the rule line.

    A header cell counts by its first word, so "where (pack key / module / test)" is
    the "where" column."""
    found: list[tuple[tuple[str, ...], list[tuple[int, list[str]]]]] = []
    block: list[tuple[int, str]] = []
    for number, line in enumerate([*text.splitlines(), ""], start=1):
        if line.lstrip().startswith("|"):
            block.append((number, line))
            continue
        if len(block) >= 2:
            header = tuple(c.split(" ")[0].lower() for c in cells(block[0][1]))
            body = [(n, cells(row)) for n, row in block[2:]]
            found.append((header, body))
        block = []
    return found


@cache
def matrix() -> tuple[list[Row], dict[str, int]]:
    """The matrix rows and the counts table, read once."""
    rows: list[Row] = []
    counts: dict[str, int] = {}
    for header, body in tables(MATRIX.read_text(encoding="utf-8")):
        if header == MATRIX_COLUMNS:
            for number, row in body:
                assert len(row) == len(MATRIX_COLUMNS), (
                    f"{MATRIX.name}:{number}: {len(row)} cells, expected {len(MATRIX_COLUMNS)} "
                    "(a '|' inside a cell splits it)"
                )
                rows.append(Row(number, *row))
        elif header == COUNTS_COLUMNS:
            for number, (status, value) in body:
                assert value.isdigit(), f"{MATRIX.name}:{number}: {value!r} is not a count"
                counts[status] = int(value)
    return rows, counts


def rows() -> list[Row]:
    return matrix()[0]


@cache
def pack_keys() -> frozenset[str]:
    """Every key some shipped pack sets as ``[rules."KEY"]``."""
    return frozenset(
        key
        for pack in PACKS.glob("*.toml")
        for key in RULE_HEADER.findall(pack.read_text(encoding="utf-8"))
    )


def defines(path: Path, name: str) -> bool:
    text = path.read_text(encoding="utf-8")
    pattern = rf"^[ \t]*(?:async[ \t]+def|def|class)[ \t]+{re.escape(name)}\b"
    return re.search(pattern, text, re.MULTILINE) is not None


def reference_problem(ref: str) -> str | None:
    """Why a backticked reference does not exist, or None when it does.

    A reference is a pack key (``inspection.routine_days``), a repository path to a
    Python file (``analytics/turbidity.py``) or a test or other definition in one
    (``tests/analytics/test_turbidity.py::test_name``)."""
    if "::" in ref:
        path, _, name = ref.partition("::")
        if not path.endswith(".py") or not name.isidentifier():
            return f"`{ref}`: expected path/to/file.py::name"
        file = ROOT / path
        if Path(path).is_absolute() or not file.is_file():
            return f"`{ref}`: no file {path} in the repository"
        if not defines(file, name):
            return f"`{ref}`: {path} defines no def or class {name}"
        return None
    if ref.endswith(".py"):
        if Path(ref).is_absolute() or not (ROOT / ref).is_file():
            return f"`{ref}`: no file {ref} in the repository"
        return None
    if PACK_KEY.fullmatch(ref):
        if ref not in pack_keys():
            return f'`{ref}`: no [rules."{ref}"] in siltwatch/packs/*.toml'
        return None
    return f"`{ref}`: neither a pack key, a path ending in .py, nor path.py::name"


def named_tests(row: Row) -> list[str]:
    """The tests a row names: its backticked ``tests/...py::name`` references."""
    return [ref for ref in row.refs() if TEST_REF.fullmatch(ref)]


def collect(files: tuple[str, ...]) -> frozenset[str]:
    """The node ids pytest collects from these files, parametrized ids folded to
    their function (``tests/a.py::test_x[1]`` counts as ``tests/a.py::test_x``).

    A file pytest cannot import fails the collection, and so this test: the
    matrix cannot lean on a file that does not load."""
    existing = tuple(f for f in files if (ROOT / f).is_file())
    if not existing:
        return frozenset()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "-p",
            "no:cacheprovider",
            *existing,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=COLLECT_TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, (
        f"pytest could not collect the tests the matrix names (exit {done.returncode}):\n"
        + done.stdout[-3000:]
        + done.stderr[-3000:]
    )
    return frozenset(
        line.strip().split("[", 1)[0]
        for line in done.stdout.splitlines()
        if "::" in line and line.startswith("tests/")
    )


@cache
def collected() -> frozenset[str]:
    """Every test pytest collects from the files the matrix names and this one (for the
    check of the check), collected once in one subprocess."""
    files = {ref.partition("::")[0] for r in rows() for ref in named_tests(r)}
    return collect(tuple(sorted(files | {THIS})))


def test_the_matrix_has_at_least_100_rows() -> None:
    assert len(rows()) >= MIN_ROWS, f"{len(rows())} rows in {MATRIX.name}"


def test_every_status_is_one_of_the_five() -> None:
    bad = [f"{r.id} (line {r.line}): {r.status!r}" for r in rows() if r.status not in STATUSES]
    assert not bad, f"statuses must be one of {STATUSES}:\n" + "\n".join(bad)


def test_ids_are_unique_and_every_row_has_a_section_and_a_provision() -> None:
    repeated = sorted(i for i, n in Counter(r.id for r in rows()).items() if n > 1)
    assert not repeated, f"ids used more than once: {repeated}"
    empty = [
        f"line {r.line}"
        for r in rows()
        if not (r.id.strip() and r.section.strip() and r.provision.strip())
    ]
    assert not empty, "rows without an id, a section or a provision: " + ", ".join(empty)


def test_the_counts_table_matches_the_rows() -> None:
    table_rows, counts = matrix()
    actual = Counter(r.status for r in table_rows)
    expected = {status: actual.get(status, 0) for status in STATUSES}
    assert {s: counts.get(s) for s in STATUSES} == expected
    assert counts.get("total") == len(table_rows)
    assert set(counts) == {*STATUSES, "total"}, f"unexpected count rows: {sorted(counts)}"


def test_every_backticked_reference_exists() -> None:
    problems = [
        f"{r.id}: {problem}"
        for r in rows()
        for ref in r.refs()
        if (problem := reference_problem(ref)) is not None
    ]
    assert not problems, "\n".join(problems)


def test_built_rows_cite_code_and_the_others_do_not() -> None:
    uncited = [r.id for r in rows() if r.status in BUILT and not r.refs()]
    assert not uncited, f"built rows need a backticked pack key, module or test: {uncited}"
    cited = [r.id for r in rows() if r.status not in BUILT and r.refs()]
    assert not cited, f"planned and out-of-scope rows take plain words, no backticks: {cited}"
    unexplained = [r.id for r in rows() if r.status not in BUILT and not r.where.strip()]
    assert not unexplained, f"say what is needed or why not in the where column: {unexplained}"


def test_the_reference_check_rejects_what_does_not_exist() -> None:
    here = "tests/foundation/test_compliance_matrix.py"
    assert reference_problem("inspection.routine_days") is None
    assert reference_problem("analytics/turbidity.py") is None
    assert reference_problem(f"{here}::reference_problem") is None
    assert reference_problem(f"{here}::Row") is None
    for ref, fragment in (
        ("inspection.weekly_days", "no [rules."),
        ("analytics/no_such_module.py", "no file"),
        (f"{here}::test_no_such_test", "defines no def or class"),
        ("tests/no_such_test.py::test_x", "no file"),
        ("cover within 24 h", "neither a pack key"),
        ("Lake George §148-9 B", "neither a pack key"),
    ):
        problem = reference_problem(ref)
        assert problem is not None and fragment in problem, (ref, problem)


def test_every_built_row_names_a_test() -> None:
    untested = [f"{r.id} ({r.status})" for r in rows() if r.status in BUILT and not named_tests(r)]
    assert not untested, (
        "an enforced, reminded or recorded row must name the test that shows it, "
        "as `tests/path/test_file.py::test_name`: " + ", ".join(untested)
    )


def test_every_named_test_is_collected_by_pytest() -> None:
    found = collected()
    missing = [
        f"{r.id} (line {r.line}): `{ref}` is not a test pytest collects"
        for r in rows()
        for ref in named_tests(r)
        if ref not in found
    ]
    assert not missing, "\n".join(missing)


def test_the_collection_check_rejects_helpers_and_missing_tests() -> None:
    here, found = THIS, collected()
    assert f"{here}::test_every_built_row_names_a_test" in found
    assert f"{here}::reference_problem" not in found, "a helper is not a test"
    assert f"{here}::test_no_such_test" not in found
