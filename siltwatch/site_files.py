"""Which site files a fleet ``serve`` reads: every ``--site FILE`` and the site files of ``--sites DIR``.

Why a module: the same reading happens at start (where a bad file fails the
start) and on SIGHUP (where a bad file is reported and that site keeps its old
configuration), so both must agree on what a site file is. In a folder, a
``*.toml`` file with a ``[site]`` table is a site file; others (a notify.toml
beside them) are left alone. Two files naming one site id are a mistake that
names both files.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from siltwatch.config import ConfigError, SiteConfig, load_site
from siltwatch.configerrors import read_toml


@dataclass
class SiteFiles:
    """What one reading of the site files found: good sites by id, and each bad file's lines."""

    sites: dict[str, SiteConfig] = field(default_factory=dict)
    paths: dict[str, Path] = field(default_factory=dict)
    problems: dict[Path, list[str]] = field(default_factory=dict)

    @property
    def lines(self) -> list[str]:
        """Every problem, one line each (each already names its file)."""
        return [line for lines in self.problems.values() for line in lines]


def site_paths(files: Sequence[str], folders: Sequence[str]) -> list[Path]:
    """The ``--site`` files, then each ``--sites`` folder's ``*.toml`` files in name order.

    ConfigError when a folder is missing; a folder's non-site TOML files are skipped.
    """
    paths = [Path(f) for f in files]
    for folder in map(Path, folders):
        if not folder.is_dir():
            raise ConfigError([f"--sites {folder}: not a folder of site files"])
        for path in sorted(folder.glob("*.toml")):
            if _is_site_file(path):
                paths.append(path)
    return paths


def _is_site_file(path: Path) -> bool:
    """A ``[site]`` table makes a TOML file a site file; an unreadable one is checked as
    one (so its mistake is reported instead of the file silently skipped)."""
    try:
        return "site" in read_toml(path)
    except ConfigError:
        return True


def read_site_files(paths: Sequence[Path]) -> SiteFiles:
    """Load every file; a bad file's lines are kept, the good ones' sites returned."""
    found = SiteFiles()
    for path in paths:
        try:
            site = load_site(path)
        except ConfigError as exc:
            found.problems[path] = list(exc.lines)
            continue
        sid = site.site.id
        if sid in found.sites:
            found.problems[path] = [
                f"{path}: site.id: {sid!r} is also the site of {found.paths[sid]}; "
                "one file per site"
            ]
            continue
        found.sites[sid] = site
        found.paths[sid] = path
    return found
