"""Whether a report may be signed, with every reason it may not: what `--sign` refuses and the
headline names. A certificate vouches for exactly what ran and was seen, so each input must be
whole and honest (hil.report.inputs), no result may come from an altered run, and every runner
must be a release build whose identity hil knew."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from hil.report.inputs import Source
from hil.report.rows import Row

_SHOWN = 5


def judge(sources: Sequence[Source], rows: Sequence[Row]) -> dict[str, Any]:
    """`certifiable` and its `reasons` (in the order a signer should read them)."""
    reasons = [problem for source in sources for problem in source.problems]
    reasons += altered_reasons(rows)
    reasons += runner_reasons(rows)
    reasons = list(dict.fromkeys(reasons))
    return {"certifiable": not reasons, "reasons": reasons}


def altered_reasons(rows: Iterable[Row]) -> list[str]:
    """One reason per alteration, naming the results it touched."""
    touched: dict[str, list[str]] = {}
    for row in rows:
        for why in row.get("altered") or []:
            touched.setdefault(str(why), []).append(_name(row))
    return [
        f"{len(names)} result(s) of an altered run ({why}): {_some(names)}"
        for why, names in touched.items()
    ]


def runner_reasons(rows: Iterable[Row]) -> list[str]:
    """A runner whose build hil did not expect, or could not know, certifies nothing."""
    reasons: dict[str, None] = {}
    for row in rows:
        info: Mapping[str, str] = row.get("target_info") or {}
        build = info.get("build_id")
        if not build:
            continue  # no runner between hil and the runtime (host, the reference targets)
        expected = info.get("expected_build_id")
        target = row["target"]
        if info.get("build") not in ("release", "test"):  # a test build is an alteration
            reasons[
                f"{target}: its runner (build {build}) does not say whether it was built with a "
                "planted fault (a runner older than protocol 1.4): rebuild it with this hil"
            ] = None
        if not expected:
            reasons[
                f"{target}: its runner reports build {build}, and hil did not know which build "
                "to expect (a board flashed outside hil, or an older hil): its identity is "
                "unknown"
            ] = None
        elif expected != build:
            reasons[
                f"{target}: its runner reports build {build}, not {expected} (the build made "
                "for this device file): give connection.flash so hil flashes its own build"
            ] = None
    return list(reasons)


def _name(row: Row) -> str:
    return f"{row['case']} on {row['target']} [{row['recipe']}]"


def _some(names: Sequence[str]) -> str:
    return "; ".join(names[:_SHOWN]) + (
        f"; and {len(names) - _SHOWN} more" if len(names) > _SHOWN else ""
    )
