"""Counters people read: declared one way, each starting empty, listed one way.

The engine, the ingest service, its MQTT and InfluxDB links and the edge
publisher each keep a few numbers about what they did (messages taken,
readings refused, reconnects) so that nothing refused goes uncounted
(design.md: "one bad input changes nothing else ... a stored, counted
rejection"). People read them (``serve`` prints them when it stops, the CLI
quotes them), the tests compare them, and a metrics exporter will publish
them, so they are declared once, here: a subclass of :class:`Counters` names
each counter and its type, and every one starts empty (``0``, ``""``, an empty
list or dict) without saying so field by field. The subclass is a dataclass:
its repr (``EngineStats(readings_in=3, ...)``), equality and field order are
the dataclass ones.
"""

from __future__ import annotations

import dataclasses
import inspect
import typing
from typing import Any, ClassVar

# What a counter of each type starts at: immutable ones as a default, containers
# made fresh for every instance.
_STARTS: dict[type, Any] = {int: 0, float: 0.0, str: ""}
_FRESH: tuple[type, ...] = (list, dict)


class Counters:
    """A set of named counters; subclass it and list the counters with their types.

    ``readings_in: int`` starts at 0, ``errors: list[str]`` at ``[]``,
    ``by_reason: dict[str, int]`` at ``{}``, ``last_error: str`` at ``""``.
    A class attribute given a value keeps it (a dataclass default). Made empty,
    ``Stats()``: type checkers see no keyword constructor, and nothing needs one.
    """

    _names: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        hints = typing.get_type_hints(cls)
        own = tuple(inspect.get_annotations(cls))
        for name in own:
            if name not in cls.__dict__:
                setattr(cls, name, _start(cls, name, hints[name]))
        dataclasses.dataclass(cls)
        cls._names = (*cls._names, *own)

    def as_dict(self) -> dict[str, Any]:
        """Every counter by name, in the order the class declares them."""
        return {name: getattr(self, name) for name in self._names}

    def add(self, more: Counters) -> None:
        """Add ``more``'s numbers and keyed counts into these (a fleet's total over its
        sites); text and lists are not summed."""
        for name, value in more.as_dict().items():
            if isinstance(value, dict):
                merged = getattr(self, name)
                for key, n in value.items():
                    merged[key] = merged.get(key, 0) + n
            elif isinstance(value, int | float) and not isinstance(value, bool):
                setattr(self, name, getattr(self, name) + value)

    def numbers(self) -> list[tuple[str, float]]:
        """(name, value) of every numeric counter: what a metrics exporter publishes."""
        return [
            (name, value)
            for name, value in self.as_dict().items()
            if isinstance(value, int | float) and not isinstance(value, bool)
        ]


def _start(cls: type, name: str, hint: Any) -> Any:
    kind = typing.get_origin(hint) or hint
    if kind in _STARTS:
        return dataclasses.field(default=_STARTS[kind])
    if kind in _FRESH:
        return dataclasses.field(default_factory=kind)
    raise TypeError(
        f"{cls.__qualname__}.{name}: a counter is an int, float, str, list or dict, "
        f"not {hint!r} (give it a default to keep another type)"
    )
