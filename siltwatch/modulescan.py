"""Finding what each module of a registry package declares: how both registries list themselves.

The detection descriptions (siltwatch/detections/) and the sensor kinds
(siltwatch/sensorkinds/) are one module each; a registry lists its package's
search path instead of importing a hand-kept list, so adding a module is all it
takes (and a test can add a folder to ``__path__`` to add its own).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterable
from typing import TypeVar

T = TypeVar("T")


def declared(package: str, path: Iterable[str], name: str, of_type: type[T]) -> list[T]:
    """``name`` of every module of ``package`` found on ``path``, in module-name order.

    ``base`` and private modules (``_x``) hold what the others are made of and are
    skipped; any other module that does not define ``name`` as an ``of_type`` is a
    mistake, said at once rather than left out quietly.
    """
    found: list[T] = []
    for info in sorted(pkgutil.iter_modules(list(path)), key=lambda i: i.name):
        if info.name.startswith("_") or info.name == "base":
            continue
        module = importlib.import_module(f"{package}.{info.name}")
        value = getattr(module, name, None)
        if not isinstance(value, of_type):
            raise TypeError(f"{module.__name__} defines no {name} (a {of_type.__name__})")
        found.append(value)
    return found
