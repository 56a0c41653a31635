"""torch.export.load without working out each schema class's type hints again for every value.

torch 2.13's deserializer rebuilds a program's JSON into schema dataclasses and, for every value
it rebuilds, calls `typing.get_type_hints(cls, globalns=vars(schema))`, which evaluates the
class's string annotations afresh: about 100 calls and 40 % of the 22 ms it takes to load a
reference target's host program here (cProfile, 2026-12), paid on every deploy, warm runs
included. A schema class's hints never change, so the deserializer's module now sees a `typing`
whose `get_type_hints` answers that one question from a table filled on first use; any other
question, and every other name, is typing's own. Only on the deserializer it was written
against (hil.speedups.switch checks its code's digest).
"""

from __future__ import annotations

import typing
from typing import Any

from hil.speedups.patch_once import Part, Patch


class TypingWithSchemaHints:
    """The `typing` module, with the schema's type hints looked up once per class."""

    def __init__(self, schema_globals: dict[str, Any]) -> None:
        self._schema_globals = schema_globals
        self._hints: dict[type, dict[str, Any]] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(typing, name)

    def get_type_hints(
        self,
        obj: Any,
        globalns: dict[str, Any] | None = None,
        localns: dict[str, Any] | None = None,
        include_extras: bool = False,
    ) -> dict[str, Any]:
        if globalns is not self._schema_globals or localns is not None or include_extras:
            return typing.get_type_hints(obj, globalns, localns, include_extras)
        hints = self._hints.get(obj)
        if hints is None:
            hints = self._hints[obj] = typing.get_type_hints(obj, globalns)
        return hints


def _serialize() -> Any:
    from torch._export.serde import serialize

    return serialize


def applies() -> bool:
    """Whether the deserializer reads hints through its module's own `typing`."""
    names = vars(_serialize())
    return names.get("typing") is typing and callable(names.get("_dict_to_dataclass"))


def _schema_hints_once() -> None:
    from torch._export.serde import schema

    vars(_serialize())["typing"] = TypingWithSchemaHints(vars(schema))


PATCH = Patch(applies, _schema_hints_once)
PART = Part(
    "schema-hints",
    lambda: (_serialize()._dict_to_dataclass,),
    "8ed84ad281d7a3b2e43dc32c342813502eadc2ece6eace9571a1052eba0b29ea",
    PATCH,
)
