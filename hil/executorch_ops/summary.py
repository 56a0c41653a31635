"""The run's closing section: hil's verdict beside ExecuTorch's rule, and every difference.

    case                         target   variant  hil   steps  their rule
    test_add::test_add_tensor_tosa_INT[1d_randn]  u85-ref  int8  PASS  0  PASS
    ...
    verdicts: agree 531 · hil fails, their rule passes 3 · their rule fails, hil passes 1 ·
    not comparable 4

A difference is listed with both sides' words: hil's failure (the limit and the measured
reason beside it) and the rule's allclose figures, so a reviewer sees which rule caught what.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from hil.executorch_ops.runner import EXTRA

PASSING = ("PASS",)
# A difference is named by what each side said, never by who is "stricter": hil failing where
# their rule passes may be hil's limit, hil's reference or the lowering (the cause is in the
# failure's words beside it).
HIL_FAILS = "hil fails, their rule passes"
THEIRS_FAILS = "their rule fails, hil passes"
KINDS = ("agree", HIL_FAILS, THEIRS_FAILS, "not comparable")


def _hil_passed(record: Mapping[str, Any]) -> bool | None:
    verdict = str(record.get("verdict", ""))
    if verdict == "NOT JUDGED":
        return None
    return verdict in PASSING


def classify(record: Mapping[str, Any]) -> str:
    extra = record.get(EXTRA, {})
    theirs = {"PASS": True, "FAIL": False}.get(str(extra.get("their_rule")))
    ours = _hil_passed(record)
    if theirs is None or ours is None:
        return "not comparable"
    if ours == theirs:
        return "agree"
    return HIL_FAILS if theirs else THEIRS_FAILS


def render(records: Iterable[Mapping[str, Any]]) -> list[str]:
    ours = [r for r in records if EXTRA in r]
    if not ours:
        return []
    counts = Counter(classify(r) for r in ours)
    pipelines = Counter(str(r[EXTRA].get("pipeline")) for r in ours)
    assertions = Counter(
        a.get("status") for r in ours for a in r[EXTRA].get("stage_assertions", ())
    )
    lines = [
        f"{len(ours)} checks: " + ", ".join(f"{p} {n}" for p, n in sorted(pipelines.items())),
        "verdicts: " + " · ".join(f"{k} {counts[k]}" for k in KINDS if counts[k]),
        "their stage assertions on hil's lowering: "
        + (", ".join(f"{k} {v}" for k, v in sorted(assertions.items())) or "none"),
    ]
    lines += _table(ours)
    differing = [r for r in ours if classify(r) in (HIL_FAILS, THEIRS_FAILS)]
    noted = [r for r in ours if r[EXTRA].get("their_xfail")]
    for record in differing:
        extra = record[EXTRA]
        lines.append(
            f"  {classify(record)}: {record.get('case')} on {record.get('target')} "
            f"[{extra.get('variant')}]: hil {record.get('verdict')}"
            f"{_steps(record)}; their rule {extra.get('their_rule')} "
            f"({extra.get('their_rule_detail')})"
        )
        failure = str(record.get("failure") or "").splitlines()
        if failure:
            lines.append(f"    hil: {failure[0]}")
        lines.append(f"    figures: {figures(record)}")
    for record in noted:
        lines.append(
            f"  ExecuTorch expects {record.get('case')} to fail "
            f"({record[EXTRA]['their_xfail']}); hil: {record.get('verdict')} on "
            f"{record.get('target')}"
        )
    return lines


def _table(records: list[Mapping[str, Any]]) -> list[str]:
    """One row per check: case, target, variant, hil's verdict, steps, their rule."""
    rows = [
        (
            str(r.get("case")),
            str(r.get("target")),
            str(r[EXTRA].get("variant")),
            str(r.get("verdict")),
            _step_figure(r),
            str(r[EXTRA].get("their_rule")),
        )
        for r in records
    ]
    head = ("case", "target", "variant", "hil", "steps", "their rule")
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(head)]

    def line(cells: tuple[str, ...]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()

    return [line(head), line(tuple("-" * w for w in widths)), *(line(r) for r in rows)]


def _step_figure(record: Mapping[str, Any]) -> str:
    steps = _steps_of(record)
    return f"{steps:g}" if steps is not None else "-"


def _steps_of(record: Mapping[str, Any]) -> float | None:
    """The target's worst output, in steps from the quantized model (None: not measured)."""
    agreement = record.get("quantized_agreement") or {}
    steps = agreement.get("steps") if isinstance(agreement, Mapping) else None
    return float(steps) if isinstance(steps, (int, float)) else None


def _steps(record: Mapping[str, Any]) -> str:
    steps = _steps_of(record)
    return f", {steps:g} steps from the quantized model" if steps is not None else ""


def figures(record: Mapping[str, Any]) -> str:
    """A difference in two quantities: hil's measure nearest its limit (past it where hil
    failed) and the worst element's error against allclose's bound under their rule."""
    hil = hil_figure(record)
    failed = failed_checks(record)
    if hil:
        used = f"{hil['share']:.3g} of the limit" if math.isfinite(hil["share"]) else "past it"
        hil_part = (
            f"hil {hil['metric']} {hil['observed']:.4g} against {hil['relation']} "
            f"{hil['limit']:.4g} ({used})"
        )
    elif failed and (failed[0].get("breaches") or failed[0].get("cause")):  # a type, a shape
        hil_part = f"hil: {(failed[0].get('breaches') or [failed[0]['cause']])[0]}"
    else:
        hil_part = "hil: no numeric limit judged"
    extra = record.get(EXTRA, {})
    error, allowed = extra.get("their_rule_max_error"), extra.get("their_rule_allowed")
    if isinstance(error, (int, float)) and isinstance(allowed, (int, float)) and allowed > 0:
        theirs = f"their |error| {error:.4g} against {allowed:.4g} ({error / allowed:.3g} of it)"
    else:
        theirs = "their rule: no figure"
    return f"{hil_part}; {theirs}"


def failed_checks(record: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [c for c in record.get("checks") or () if c.get("status") == "fail"]


def hil_figure(record: Mapping[str, Any]) -> dict[str, Any] | None:
    """hil's limit the check came nearest to (or went furthest past): metric, observed,
    relation, limit, and the share of the limit used (over 1: past it). Where a check failed,
    only the failed checks' limits: a passing budget is not why the case failed."""
    best: tuple[bool, float, dict[str, Any]] | None = None
    for check in failed_checks(record) or record.get("checks") or ():
        observed = check.get("observed") or {}
        for limit in check.get("limits") or ():
            value, seen = limit.get("value"), observed.get(limit.get("metric"))
            if not isinstance(value, (int, float)) or not isinstance(seen, (int, float)):
                continue
            if limit.get("relation") == "<=":
                share = seen / value if value else (0.0 if seen == 0 else float("inf"))
            else:  # ">=": how much of the floor is missing
                share = value / seen if seen > 0 else float("inf")  # 0 dB or under: past it
            figure = {
                "metric": limit.get("metric"),
                "observed": float(seen),
                "relation": limit.get("relation"),
                "limit": float(value),
                "share": share,
            }
            key = (check.get("status") == "fail", share, figure)
            if best is None or key[:2] > best[:2]:
                best = key
    return best[2] if best else None
