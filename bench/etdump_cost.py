"""What recording ExecuTorch's ETDump costs an inference on the runner (issue #36): the same
program timed by the runner's clock untraced (as every judged run is), with the profiling
recorder attached, and with every intermediate output kept in a debug buffer. One run prints
each model's median per inference and the ratios; no goal is asserted.

    untraced   RUN as a check runs it: no event tracer attached to the method
    profiling  TRACE start without a debug buffer: the runtime's OPERATOR_CALL events
    debug      TRACE start with a debug buffer: every instruction's output copied into it
               (one run, no warm-up: the buffer holds one inference)

Run: .venv/bin/python bench/etdump_cost.py [--target vboard] [--runs 50] [--record]
(`--record` writes the two median ratios to bench/figures.json for the docs).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from figures import record

from hil.artifacts.pte_program import read_program
from hil.explain.etdump import debug_buffer_size
from hil.runner.driver import RunnerDriver
from hil.session import Session
from suites.models.mlperf_tiny import CASES as TINY
from suites.models.mobilenet_v2_cases import CASES as MOBILENET

RECIPES = ("portable", "xnnpack-fp32", "xnnpack-int8")


def median_per_run(
    driver: RunnerDriver, artifact: object, inputs: object, runs: int, warmup: int = 2
) -> float:
    """The runner's median time of one inference (ns), the inputs set as a check sets them."""
    method = driver._methods[artifact.sha256]  # type: ignore[attr-defined]
    driver._set_inputs(method, inputs)  # type: ignore[arg-type]
    times = driver.client.run(warmup, runs, runs, 0.0, 0.0)
    return statistics.median(times.ticks) * 1e9 / times.clock_hz


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="vboard")
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--record", action="store_true", help="write bench/figures.json")
    args = parser.parse_args()
    cases = [*TINY, *MOBILENET][:6]
    print(f"ETDump cost on {args.target}, {args.runs} runs each, median per inference")
    print(f"{'case':28} {'recipe':13} {'untraced':>10} {'profiling':>10} {'debug':>10}  ratios")
    ratios: list[tuple[float, float]] = []
    with tempfile.TemporaryDirectory() as folder, Session(results_dir=Path(folder)) as session:
        for case in cases:
            for recipe in RECIPES:
                artifact = session.export(case, args.target, recipe)
                target = session.target(args.target)
                target.deploy(artifact)
                driver: RunnerDriver = target.driver  # type: ignore[attr-defined]
                inputs = case.build().inputs
                plain = median_per_run(driver, artifact, inputs, args.runs)
                driver.client.trace(True, 0)
                profiled = median_per_run(driver, artifact, inputs, args.runs)
                driver.client.trace(False)
                # one run: the debug buffer holds one inference's intermediates (sized as an
                # explaining run sizes it; ETDump aborts the runner when it overflows)
                program = read_program(artifact.pte_path)  # type: ignore[attr-defined]
                driver.client.trace(True, debug_buffer_size(program))
                debug = median_per_run(driver, artifact, inputs, 1, warmup=0)
                driver.client.trace(False)
                ratios.append((profiled / plain, debug / plain))
                print(
                    f"{case.name[:28]:28} {recipe:13} {plain / 1e3:9.1f}u {profiled / 1e3:9.1f}u "
                    f"{debug / 1e3:9.1f}u  {profiled / plain:.2f}x {debug / plain:.2f}x"
                )
    prof = statistics.median(r[0] for r in ratios)
    dbg = statistics.median(r[1] for r in ratios)
    print(f"median ratio over {len(ratios)} programs: profiling {prof:.2f}x, debug {dbg:.2f}x")
    if args.record:
        command = " ".join(["bench/etdump_cost.py", *sys.argv[1:]])
        what = f"an inference on {args.target}, median over programs, against untraced"
        record(
            "etdump_cost.profiling_x", round(prof, 2), "x", f"profiling recorder: {what}", command
        )
        record("etdump_cost.debug_x", round(dbg, 2), "x", f"debug buffer: {what}", command)
    return 0


if __name__ == "__main__":
    sys.exit(main())
