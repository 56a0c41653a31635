"""Speed of the host path, printed as ratios from one run (never asserted in tests).

1. Cold vs warm wall time of `pytest suites --target=host`: the cold run starts from an empty
   artifact cache, the warm run reuses it. Goal: warm at least 5x faster.
2. Per-inference overhead of hil's host target against a bare ExecuTorch runtime loop on the
   same .pte. Goal: close to 1.0.

Usage: .venv/bin/python bench/cold_warm.py [extra pytest args, e.g. suites/operators]
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from hil import Case, seeded
from hil.devices import TimingPolicy
from hil.session import Session

REPO = Path(__file__).resolve().parent.parent
POLICY = TimingPolicy(warmup=20, min_runs=2000, min_time_s=1.0, max_runs=20000, max_time_s=5.0)


def timed_pytest(cache: Path, results: Path, args: list[str]) -> float:
    env = {**os.environ, "HIL_CACHE_DIR": str(cache), "HIL_RESULTS_DIR": str(results)}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    tail = done.stdout.strip().splitlines()[-1:] or ["(no output)"]
    print(f"  {'pytest ' + ' '.join(args):<40} {elapsed:7.1f} s   {tail[0]}")
    return elapsed


def cold_vs_warm(args: list[str]) -> None:
    print("cold vs warm `pytest " + " ".join(args) + "`")
    with tempfile.TemporaryDirectory(prefix="hil-bench-") as tmp:
        cache, results = Path(tmp) / "cache", Path(tmp) / "results"
        cold = timed_pytest(cache, results, args)
        warm = timed_pytest(cache, results, args)
    print(f"  warm is {cold / warm:.1f}x faster than cold (goal: at least 5x)\n")


def bare_loop(pte: Path, x: torch.Tensor, runs: int) -> list[float]:
    from executorch.runtime import Runtime

    method = Runtime.get().load_program(pte).load_method("forward")
    for _ in range(POLICY.warmup):
        method.execute([x])
    timings = []
    for _ in range(runs):
        begin = time.perf_counter_ns()
        method.execute([x])
        timings.append((time.perf_counter_ns() - begin) / 1000.0)
    return timings


def host_overhead() -> None:
    print("per-inference overhead: hil host target vs a bare ExecuTorch loop (same .pte)")

    def model() -> torch.nn.Module:
        torch.manual_seed(0)
        return torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU(), torch.nn.Flatten())

    case = Case("bench_cnn", model, seeded((1, 3, 16, 16)), timing=POLICY)
    with (
        tempfile.TemporaryDirectory(prefix="hil-bench-") as tmp,
        Session(cache_dir=Path(tmp) / "cache", results_dir=Path(tmp) / "results") as session,
    ):
        for recipe in ("portable", "xnnpack-fp32"):
            result = session.check(case, "host", recipe)
            assert result.latency is not None
            bare = statistics.median(
                bare_loop(result.artifact.pte_path, case.inputs()[0], result.latency.runs)
            )
            hil_us = result.latency.median_us
            ratio = hil_us / bare
            print(f"  {recipe:<14} hil {hil_us:8.2f} us   bare {bare:8.2f} us   ratio {ratio:.3f}")


def main() -> None:
    args = sys.argv[1:] or ["suites", "--target=host"]
    cold_vs_warm(args)
    host_overhead()


if __name__ == "__main__":
    main()
