"""`connection.labgrid`: a serial or ssh device leases its board from a labgrid lab.

A device names a labgrid place, or a pool of equivalent places by tags, instead of a local port
or host; the rest of `connection` keeps the inner kind's keys (link timings, firmware, ...):

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
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from hil.settings.reader import Section

DEFAULT_COORDINATOR = "127.0.0.1:20408"
KEYS = (
    "coordinator",
    "place",
    "tags",
    "token",
    "prio",
    "wait_s",
    "power",
    "power_delay_s",
    "serial",
)
TAG_KEY = re.compile(r"[a-z][a-z0-9_]+\Z")  # labgrid's rule for tag names
ENV_ONLY = re.compile(r"\$\{?(\w+)\}?\Z")
LOCAL_KEYS = ("port", "virtual", "host")  # where the board is: the place says that instead
DOCS = "docs/lab-racks.md"


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

    @property
    def pool(self) -> str:
        """How the pool reads in messages: "board=vboard" or "name=rack1-vb3"."""
        return " ".join(f"{k}={v}" for k, v in sorted(self.filters.items()))

    @classmethod
    def parse(cls, connection: Section) -> LabSettings | None:
        """The labgrid section of a connection, or None when it has none."""
        if not connection.has("labgrid"):
            return None
        raw = connection.section("labgrid", DOCS)
        raw.reject_unknown(KEYS)
        for local in LOCAL_KEYS:
            if connection.has(local):
                connection.fail(
                    connection.key(local),
                    "absent: the labgrid place says where the board is",
                    connection.data[local],
                )
        if raw.has("place") == raw.has("tags"):
            connection.fail(
                raw.path, "exactly one of place: NAME or tags: {KEY: VALUE}", dict(raw.data)
            )
        filters: dict[str, str]
        if raw.has("place"):
            filters = {"name": str(raw.data["place"])}
        else:
            tags = raw.get("tags", Mapping)
            if not tags:
                raw.fail(raw.key("tags"), "a non-empty mapping of tag: value", tags)
            filters = {str(k): str(v) for k, v in tags.items()}
            for key in filters:
                if not TAG_KEY.match(key):
                    raw.fail(raw.key(f"tags.{key}"), "a tag name of [a-z][a-z0-9_]+", key)
        token = _env(raw.data.get("token"))
        prio = raw.get("prio", (int, float), 0.0, "a number")
        return cls(
            coordinator=_env(raw.data.get("coordinator"))
            or os.environ.get("LG_COORDINATOR")
            or DEFAULT_COORDINATOR,
            filters=MappingProxyType(filters),
            tokens=tuple(t.strip() for t in (token or "").split(",") if t.strip()),
            prio=float(prio),
            wait_s=_non_negative(raw, "wait_s", 600.0),
            power=raw.flag("power", True),
            power_delay_s=_non_negative(raw, "power_delay_s", 1.0),
            serial=raw.text("serial"),
        )


def _non_negative(section: Section, key: str, default: float) -> float:
    value = section.get(key, (int, float), default, "a non-negative number")
    if value < 0:
        section.fail(section.key(key), "a non-negative number", value)
    return float(value)


def _env(value: Any) -> str | None:
    """A string with $VARS expanded; a value that is only an unset variable is None."""
    if value is None:
        return None
    text = str(value)
    only = ENV_ONLY.match(text)
    if only:
        return os.environ.get(only.group(1)) or None
    return os.path.expandvars(text)
