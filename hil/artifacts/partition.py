"""Partition report: what runs on the accelerator and what falls back to the CPU.

A recipe that partitions (Ethos-U delegates, Cortex-M CMSIS-NN kernels) records one report per
artifact in its details under "partition". It names the accelerated operators, the operators left
to the CPU's portable kernels (with the partitioner's reason where it gives one), the "boundary"
operators that are on the CPU by design and move no arithmetic (quantize/dequantize at the
delegates' edges; on Cortex-M also the layout and view copies every graph keeps), the number of
delegates and the .pte size.

A case asserts "fully delegated" or an expected fallback set; operator names match on their
short form ("avg_pool3d" matches "aten.avg_pool3d.default"), so suites stay readable.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any


def short_name(op: str) -> str:
    """The operator without namespace and overload: "aten.avg_pool3d.default" -> "avg_pool3d"."""
    parts = op.split(".")
    if len(parts) >= 3:
        return parts[1]
    if len(parts) == 2:
        return parts[1] if parts[0] in ("aten", "cortex_m", "quantized_decomposed") else parts[0]
    return op


@dataclass(frozen=True)
class Fallback:
    """An operator the partitioner left on the CPU, how often, and why (when it said)."""

    op: str
    count: int
    reason: str | None = None


def _counts() -> Mapping[str, int]:
    return MappingProxyType({})


def _count(value: Any) -> int | None:
    return None if value is None else int(value)


@dataclass(frozen=True)
class PartitionReport:
    backend: str
    delegates: int
    accelerated: Mapping[str, int] = field(default_factory=_counts)
    fallbacks: tuple[Fallback, ...] = ()
    boundary: Mapping[str, int] = field(default_factory=_counts)
    pte_bytes: int = 0
    # MACs of the whole model and of its accelerated part; None where a MAC operator's shapes
    # are data-dependent (hil.ethos_u.macs): budgets on them are then NOT JUDGED
    macs: int | None = 0
    accelerated_macs: int | None = 0
    # CPU operators of the .pte that this ExecuTorch build has no kernel for: a device runtime
    # would refuse the program (Missing operator) unless its build adds one.
    missing_kernels: tuple[str, ...] = ()

    @property
    def accelerated_count(self) -> int:
        return sum(self.accelerated.values())

    @property
    def fallback_count(self) -> int:
        return sum(f.count for f in self.fallbacks)

    @property
    def delegated_fraction(self) -> float:
        """Accelerated compute operators over all compute operators (boundary Q/DQ excluded)."""
        total = self.accelerated_count + self.fallback_count
        return self.accelerated_count / total if total else 0.0

    @property
    def fully_delegated(self) -> bool:
        return not self.fallbacks and self.accelerated_count > 0

    def fallback_ops(self) -> frozenset[str]:
        return frozenset(f.op for f in self.fallbacks)

    def to_dict(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "delegates": self.delegates,
            "delegated_fraction": round(self.delegated_fraction, 4),
            "accelerated": dict(self.accelerated),
            "fallbacks": [
                {"op": f.op, "count": f.count, "reason": f.reason} for f in self.fallbacks
            ],
            "boundary": dict(self.boundary),
            "pte_bytes": self.pte_bytes,
            "macs": self.macs,
            "accelerated_macs": self.accelerated_macs,
            "missing_kernels": list(self.missing_kernels),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PartitionReport:
        return cls(
            backend=str(data["backend"]),
            delegates=int(data["delegates"]),
            accelerated=MappingProxyType(dict(data.get("accelerated", {}))),
            fallbacks=tuple(
                Fallback(str(f["op"]), int(f["count"]), f.get("reason"))
                for f in data.get("fallbacks", ())
            ),
            boundary=MappingProxyType(dict(data.get("boundary", {}))),
            pte_bytes=int(data.get("pte_bytes", 0)),
            macs=_count(data.get("macs", 0)),
            accelerated_macs=_count(data.get("accelerated_macs", 0)),
            missing_kernels=tuple(data.get("missing_kernels", ())),
        )

    def describe(self) -> str:
        """One line per fallback, for failure messages and logs."""
        if not self.fallbacks:
            return f"fully on {self.backend} ({self.delegates} delegate(s))"
        lines = [
            f"{f.op} x{f.count}" + (f": {f.reason}" if f.reason else "") for f in self.fallbacks
        ]
        return f"{self.delegates} delegate(s) on {self.backend}; on the CPU: " + "; ".join(lines)


def judge_partition(report: PartitionReport, expected: Iterable[str] | None) -> list[str]:
    """Problems when the CPU fallback set differs from `expected` (None: nothing asserted)."""
    if expected is None:
        return []
    want = {short_name(op) for op in expected}
    have = {short_name(f.op): f for f in report.fallbacks}
    problems = []
    if not want and report.accelerated_count == 0:
        problems.append(f"expected the model fully delegated, but nothing ran on {report.backend}")
    for name in sorted(set(have) - want):
        f = have[name]
        reason = f" ({f.reason})" if f.reason else ""
        problems.append(f"unexpected CPU fallback: {f.op} x{f.count}{reason}")
    for name in sorted(want - set(have)):
        problems.append(f"expected {name} on the CPU, but it was delegated (or is gone)")
    if problems:
        expectation = "fully delegated" if not want else "fallback " + ", ".join(sorted(want))
        problems.append(f"the case expects: {expectation}; got: {report.describe()}")
    return problems
