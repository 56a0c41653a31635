"""Test builds of the runner, asked for by name: every preset builds a release runner, which
refuses the DEBUG request and `--inject` (hang or fault on purpose; firmware/README.md). A
fault-injection test that needs them builds its runner with HIL_DEBUG_COMMANDS=ON, through a
device file of its own, and the records of its checks are marked altered."""

from __future__ import annotations

import copy
from typing import Any

DEBUG_COMMANDS = {"HIL_DEBUG_COMMANDS": "ON"}


def with_debug_commands(spec: dict[str, Any]) -> dict[str, Any]:
    """A copy of a device file's data whose runner is a test build (its preset and defines
    kept)."""
    spec = copy.deepcopy(spec)
    connection = spec.setdefault("connection", {})
    firmware = connection.get("firmware")
    chosen = {"preset": firmware} if isinstance(firmware, str) else dict(firmware or {})
    chosen["defines"] = {**chosen.get("defines", {}), **DEBUG_COMMANDS}
    connection["firmware"] = chosen
    return spec
