"""Modbus register maps as data, and decoding registers into numbers.

Why data: every probe vendor puts its numbers at different addresses, in
different word and byte orders. A map (TOML or dict) says, per field, where it
is (``address`` in protocol numbering, 0-based, holding or input table), how
to decode it (``datatype``, ``byte_order`` inside each 16-bit register,
``word_order`` of multi-register values) and how to scale it
(``value = decoded * scale + offset``). Adding a probe is a TOML file in
``hardware/registermaps/``, not code.

Orders, as vendors name them for a float32 with bytes A B C D (A = most
significant): ABCD = big/big (Modbus default), CDAB = word_order little
("word swapped", common in level transmitters), BADC = byte_order little,
DCBA = little/little (Yosemitech).
"""

from __future__ import annotations

import struct
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Datatype = Literal["float32", "int16", "uint16", "int32", "uint32"]
Order = Literal["big", "little"]

_FORMAT: dict[str, str] = {
    "float32": ">f",
    "int16": ">h",
    "uint16": ">H",
    "int32": ">i",
    "uint32": ">I",
}
_WORDS: dict[str, int] = {"float32": 2, "int16": 1, "uint16": 1, "int32": 2, "uint32": 2}

MAPS_DIR = Path(__file__).parent / "registermaps"


class RegisterField(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    address: int = Field(ge=0, le=65535, description="protocol address (0-based)")
    table: Literal["holding", "input"] = "holding"
    datatype: Datatype = "float32"
    byte_order: Order = "big"
    word_order: Order = "big"
    scale: float = 1.0
    offset: float = 0.0
    unit: str = Field(min_length=1, max_length=16)

    @property
    def count(self) -> int:
        """How many 16-bit registers the field occupies."""
        return _WORDS[self.datatype]


class RegisterMap(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    notes: str = ""
    fields: dict[str, RegisterField] = Field(min_length=1)


def decode(registers: Sequence[int], spec: RegisterField) -> float:
    """Registers (as read, 16-bit unsigned) to the scaled value of ``spec``."""
    if len(registers) != spec.count:
        raise ValueError(f"{spec.datatype} needs {spec.count} registers, got {len(registers)}")
    words = list(registers)
    if spec.word_order == "little":
        words.reverse()
    data = bytearray()
    for word in words:
        if not 0 <= word <= 0xFFFF:
            raise ValueError(f"register value {word} is not a 16-bit unsigned number")
        pair = word.to_bytes(2, "big")
        data += pair[::-1] if spec.byte_order == "little" else pair
    (number,) = struct.unpack(_FORMAT[spec.datatype], bytes(data))
    return float(number) * spec.scale + spec.offset


def encode(value: float, spec: RegisterField) -> list[int]:
    """The registers a device would hold for ``value`` (inverse of :func:`decode`; tests)."""
    number = (value - spec.offset) / spec.scale
    packed = struct.pack(
        _FORMAT[spec.datatype], number if spec.datatype == "float32" else round(number)
    )
    words = []
    for i in range(0, len(packed), 2):
        pair = packed[i : i + 2]
        if spec.byte_order == "little":
            pair = pair[::-1]
        words.append(int.from_bytes(pair, "big"))
    if spec.word_order == "little":
        words.reverse()
    return words


def load_map(name_or_path: str | Path) -> RegisterMap:
    """A map by bundled name (``"yosemitech_y511"``) or by path to a TOML file."""
    path = Path(name_or_path)
    if not path.suffix:
        path = MAPS_DIR / f"{name_or_path}.toml"
    with path.open("rb") as fh:
        return RegisterMap.model_validate(tomllib.load(fh))
