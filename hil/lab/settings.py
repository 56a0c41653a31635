"""The `connection.labgrid` keys of a device file, checked once at the boundary.

A serial or ssh device names a labgrid place, or a pool of equivalent places by tags, instead
of a local port or host; the rest of `connection` keeps the inner kind's keys (link timings,
firmware, identity, ...):

    kind: serial
    connection:
      labgrid:
        coordinator: $LG_COORDINATOR   # HOST:PORT; default $LG_COORDINATOR, else 127.0.0.1:20408
        place: rack1-vb3               # one place by name, or
        tags: {board: vboard}          #   any place whose tags include these (a pool)
        token: $LG_TOKEN               # optional: reservations a CI job made (comma-separated)
        prio: 0                        # priority of the reservations hil makes
        wait_s: 600                    # longest wait for a free place
        power: true                    # power-cycle a silent runner where the place can
        power_delay_s: 1.0             # off time of a power cycle
        serial: NAME                   # which serial resource, if the place has several
      reply_timeout_s: 3.0             # ... the inner kind's keys
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from hil.devices import DeviceSpec
from hil.errors import DeviceSpecError

DEFAULT_COORDINATOR = "127.0.0.1:20408"
KEYS = ("coordinator", "place", "tags", "token", "prio", "wait_s", "power", "power_delay_s",
        "serial")
TAG_KEY = re.compile(r"[a-z][a-z0-9_]+\Z")  # labgrid's rule for tag names
ENV_ONLY = re.compile(r"\$\{?(\w+)\}?\Z")


@dataclass(frozen=True)
class LabSettings:
    coordinator: str
    filters: Mapping[str, str]  # a reservation filter: tags, or {"name": PLACE}
    tokens: tuple[str, ...] = ()
    prio: float = 0.0
    wait_s: float = 600.0
    power: bool = True
    power_delay_s: float = 1.0
    serial: str | None = None
    inner: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def pool(self) -> str:
        """How the pool reads in messages: "board=vboard" or "name=rack1-vb3"."""
        return " ".join(f"{k}={v}" for k, v in sorted(self.filters.items()))

    @classmethod
    def from_spec(cls, spec: DeviceSpec) -> LabSettings:
        raw = spec.connection.get("labgrid")
        if not isinstance(raw, Mapping):
            raise _bad(spec, "labgrid", "a mapping (coordinator, place or tags, ...)", raw)
        unknown = sorted(set(raw) - set(KEYS))
        if unknown:
            raise _bad(spec, f"labgrid.{unknown[0]}", "one of " + ", ".join(KEYS), unknown[0])
        for local in ("port", "virtual", "host"):
            if local in spec.connection:
                raise _bad(spec, local, "absent: the labgrid place says where the board is",
                           spec.connection[local])
        place, tags = raw.get("place"), raw.get("tags")
        if (place is None) == (tags is None):
            raise _bad(spec, "labgrid", "exactly one of place: NAME or tags: {KEY: VALUE}", raw)
        filters: dict[str, str]
        if place is not None:
            filters = {"name": str(place)}
        else:
            if not isinstance(tags, Mapping) or not tags:
                raise _bad(spec, "labgrid.tags", "a non-empty mapping of tag: value", tags)
            filters = {str(k): str(v) for k, v in tags.items()}
            for key in filters:
                if not TAG_KEY.match(key):
                    raise _bad(spec, f"labgrid.tags.{key}", "a tag name of [a-z][a-z0-9_]+", key)
        token = _env(raw.get("token"))
        return cls(
            coordinator=_env(raw.get("coordinator")) or os.environ.get("LG_COORDINATOR")
            or DEFAULT_COORDINATOR,
            filters=MappingProxyType(filters),
            tokens=tuple(t.strip() for t in (token or "").split(",") if t.strip()),
            prio=_number(spec, raw, "prio", 0.0, minimum=None),
            wait_s=_number(spec, raw, "wait_s", 600.0),
            power=_flag(spec, raw, "power", True),
            power_delay_s=_number(spec, raw, "power_delay_s", 1.0),
            serial=None if raw.get("serial") is None else str(raw["serial"]),
            inner=MappingProxyType({k: v for k, v in spec.connection.items() if k != "labgrid"}),
        )


def _env(value: Any) -> str | None:
    """A string with $VARS expanded; a value that is only an unset variable is None."""
    if value is None:
        return None
    text = str(value)
    only = ENV_ONLY.match(text)
    if only:
        return os.environ.get(only.group(1)) or None
    return os.path.expandvars(text)


def _number(spec: DeviceSpec, raw: Mapping[str, Any], key: str, default: float,
            minimum: float | None = 0.0) -> float:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (
        minimum is not None and value < minimum
    ):
        raise _bad(spec, f"labgrid.{key}", "a non-negative number" if minimum is not None
                   else "a number", value)
    return float(value)


def _flag(spec: DeviceSpec, raw: Mapping[str, Any], key: str, default: bool) -> bool:
    value = raw.get(key, default)
    if not isinstance(value, bool):
        raise _bad(spec, f"labgrid.{key}", "true or false", value)
    return value


def _bad(spec: DeviceSpec, key: str, expected: str, got: Any) -> DeviceSpecError:
    return DeviceSpecError(
        f"{spec.source}: key 'connection.{key}' must be {expected}, got {got!r}",
        fix=f"edit {spec.source.name}; README.md 'Lab racks (labgrid)' lists the keys",
    )
