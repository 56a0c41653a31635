"""Why a check's numbers are not a release device's own work: what a certificate must not sign.

A run whose outputs were rewritten after the run (fault injection: bench/mutants.py, the
device-question tests), that ran on a runner built with a kernel wrong on purpose, or on a test
build of the runner that obeys requests to hang or fault (HIL_DEBUG_COMMANDS; release builds, the
default, refuse them) can pass: a PASS then says nothing about a release device. Each such
check carries the reasons in its record, whether it passed or failed, and the report names them
in its headline and does not certify the run (hil.report).
"""

from __future__ import annotations

from collections.abc import Mapping

REWRITTEN = "outputs rewritten after the run (fault injection): not the device's outputs"


def alterations(target_info: Mapping[str, str], *, rewritten: bool) -> tuple[str, ...]:
    """The reasons this check's run was altered (none: the device's own work)."""
    found = [REWRITTEN] if rewritten else []
    planted = target_info.get("planted_fault")
    if planted:
        found.append(
            f"the runner was built with a kernel wrong on purpose (HIL_PLANTED_FAULT={planted})"
        )
    if target_info.get("debug_commands") == "accepted":
        found.append(
            "the runner is a test build that obeys requests to hang or fault "
            "(HIL_DEBUG_COMMANDS=ON), not a release build"
        )
    return tuple(found)
