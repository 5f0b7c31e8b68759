"""The ``siltwatch`` command's boot: where an installed siltwatch keeps its packages.

An installed siltwatch keeps its folders (app, siltwatch, analytics, ingest, ...) in
this private directory, not at the top of site-packages, where five of their names
belong to other distributions (``analytics-python`` imports as ``analytics``). The
command puts this directory first on ``sys.path`` and then imports the roof; only
the ``siltwatch`` process sees these names, so a neighbour's ``import analytics``
gets its own package. In a source checkout (``make`` and the tests: the repo root is
on ``sys.path``) the folders are not beside this file and nothing is changed.
docs/architecture.md, "Installed names", says why this way and not another.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    """``siltwatch ...``: the packages beside this file first, then app/cli.py's main."""
    if (HERE / "app" / "cli.py").is_file() and str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
    from app.cli import main as cli_main

    return cli_main()
