"""The runners a report's results ran on, from the handshake facts each check recorded: which
build, on which ExecuTorch, and whether it is a release build. A test build (one that obeys
requests to hang or fault, or carries a kernel wrong on purpose) certifies nothing, and the
table says which results ran on one."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# a runner's handshake facts, as RunnerDriver.describe records them, and what hil expected of
# it (RunnerTarget.describe): the build made for the device file, the binary it ran
FACTS = (
    "build_id",
    "expected_build_id",
    "runner_sha256",
    "protocol",
    "executorch",
    "platform",
    "engine",
    "etdump",
    "debug_commands",
)


def build_kind(identity: Mapping[str, str]) -> str:
    """Release or test build, from what the runner said of itself."""
    if identity.get("planted_fault"):
        return "test build: a kernel wrong on purpose"
    if identity.get("debug_commands") == "accepted":
        return "test build: hangs or faults on request"
    if identity.get("build") == "release":
        return "release"
    return "unknown: its handshake did not say (a runner older than protocol 1.4)"


def runner_rows(targets: Mapping[str, Any]) -> list[dict[str, str]]:
    """One row per target and runner build (targets without a runner have none)."""
    rows: list[dict[str, str]] = []
    for name, entry in targets.items():
        for identity in entry.get("identities") or []:
            if "build_id" not in identity:
                continue
            row = {"target": name, **{fact: identity.get(fact, "-") for fact in FACTS}}
            row["planted_fault"] = identity.get("planted_fault") or "none"
            row["build"] = build_kind(identity)
            if row not in rows:
                rows.append(row)
    return rows
