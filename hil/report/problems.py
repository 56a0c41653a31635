"""The summary's list of cases that got no verdict on the model: the infrastructure or the
target failed (lost link, hung emulator, FVP time limit, runner crash, deploy failure).

Pure function from result records to text lines. These are kept apart from model verdicts
(MISMATCH, OVER BUDGET, PARTITION), which say something about the model; these say something
about the lab, and the fix is there.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

Record = Mapping[str, Any]

# Verdicts of error records (hil.plugin.records) that are not about the model.
NOT_THE_MODEL = ("INFRA", "CRASH", "UNAVAILABLE", "DEPLOY FAILED")
MAX_MESSAGE = 240  # long enough for a message that ends with its log path


def _first_line(text: str | None) -> str:
    line = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    return line if len(line) <= MAX_MESSAGE else line[: MAX_MESSAGE - 3] + "..."


def render(records: Sequence[Record]) -> list[str]:
    problems = [r for r in records if r.get("verdict") in NOT_THE_MODEL]
    if not problems:
        return []
    verdicts = Counter(r["verdict"] for r in records)
    model = ", ".join(f"{n} {v}" for v, n in verdicts.items() if v not in NOT_THE_MODEL)
    lab = ", ".join(f"{n} {v}" for v, n in verdicts.items() if v in NOT_THE_MODEL)
    lines = [
        f"infrastructure and target problems: {lab} (not verdicts on the model"
        + (f"; model verdicts: {model})" if model else ")"),
    ]
    width = max(len(r["verdict"]) for r in problems)
    for r in problems:
        where = f"{r['case']} on {r['target']} [{r['recipe']}]"
        cause = r.get("error_class", "")
        lines.append(
            f"  {r['verdict']:<{width}}  {where}: {cause}: {_first_line(r.get('failure'))}"
        )
    lines.append("")
    return lines
