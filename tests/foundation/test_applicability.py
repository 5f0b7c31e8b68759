"""Scope warnings (siltwatch/applicability.py): whether a pack's law reaches the site.

``config check`` warns — it does not refuse: the operator may know what the
file does not say (a common plan of development).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from siltwatch.applicability import scope_warnings
from siltwatch.config import SiteConfig, load_site

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def with_site(site: SiteConfig, **info: object) -> SiteConfig:
    return site.model_copy(update={"site": site.site.model_copy(update=info)})


def test_ncg01_below_one_acre_warns_unless_part_of_a_common_plan() -> None:
    lure = load_site(EXAMPLES / "lake-lure-site.toml")  # 1.6 acres: covered
    assert not [w for w in scope_warnings(lure) if "NCG01" in w]
    small = with_site(lure, disturbed_acres=0.8)
    (warning,) = [w for w in scope_warnings(small) if "NCG01" in w]
    assert "0.8 acres" in warning and "common_plan" in warning
    assert not [w for w in scope_warnings(with_site(small, common_plan=True)) if "NCG01" in w]


def test_the_command_prints_the_warnings_and_still_passes(tmp_path: Path) -> None:
    text = (EXAMPLES / "lake-lure-site.toml").read_text()
    assert "disturbed_acres = 1.6" in text
    path = tmp_path / "small.toml"
    path.write_text(text.replace("disturbed_acres = 1.6", "disturbed_acres = 0.8"))
    done = subprocess.run(
        [sys.executable, "-m", "app.cli", "config", "check", str(path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert (
        "  warning: nc-ncg01 covers sites disturbing 1 acre(s)" in done.stdout
        and "0.8 acres" in done.stdout
    )
