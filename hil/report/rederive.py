"""A row's category and `altered` are derived from its facts, never taken as written: the
verdict and pytest's outcome give the category, and the runner's own account of itself (a
planted fault compiled in, debug commands accepted) gives `altered`. A row edited to say "pass"
beside a MISMATCH, or a test build's record that carries no `altered`, reads as what it is."""

from __future__ import annotations

from typing import Any

from hil.report import verdicts
from hil.verdict.altered import alterations


def row(found: dict[str, Any]) -> dict[str, Any]:
    """The row with its category and alterations derived again (the stricter of what it says
    and what its facts show: a written alteration is never dropped)."""
    info = {str(k): str(v) for k, v in (found.get("target_info") or {}).items()}
    written = [str(a) for a in found.get("altered") or []]
    altered = list(dict.fromkeys([*written, *alterations(info, rewritten=False)]))
    category = verdicts.category_of(
        str(found["verdict"]),
        found.get("outcome"),
        from_error=found.get("error_class") is not None,
        quarantined=bool(found.get("quarantine")),
    )
    return {**found, "category": category, "altered": altered}
