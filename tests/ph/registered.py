"""The pH fixture registered: its three modules dropped into the three packages' search paths.

This is what adding a pH sensor kind and a pH range detection to siltwatch would be:
``siltwatch/sensorkinds/ph_kind.py``, ``siltwatch/detections/ph_range.py`` and
``analytics/ph_detector.py``, three new files and no edit anywhere else. The
registries find modules by listing their package (``pkgutil.iter_modules``), so
appending a folder to a package's ``__path__`` is the same as copying the files in.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

import analytics
import siltwatch.detections as detections
import siltwatch.sensorkinds as sensorkinds

HERE = Path(__file__).parent
# (package, folder of the fixture's module for it, the module's name)
MODULES: tuple[tuple[ModuleType, Path, str], ...] = (
    (sensorkinds, HERE / "kinds", "ph_kind"),
    (detections, HERE / "detections", "ph_range"),
    (analytics, HERE / "analytics", "ph_detector"),
)


def _clear_caches() -> None:
    sensorkinds.rescan()
    detections.rescan()


@contextmanager
def ph_registered() -> Iterator[None]:
    """siltwatch with the pH sensor kind and the pH range detection, inside the block."""
    for package, folder, _name in MODULES:
        package.__path__.append(str(folder))
    _clear_caches()
    try:
        yield
    finally:
        for package, folder, name in MODULES:
            package.__path__.remove(str(folder))
            sys.modules.pop(f"{package.__name__}.{name}", None)
        _clear_caches()
