"""Engine snapshots as versioned, typed JSON — never pickle.

A snapshot is a cache of what the engine computed from the store (design.md:
"the store is the truth; engine state is a cache"). It used to be a pickle,
and a pickle in a database is code execution for anyone who can write the
database file. This codec writes the engine's state as plain JSON and reads
back only what it wrote:

* scalars, lists, tuples, sets, frozensets, deques, dicts (any hashable keys),
  dates and non-finite floats, each container tagged with its type;
* members of enums defined in the analytics package (a detector's state enum),
  as ``{"$enum": "module:Class", "value": ...}``: read back as the member itself;
* instances of classes *defined in the analytics package* (detectors, their
  small state dataclasses, the alert and duty books) — looked up in an
  allow-list built from the package's modules, never imported by name from the
  blob; only the attributes the class declares (slots or, for plain classes,
  names it had when written) are set, and nothing is called but ``__new__``;
* shared references (the alert book's open index points into its episode
  list) as ``{"$ref": n}``, so identity survives a round trip.

Anything else — an unknown class, a field the class does not have, a wrong
tag, a version from another release — raises :class:`SnapshotError`, and the
caller rebuilds the engine from the store instead. Decoding does no I/O and
reads no clock (analytics stays pure); the JSON is zlib-compressed because a
season's state is mostly repeated keys.
"""

from __future__ import annotations

import importlib
import inspect
import json
import math
import pkgutil
import zlib
from collections import deque
from dataclasses import fields
from datetime import date
from enum import Enum
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

    Plain = TypeVar("Plain", bound=DataclassInstance)

FORMAT = "siltwatch-engine-state"
MAX_DEPTH = 64
# The analytics modules whose classes a snapshot may hold: every module of the
# package (detectors and their state live in modules of their own, and a new
# detection must not have to register here) but the engine and this codec,
# which hold no detector state (the engine adds its own classes with ``allow``).
_NOT_STATE = frozenset({"engine", "statecodec", "detectors"})


def _state_modules() -> list[ModuleType]:
    import analytics

    return [
        importlib.import_module(f"analytics.{info.name}")
        for info in pkgutil.iter_modules(analytics.__path__)
        if info.name not in _NOT_STATE
    ]


class SnapshotError(ValueError):
    """A snapshot that cannot be trusted or read; the engine is rebuilt from the store."""


def _allowed_classes() -> dict[str, type]:
    found: dict[str, type] = {}
    for module in _state_modules():
        for _name, obj in inspect.getmembers(module, inspect.isclass):
            if obj.__module__ == module.__name__:
                found[f"{obj.__module__}:{obj.__qualname__}"] = obj
    return found


_ALLOWED: dict[str, type] | None = None


def allow(cls: type) -> None:
    """Admit one more analytics class (the engine registers its own stats class)."""
    classes = _classes()
    if not cls.__module__.startswith("analytics."):
        raise ValueError(f"only analytics classes may be in a snapshot, not {cls!r}")
    classes[f"{cls.__module__}:{cls.__qualname__}"] = cls


def plain_copy(cls: type[Plain], source: object) -> Plain:
    """``source``'s values of the fields the dataclass ``cls`` declares, as a ``cls``.

    Detector state is snapshotted, so it keeps plain analytics data, not the
    site file's models or another detector's events: a detector copies what it
    needs of them into a small dataclass of its own with this.
    """
    return cls(**{f.name: getattr(source, f.name) for f in fields(cls)})


def _classes() -> dict[str, type]:
    global _ALLOWED
    if _ALLOWED is None:
        _ALLOWED = _allowed_classes()
    return _ALLOWED


def _slot_names(cls: type) -> list[str]:
    names: list[str] = []
    for klass in cls.__mro__:
        slots = klass.__dict__.get("__slots__", ())
        if isinstance(slots, str):
            slots = (slots,)
        names += [s for s in slots if s not in ("__dict__", "__weakref__")]
    return names


def _fields_of(obj: object) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in _slot_names(type(obj)):
        try:
            out[name] = object.__getattribute__(obj, name)
        except AttributeError:
            continue
    if hasattr(obj, "__dict__"):
        out.update(vars(obj))
    return out


