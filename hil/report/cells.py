"""Table cells for the two questions of a verdict, from a record or report row (pure)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hil.report import fmt


def _checks(row: Mapping[str, Any], question: str) -> list[Mapping[str, Any]]:
    return [c for c in row.get("checks") or [] if c.get("question") == question]


def _limit(check: Mapping[str, Any], metric: str) -> float | None:
    for limit in check.get("limits") or []:
        if limit.get("metric") == metric:
            return fmt.number(limit.get("value"))
    return None


def target_cell(row: Mapping[str, Any]) -> str:
    """The target check, worst output: "2 of 11 steps" (quantized) or "3.1e-07 of 1.0e-04".
    Where the lowering and the device are judged apart, the lowering's numbers (against the
    model), prefixed by the device's when the device left its program's reference."""
    device = [c for c in _checks(row, "device") if c.get("status") == "fail"]
    if device:
        return "device: " + "; ".join(_device_numbers(c) for c in device)
    checks = _checks(row, "target") + _checks(row, "lowering")
    if any(c.get("status") == "not judged" for c in checks):
        return "not judged"
    worst: tuple[float, str] | None = None
    for check in checks:
        observed = check.get("observed") or {}
        for metric, unit in (("max_steps", " steps"), ("max_abs", "")):
            value, limit = fmt.number(observed.get(metric)), _limit(check, metric)
            if value is None or limit is None:
                continue
            text = f"{value:g} of {limit:g}{unit}" if unit else f"{value:.1e} of {limit:.1e}"
            share = value / limit if limit else float("inf")
            if worst is None or share > worst[0]:
                worst = (share, text)
    return worst[1] if worst else "-"


def _device_numbers(check: Mapping[str, Any]) -> str:
    observed = check.get("observed") or {}
    for metric, unit in (("max_steps", "steps"), ("max_ulps", "ULPs"), ("unequal", "unequal")):
        value, limit = fmt.number(observed.get(metric)), _limit(check, metric)
        if value is not None and limit is not None:
            return f"{value:g} {unit} (limit {limit:g})"
    return str(check.get("cause") or "wrong")


def quantization_cell(row: Mapping[str, Any]) -> str:
    """The quantized model against eager, worst output: "24.7 dB (limit 25)"."""
    sqnrs = [
        (fmt.number((c.get("observed") or {}).get("sqnr_db")), _limit(c, "sqnr_db"))
        for c in _checks(row, "quantization")
        if c.get("subject", "").startswith("output")
    ]
    known = [(v, lim) for v, lim in sqnrs if v is not None]
    if not known:
        return "-"
    value, limit = min(known, key=lambda pair: pair[0])
    return f"{value:.1f} dB" + (f" (limit {limit:g})" if limit is not None else "")
