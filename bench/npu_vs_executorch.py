"""hil's Ethos-U stand-in against ExecuTorch's own Arm test-suite, on the same add cases.

ExecuTorch's suite (installed with the wheel) checks `add` through its TOSA INT pipeline:
quantize, lower to TOSA, run the TOSA reference model, compare. hil's u85-ref target does that
and more (Vela compiles and estimates every delegate, a partition report, agreement with the
quantized model), and keeps its artifacts, so a second run exports nothing.

Both run the very same cases: the modules and input factories of ExecuTorch's test_add.py
(Add, Add2, Add3 and their test_data), each through pytest in its own process, cold (hil:
empty artifact cache) and warm (hil: the cache of the cold run; ExecuTorch has none), in
interleaved rounds; the fastest run of each kind counts, as the build machines are shared.
The script prints the wall times and the ratios; nothing is asserted (see ARCHITECTURE.md).

Usage: .venv/bin/python bench/npu_vs_executorch.py [--target u85-ref]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ET_TEST = "executorch.backends.arm.test.ops.test_add"
# ExecuTorch test function -> the module class and test-data table it runs.
SUITES = {
    "test_add_tensor_tosa_INT": ("Add", "test_data"),
    "test_add_tensor_tosa_INT_2": ("Add2", "test_data"),
    "test_add_tensor_tosa_INT_3": ("Add3", "test_data"),
}

HIL_TESTS = textwrap.dedent(
    '''
    """The cases of ExecuTorch's test_add.py (tosa_INT), as hil cases."""
    import importlib

    import pytest
    import torch

    import hil

    SOURCE = importlib.import_module("{module}")
    SUITES = {suites!r}


    def seeded(factory):
        def make():
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(0)  # their factories call randn: fix it, so warm runs hit
                return factory()
        return make


    CASES = {{}}
    for test, (cls_name, table) in SUITES.items():
        cls = getattr(SOURCE, cls_name)
        for key, factory in getattr(cls, table).items():
            name = f"{{test}}[{{key}}]"
            CASES[name] = hil.Case(name, cls, seeded(factory))


    @pytest.mark.hil_cases(CASES)
    def test_add(hil_check):
        hil_check()
    '''
)


def executorch_node_ids() -> list[str]:
    import importlib

    source = importlib.import_module(ET_TEST)
    path = Path(source.__file__ or "")
    return [
        f"{path}::{test}[{key}]"
        for test, (cls_name, table) in SUITES.items()
        for key in getattr(getattr(source, cls_name), table)
    ]


def timed(label: str, command: list[str], cwd: Path, env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    lines = done.stdout.strip().splitlines()
    summary = next((line for line in reversed(lines) if " in " in line), "(no summary)")
    print(f"  {label:<28} {elapsed:7.1f} s   exit {done.returncode}: {summary.strip('= ')}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="u85-ref", help="hil target (default u85-ref)")
    parser.add_argument(
        "--rounds", type=int, default=2, help="interleaved rounds; the fastest of each counts"
    )
    args = parser.parse_args()
    ids = executorch_node_ids()
    pytest = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    theirs = [*pytest, "-p", "no:hil", *ids]  # their suite, without our plugin
    times: dict[str, list[float]] = {"et": [], "cold": [], "warm": []}
    print(f"{len(ids)} add cases of {ET_TEST} (tosa_INT), each run by both")
    print("(the machine may be shared: rounds are interleaved and the fastest run counts)")
    with tempfile.TemporaryDirectory(prefix="hil-npu-bench-") as tmp:
        work = Path(tmp)
        tests = work / "hil_cases"
        tests.mkdir()
        (tests / "test_add_cases.py").write_text(HIL_TESTS.format(module=ET_TEST, suites=SUITES))
        for round_ in range(1, args.rounds + 1):
            env = {**os.environ, "HIL_CACHE_DIR": str(work / f"cache{round_}")}
            hil = [
                *pytest,
                str(tests),
                f"--target={args.target}",
                f"--hil-devices={REPO / 'devices'}",
                f"--hil-results-dir={work / 'results'}",
            ]
            times["et"].append(timed(f"ExecuTorch suite ({round_})", theirs, work, env))
            times["cold"].append(timed(f"hil {args.target}, cold ({round_})", hil, work, env))
            times["et"].append(timed(f"ExecuTorch suite ({round_}b)", theirs, work, env))
            times["warm"].append(timed(f"hil {args.target}, warm ({round_})", hil, work, env))
    et, cold, warm = min(times["et"]), min(times["cold"]), min(times["warm"])
    print(f"\nfastest: ExecuTorch {et:.1f} s, hil cold {cold:.1f} s, hil warm {warm:.1f} s")
    print(f"cold: ExecuTorch / hil = {et / cold:.2f}  (above 1: hil is faster)")
    print(f"warm: ExecuTorch / hil = {et / warm:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