class _Encoder:
    def __init__(self, skip: frozenset[str]) -> None:
        self.skip = skip
        self.seen: dict[int, int] = {}
        self.shared: set[int] = set()
        self.keep: list[object] = []  # keeps ids stable while encoding
        self.next_ref = 0

    def count(self, value: Any, depth: int = 0) -> None:
        """First pass: find objects and containers referenced more than once."""
        if depth > MAX_DEPTH:
            raise SnapshotError("engine state nests deeper than a snapshot may")
        if value is None or isinstance(value, bool | int | float | str | date | Enum):
            return
        key = id(value)
        if key in self.seen:
            self.shared.add(key)
            return
        self.seen[key] = 0
        self.keep.append(value)
        if isinstance(value, dict):
            for k, v in value.items():
                self.count(k, depth + 1)
                self.count(v, depth + 1)
        elif isinstance(value, list | tuple | set | frozenset | deque):
            for v in value:
                self.count(v, depth + 1)
        else:
            for name, v in _fields_of(value).items():
                if name not in self.skip:
                    self.count(v, depth + 1)

    def encode(self, value: Any) -> Any:
        if value is None or isinstance(value, bool | int | str):
            return value
        if isinstance(value, float):
            return value if math.isfinite(value) else {"$float": repr(value)}
        if isinstance(value, date):
            return {"$date": value.isoformat()}
        if isinstance(value, Enum):
            cls = type(value)
            name = f"{cls.__module__}:{cls.__qualname__}"
            if _classes().get(name) is not cls:
                raise SnapshotError(f"{name} is not a class a snapshot may hold")
            return {"$enum": name, "value": value.value}
        key = id(value)
        if key in self.shared:
            ref = self.seen[key]
            if ref:
                return {"$ref": ref}
            self.next_ref += 1
            self.seen[key] = ref = self.next_ref
            body = self._body(value)
            body["$id"] = ref
            return body
        return self._body(value)

    def _body(self, value: Any) -> dict[str, Any]:
        if isinstance(value, list):
            return {"$list": [self.encode(v) for v in value]}
        if isinstance(value, tuple):
            return {"$tuple": [self.encode(v) for v in value]}
        if isinstance(value, frozenset | set):
            items = sorted((self.encode(v) for v in value), key=_sort_key)
            return {"$frozenset" if isinstance(value, frozenset) else "$set": items}
        if isinstance(value, deque):
            return {"$deque": [self.encode(v) for v in value], "maxlen": value.maxlen}
        if isinstance(value, dict):
            return {"$dict": [[self.encode(k), self.encode(v)] for k, v in value.items()]}
        cls = type(value)
        name = f"{cls.__module__}:{cls.__qualname__}"
        if _classes().get(name) is not cls:
            raise SnapshotError(f"{name} is not a class a snapshot may hold")
        fields = {k: self.encode(v) for k, v in _fields_of(value).items() if k not in self.skip}
        return {"$obj": name, "fields": fields}


