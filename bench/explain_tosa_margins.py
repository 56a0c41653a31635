"""How far healthy TOSA intermediates are from the quantized model: the basis of the
explainer's per-node limit (hil.explain.tosa.NODE_MARGIN).

For every suite case that passes on u85-ref / u55-ref, runs hil.explain.tosa.explain_delegates
and prints, per case: tensors compared, the largest error in steps of each operator on the
reference's inputs (what the explainer judges), how many are a step or more off and how many
over the limit (a healthy case must have none), the largest error of the chained run (each
operator on the delegate's own upstream values: rounding drift, for comparison), plus the time
the explainer took against the check's.

Usage: .venv/bin/python bench/explain_tosa_margins.py [CACHE_DIR] [--operators]
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import hil
from hil.devices import DeviceRegistry
from hil.explain.tosa import isolated_and_chained
from hil.session import Session

REPO = Path(__file__).resolve().parent.parent
TARGETS = ("u85-ref", "u55-ref")


def cases(operators: bool) -> list[hil.Case]:
    sys.path.insert(0, str(REPO))
    from suites.models import digits, mlperf_tiny, mobilenet_v2_cases, test_mobilenet_lrn

    found = [*mlperf_tiny.CASES, *digits.CASES, *mobilenet_v2_cases.CASES, test_mobilenet_lrn.CASE]
    if operators:
        from suites.operators.table import OPERATORS

        found.extend(OPERATORS)
    return found


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    cache = Path(args[0]) if args else Path(tempfile.gettempdir()) / "hil-explain-bench"
    devices = DeviceRegistry.from_dirs([REPO / "devices"])
    print(
        f"{'case':28} {'target':8} {'nodes':>5} {'max':>6} {'>=1':>4} {'over':>4} "
        f"{'chained':>7} {'c.over':>6} {'check s':>8} {'explain s':>9}"
    )
    with Session(devices=devices, cache_dir=cache) as session:
        for case in cases("--operators" in sys.argv):
            for target in TARGETS:
                if not case.applies_to(target, "ethos-u"):
                    continue
                start = time.perf_counter()
                try:
                    result = session.check(case, target)
                except hil.HilError as e:
                    print(f"{case.name:28} {target:8} not run: {type(e).__name__}")
                    continue
                checked = time.perf_counter() - start
                if not result.passed:
                    print(f"{case.name:28} {target:8} not healthy: {result.verdict}")
                    continue
                start = time.perf_counter()
                try:
                    divergence, chained = isolated_and_chained(
                        session.built(case),
                        result.artifact,
                        cache / "explain" / case.name,
                        store=cache / "shared" / "quantized",
                    )
                except hil.HilError as e:
                    print(f"{case.name:28} {target:8} explainer: {e.message}")
                    continue
                took = time.perf_counter() - start
                nodes = divergence.nodes if divergence else ()
                steps = [n.max_abs_steps or 0.0 for n in nodes]
                drift = chained.nodes if chained else ()
                print(
                    f"{case.name:28} {target:8} {len(nodes):5} {max(steps, default=0):6.2f} "
                    f"{sum(s >= 1 for s in steps):4} {sum(n.over for n in nodes):4} "
                    f"{max((n.max_abs_steps or 0.0 for n in drift), default=0):7.2f} "
                    f"{sum(n.over for n in drift):6} {checked:8.1f} {took:9.1f}",
                    flush=True,
                )
                for node in nodes:
                    if node.over:
                        print(f"    over: {node.describe()}")


if __name__ == "__main__":
    main()
