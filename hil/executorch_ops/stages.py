"""Their stage assertions, evaluated on hil's lowering where it has the facts.

An operator author asserts more than numbers: `check_count.exir` (exactly one delegate),
`check_not.exir` (the edge op is gone: delegated), `OpNotSupportedPipeline`'s operators that
must stay on the CPU, `count_tosa_ops` (the TOSA operators the delegate holds). hil answers
them from the artifact it made:

    check_count / check_not after lowering   the partition report: delegates, CPU operators
    count_tosa_ops                           the delegates' TOSA graphs (ethos-u, tosa-fp)
    check after export, check_dtype_count, anything else
                                             not kept by hil: reported as not checked

An assertion is judged (it can fail the case) only where hil's lowering is the one they
assert on: an Arm partition (ethos-u, tosa-fp) for the TOSA, Ethos-U and OpNotSupported
pipelines. Their TosaPipelineINT lowers for the generic TOSA-1.0 INT profile and hil's ethos-u
recipe for the NPU's, so TOSA operator counts may differ for good reason: those are reported,
never a failure; so are its partition assertions on an Ethos-U55, which delegates a subset of
that profile. The tosa-fp recipe lowers for the test's own TOSA FP specification: its
counts are judged.

On a host target (XNNPACK, portable) the test is judged for its outputs only: its Arm
assertions (the delegate count, the edge operators gone, the TOSA operator counts, the
partitioner checks it adds) are about a lowering hil does not make there, so they are "not
applicable", each named with the recipe that lowered instead; never asserted against another
backend's partition.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from hil.artifacts.partition import PartitionReport
from hil.artifacts.store import Artifact
from hil.errors import HilError
from hil.executorch_ops.calls import AFTER_LOWERING, StageAssertion

PREFIXES = ("executorch_exir_dialects_edge__ops_", "torch.ops.", "torch_ops_")
DELEGATE = "higher_order_executorch_call_delegate"
JUDGED, FAILED, REPORTED = "judged", "failed", "reported"
NOT_APPLICABLE = "not applicable"  # an Arm assertion on a target that lowers for another backend
# Arm's own partitions and passes: their checks apply
ARM_LOWERINGS = ("ethos-u", "cortex-m", "tosa-fp", "vgf", "vgf-fp")


@dataclass(frozen=True)
class StageResult:
    assertion: StageAssertion
    # judged (held), failed, reported (not judged: `note` says why), not applicable (an
    # Arm assertion where hil lowered for another backend: `note` names it)
    status: str
    found: Any = None
    note: str = ""

    def to_record(self) -> dict[str, Any]:
        return {
            "check": self.assertion.check,
            "after": self.assertion.after,
            "expected": _plain(self.assertion.expected),
            "status": self.status,
            "found": _plain(self.found),
            "note": self.note,
        }


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [_plain(v) for v in value]
    return value if isinstance(value, (int, float, str, bool, type(None))) else str(value)


def normalized(op: str) -> str:
    """ "executorch_exir_dialects_edge__ops_aten_add_Tensor", "torch.ops.aten.add.Tensor" and
    hil's "aten.add.Tensor" all become "aten_add_Tensor"."""
    for prefix in PREFIXES:
        op = op.removeprefix(prefix)
    return op.replace(".", "_")


def cpu_counts(report: PartitionReport) -> dict[str, int]:
    """Operators left in the lowered program's own graph (what their exir checks read): the
    CPU fallbacks and quantize/dequantize, the delegate calls, and, where the backend's kernels
    are operators of the graph itself (cortex_m:: on CMSIS-NN), those too."""
    counts = {normalized(f.op): f.count for f in report.fallbacks}
    if report.delegates == 0:
        for op, count in report.accelerated.items():
            counts[normalized(op)] = counts.get(normalized(op), 0) + count
    for op, count in report.boundary.items():
        counts[normalized(op)] = counts.get(normalized(op), 0) + count
    counts[DELEGATE] = report.delegates
    return counts


def not_arm(recipe: str) -> bool:
    """Whether hil's `recipe` lowers for a backend other than Arm's (XNNPACK, portable)."""
    return recipe not in ARM_LOWERINGS


def edits_not_applicable(unapplied: Iterable[str], recipe: str) -> list[StageResult]:
    """The test's edits of the Arm partitioner (`additional_checks=[DontPartition(...)]`), on a
    recipe that lowers for another backend: named in the record as not applicable there."""
    return [
        StageResult(
            StageAssertion("edit", edit.partition("(")[0], edit),
            NOT_APPLICABLE,
            note=f"an Arm partitioner's edit; hil's {recipe} recipe lowers for another backend, "
            "so the case is judged for its outputs only",
        )
        for edit in unapplied
    ]


def not_applicable_note(recipe: str) -> str:
    return (
        f"an Arm lowering's assertion; hil's {recipe} recipe lowers for another backend, "
        "so the case is judged for its outputs only"
    )


def arm_only(assertion: StageAssertion) -> bool:
    """Whether the assertion is about an Arm lowering: a partition or TOSA count after it."""
    after = assertion.after.rpartition(".")[2]
    lowered = after in AFTER_LOWERING or after == "end"
    return assertion.check == "count_tosa_ops" or (
        assertion.check in ("check_count", "check_not") and lowered
    )


