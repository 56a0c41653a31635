"""Typed access to one mapping of a device file, with errors that name the file and the key.

Every device-file parser reads through a Section, so a malformed or misspelt key is refused the
same way everywhere: the file, the key's full path, what was expected (for an unknown key, the
valid ones) and what was found.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, NoReturn

from hil.errors import DeviceSpecError


def _as_tuple(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


def _describe(kind: type | tuple[type, ...]) -> str:
    names = {
        str: "a string",
        int: "an integer",
        float: "a number",
        Mapping: "a mapping",
        list: "a list",
        bool: "true or false",
    }
    return " or ".join(names.get(k, k.__name__) for k in _as_tuple(kind))


class _Missing:
    def __repr__(self) -> str:
        return "nothing"


MISSING: Any = _Missing()  # `got` of a key the file leaves out: "..., got nothing"


class Section:
    def __init__(self, data: Any, source: Path, path: str = "", docs: str = "") -> None:
        self.source = source
        self.path = path
        self.docs = docs or "devices/README.md"
        if not isinstance(data, Mapping):
            self.fail(path or "<top level>", "a mapping of keys to values", data)
        self.data: Mapping[str, Any] = data

    def missing(self, name: str, expected: str) -> NoReturn:
        self.fail(self.key(name), expected, MISSING)

    def fail(self, key: str, expected: str, got: Any) -> NoReturn:
        raise DeviceSpecError(
            f"{self.source}: key {key!r} must be {expected}, got {got!r}",
            fix=f"edit {self.source.name}; {self.docs} lists the keys it takes",
        )

    def key(self, name: str) -> str:
        return f"{self.path}.{name}" if self.path else name

    def has(self, name: str) -> bool:
        return self.data.get(name) is not None

    def get(
        self, name: str, kind: type | tuple[type, ...], default: Any = ..., expected: str = ""
    ) -> Any:
        if name not in self.data or self.data[name] is None:
            if default is ...:
                self.fail(self.key(name), expected or _describe(kind), MISSING)
            return default
        value = self.data[name]
        # bool is an int in Python; a device file saying `warmup: true` is a mistake.
        if isinstance(value, bool) and bool not in _as_tuple(kind):
            self.fail(self.key(name), expected or _describe(kind), value)
        if not isinstance(value, kind):
            self.fail(self.key(name), expected or _describe(kind), value)
        return value

    def choice(self, name: str, choices: tuple[str, ...], default: str | None) -> Any:
        value = self.get(name, str, default, "one of " + ", ".join(choices))
        if value is not None and value not in choices:
            self.fail(self.key(name), "one of " + ", ".join(choices), value)
        return value

    def positive(self, name: str, default: float | None, integer: bool = False) -> Any:
        kind: tuple[type, ...] = (int,) if integer else (int, float)
        expected = "a positive integer" if integer else "a positive number"
        value = self.get(name, kind, default, expected)
        if value is not None and value <= 0:
            self.fail(self.key(name), expected, value)
        return value

    def flag(self, name: str, default: bool) -> bool:
        return bool(self.get(name, bool, default))

    def strings(self, name: str) -> tuple[str, ...]:
        """A list of strings (numbers are taken as their text: `[--pool, 4096]`)."""
        value = self.get(name, (list, tuple), [], "a list of strings")
        if not all(isinstance(v, (str, int, float)) and not isinstance(v, bool) for v in value):
            self.fail(self.key(name), "a list of strings", value)
        return tuple(str(v) for v in value)

    def text(self, name: str, default: str | None = None) -> Any:
        value = self.get(name, (str, int), default, "a string")
        return None if value is None else str(value)

    def section(self, name: str, docs: str = "") -> Section:
        return Section(self.get(name, Mapping, {}), self.source, self.key(name), docs or self.docs)

    def reject_unknown(self, known: tuple[str, ...]) -> None:
        for key in self.data:
            if key not in known:
                self.fail(
                    self.key(str(key)), "one of the known keys (" + ", ".join(known) + ")", key
                )