def _sort_key(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


class _Decoder:
    def __init__(self) -> None:
        self.refs: dict[int, Any] = {}

    def decode(self, value: Any, depth: int = 0) -> Any:
        if depth > MAX_DEPTH:
            raise SnapshotError("snapshot nests deeper than the engine ever does")
        if value is None or isinstance(value, bool | int | float | str):
            return value
        if not isinstance(value, dict) or not value:
            raise SnapshotError(f"unexpected {type(value).__name__} in snapshot")
        if "$ref" in value:
            ref = value["$ref"]
            if ref not in self.refs:
                raise SnapshotError(f"snapshot refers to object {ref!r} before defining it")
            return self.refs[ref]
        if "$float" in value:
            text = value["$float"]
            if text not in ("nan", "inf", "-inf"):
                raise SnapshotError(f"bad float {text!r} in snapshot")
            return float(text)
        if "$date" in value:
            return date.fromisoformat(str(value["$date"]))
        if "$enum" in value:
            return _member(value)
        return self._container(value, depth)

    def _register(self, value: dict[str, Any], obj: Any) -> None:
        if "$id" in value:
            ref = value["$id"]
            if not isinstance(ref, int) or ref in self.refs:
                raise SnapshotError(f"bad object id {ref!r} in snapshot")
            self.refs[ref] = obj

    def _items(self, value: dict[str, Any], tag: str) -> list[Any]:
        items = value[tag]
        if not isinstance(items, list):
            raise SnapshotError(f"{tag} must hold a list")
        return items

    def _container(self, value: dict[str, Any], depth: int) -> Any:
        d = depth + 1
        if "$list" in value:
            out: list[Any] = []
            self._register(value, out)
            out.extend(self.decode(v, d) for v in self._items(value, "$list"))
            return out
        if "$deque" in value:
            maxlen = value.get("maxlen")
            if maxlen is not None and not isinstance(maxlen, int):
                raise SnapshotError("bad deque length in snapshot")
            dq: deque[Any] = deque(maxlen=maxlen)
            self._register(value, dq)
            dq.extend(self.decode(v, d) for v in self._items(value, "$deque"))
            return dq
        if "$dict" in value:
            mapping: dict[Any, Any] = {}
            self._register(value, mapping)
            for pair in self._items(value, "$dict"):
                if not isinstance(pair, list) or len(pair) != 2:
                    raise SnapshotError("a dict entry must be a [key, value] pair")
                mapping[_hashable(self.decode(pair[0], d))] = self.decode(pair[1], d)
            return mapping
        if "$set" in value:
            items = {_hashable(self.decode(v, d)) for v in self._items(value, "$set")}
            self._register(value, items)
            return items
        for tag, kind in (("$tuple", tuple), ("$frozenset", frozenset)):
            if tag in value:
                made = kind(_hashable(self.decode(v, d)) for v in self._items(value, tag))
                self._register(value, made)
                return made
        if "$obj" in value:
            return self._object(value, d)
        raise SnapshotError(f"unknown snapshot tag in {sorted(value)[:3]}")

    def _object(self, value: dict[str, Any], depth: int) -> Any:
        name = value["$obj"]
        cls = _classes().get(name) if isinstance(name, str) else None
        if cls is None:
            raise SnapshotError(f"{name!r} is not a class a snapshot may hold")
        fields = value.get("fields")
        if not isinstance(fields, dict):
            raise SnapshotError(f"{name}: fields must be an object")
        declared = _declared_fields(cls)
        unknown = [
            k
            for k in fields
            if not isinstance(k, str)
            or not k.isidentifier()
            or (declared is not None and k not in declared)
        ]
        if unknown:
            raise SnapshotError(f"{name} has no field(s) {', '.join(sorted(unknown)[:5])}")
        obj: Any = object.__new__(cls)
        self._register(value, obj)
        for key, raw in fields.items():
            object.__setattr__(obj, key, self.decode(raw, depth))
        return obj


def _member(value: dict[str, Any]) -> Enum:
    """The enum member ``{"$enum": "module:Class", "value": ...}`` names."""
    name = value["$enum"]
    cls = _classes().get(name) if isinstance(name, str) else None
    if cls is None or not issubclass(cls, Enum):
        raise SnapshotError(f"{name!r} is not an enum a snapshot may hold")
    try:
        return cls(value.get("value"))
    except ValueError:
        raise SnapshotError(f"{value.get('value')!r} is not a member of {name}") from None


def _declared_fields(cls: type) -> set[str] | None:
    """The attribute names an instance may carry; None when instances have a ``__dict__``."""
    if cls.__dictoffset__:
        return None
    return set(_slot_names(cls))


def _hashable(value: Any) -> Any:
    if isinstance(value, list | dict | set | deque):
        raise SnapshotError("a set member or dict key must be hashable")
    return value


def encode_state(state: dict[str, Any], *, header: dict[str, Any], skip: frozenset[str]) -> bytes:
    """``header`` (plain JSON) and ``state`` as one compressed, versioned document."""
    enc = _Encoder(skip)
    enc.count(state)
    doc = {"format": FORMAT, **header, "state": enc.encode(state)}
    return zlib.compress(json.dumps(doc, separators=(",", ":"), allow_nan=False).encode(), 6)


def read_header(blob: bytes) -> tuple[dict[str, Any], Any]:
    """The header fields and the still-encoded state; SnapshotError for anything else."""
    if blob[:2] == b"\x80\x05" or blob[:1] == b"\x80":
        raise SnapshotError("this is a pickle (an older siltwatch's format); it is never loaded")
    try:
        text = zlib.decompress(blob)
        doc = json.loads(text)
    except (zlib.error, ValueError, RecursionError) as exc:
        raise SnapshotError(f"not a siltwatch snapshot ({exc})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise SnapshotError("not a siltwatch engine snapshot")
    state = doc.pop("state", None)
    return doc, state


def decode_state(encoded: Any) -> dict[str, Any]:
    """The engine state written by :func:`encode_state`, checked on the way in."""
    try:
        state = _Decoder().decode(encoded)
    except SnapshotError:
        raise
    except (TypeError, ValueError, KeyError, AttributeError, RecursionError) as exc:
        raise SnapshotError(f"snapshot does not decode: {exc}") from None
    if not isinstance(state, dict):
        raise SnapshotError("snapshot state must be a mapping")
    return state