def evaluate(
    assertions: Iterable[StageAssertion], artifact: Artifact, recipe: str, pipeline: str
) -> list[StageResult]:
    arm = not not_arm(recipe)
    if not arm:
        return [
            StageResult(a, NOT_APPLICABLE, note=not_applicable_note(recipe))
            if arm_only(a) and a.expected
            else StageResult(a, REPORTED, note=_unkept(a))
            for a in assertions
        ]
    report = artifact.parts.partition
    subset = _npu_subset(artifact, pipeline)
    results = []
    for assertion in assertions:
        after = assertion.after.rpartition(".")[2] if "." in assertion.after else assertion.after
        lowered = after in AFTER_LOWERING or after == "end"
        if not assertion.expected:
            results.append(StageResult(assertion, REPORTED, note="nothing asserted"))
        elif assertion.check in ("check_count", "check_not") and lowered:
            if report is None:
                results.append(StageResult(assertion, REPORTED, note="no partition report"))
                continue
            if subset:
                results.append(StageResult(assertion, REPORTED, note=subset))
                continue
            results.append(_partition(assertion, cpu_counts(report)))
        elif assertion.check == "count_tosa_ops":
            results.append(_tosa_counts(assertion, artifact, arm, pipeline))
        else:
            results.append(StageResult(assertion, REPORTED, note=_unkept(assertion)))
    return results


def _unkept(assertion: StageAssertion) -> str:
    if not assertion.expected:
        return "nothing asserted"
    if assertion.check == "check" and assertion.after.rpartition(".")[2] == "aten":
        return "hil keeps no export graph"
    return f"{assertion.check} after {assertion.after}: hil keeps no such stage"


def _npu_subset(artifact: Artifact, pipeline: str) -> str | None:
    """Why a TosaPipelineINT partition assertion is not this NPU's to answer: it asserts the
    generic TOSA-1.0 INT profile's partition, and the Ethos-U55 delegates a subset of it (their
    OpNotSupportedPipeline(u55_subset=True) tests assert what it leaves out; measured over the
    folder's first 88 files: 384 checks where an operator the profile delegates stays on the
    U55's CPU, every one with outputs right). The Ethos-U85 delegates the profile: judged."""
    ethos_u = artifact.parts.ethos_u
    if pipeline != "TosaPipelineINT" or ethos_u is None:
        return None
    if not ethos_u.accelerator.lower().replace("_", "-").startswith("ethos-u55"):
        return None
    return (
        "asserts the TOSA-1.0 INT profile's partition; the Ethos-U55 delegates a subset of it "
        f"({ethos_u.accelerator})"
    )


def _partition(assertion: StageAssertion, counts: Mapping[str, int]) -> StageResult:
    if assertion.check == "check_not":
        present = {
            op: counts[normalized(op)] for op in assertion.expected if counts.get(normalized(op), 0)
        }
        return StageResult(
            assertion,
            FAILED if present else JUDGED,
            present or {},
            f"still on the CPU: {present}" if present else "",
        )
    expected = {str(op): int(n) for op, n in dict(assertion.expected).items()}
    found = {op: counts.get(normalized(op), 0) for op in expected}
    wrong = {op: (n, found[op]) for op, n in expected.items() if found[op] != n}
    note = "; ".join(f"{op}: expected {n}, hil's lowering has {m}" for op, (n, m) in wrong.items())
    return StageResult(assertion, FAILED if wrong else JUDGED, found, note)


def count_message(op: str, expected: int, found: int) -> str:
    """Their count_tosa_ops's own words (arm_tester.count_tosa_ops), so that a test expecting
    its failure (`pytest.raises(AssertionError, match="Expected 2 occurrences of TOSA op
    ADD")`) matches hil's, which counts the same operators in the lowering hil made."""
    if expected == 0:
        said = f"Expected no occurrences of TOSA op {op} but found {found}"
    elif found == 0:
        said = f"Expected TOSA op {op} but it was not found"
    else:
        said = f"Expected {expected} occurrences of TOSA op {op} but found {found}"
    return f"{said} in hil's lowering."


def _tosa_counts(
    assertion: StageAssertion, artifact: Artifact, arm: bool, pipeline: str
) -> StageResult:
    if not arm or artifact.parts.tosa_spec is None:
        return StageResult(assertion, REPORTED, note="no TOSA graph: not a TOSA lowering")
    from hil.artifacts.tosa_graph import read_tosa

    counts: dict[str, int] = {}
    try:
        for part in artifact.parts.tosa_graphs:
            for op in read_tosa(artifact.folder / part.folder / "out.tosa").ops:
                counts[op.op] = counts.get(op.op, 0) + 1
    except HilError as e:
        return StageResult(assertion, REPORTED, note=f"TOSA graph unreadable: {e.message}")
    expected = {str(k): int(v) for k, v in dict(assertion.expected).items()}
    found = {op: counts.get(op, 0) for op in expected}
    differs = {op: (n, found[op]) for op, n in expected.items() if found[op] != n}
    if not differs:
        return StageResult(assertion, JUDGED, found)
    note = "; ".join(count_message(op, n, m) for op, (n, m) in differs.items())
    if pipeline.startswith("Tosa") and artifact.parts.ethos_u is not None:
        # the generic TOSA profile against the NPU's: reported
        return StageResult(assertion, REPORTED, found, note + " (TOSA-1.0 profile vs the NPU's)")
    return StageResult(assertion, FAILED, found, note)
