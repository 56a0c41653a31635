"""Speed of a cold and a warm run, printed as ratios from one run (never asserted in tests).

1. `pytest suites` on the make-suites targets three times: cold with the export pool off
   (--hil-export-workers=0), cold with it (one worker per core), then warm. Goals: the pooled
   cold run at most 0.55x the unpooled one (on 2 cores), the warm run at least 5x faster.
   Printed beside: how many artifacts each cold run made and how many the workers built (equal:
   nothing was exported twice), and first what this machine gives two CPU-bound processes at
   once against one alone (a VM's two vCPUs need not be two cores' worth).
2. Per-inference overhead of hil's host target against a bare ExecuTorch runtime loop on the
   same .pte, in alternating windows. Goal: at most 1.05.

Usage: .venv/bin/python bench/cold_warm.py [--record] [pytest args instead of the make-suites run]
       .venv/bin/python bench/cold_warm.py --overhead-only [--record]

`--record` writes the figures the docs quote to bench/figures.json.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from figures import record

from hil import Case, seeded
from hil.devices import TimingPolicy
from hil.session import Session

REPO = Path(__file__).resolve().parent.parent
# short windows (a few tenths of a second), so that a bare and a hil window share the VM's phase
POLICY = TimingPolicy(warmup=20, min_runs=500, min_time_s=0.2, max_runs=20000, max_time_s=1.0)


def suite_targets() -> list[str]:
    """The make-suites targets, from the Makefile (one list, not a copy)."""
    found = re.search(r"^SUITE_TARGETS \?= (.+)$", (REPO / "Makefile").read_text(), re.M)
    assert found, "SUITE_TARGETS not found in the Makefile"
    return found.group(1).split()


def timed_pytest(cache: Path, results: Path, args: list[str], label: str) -> float:
    env = {**os.environ, "HIL_CACHE_DIR": str(cache), "HIL_RESULTS_DIR": str(results)}
    command = [sys.executable, "-m", "pytest", "-q", "-rfE", "-p", "no:cacheprovider", *args]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    tail = done.stdout.strip().splitlines()[-1:] or ["(no output)"]
    print(f"  {label:<28} {elapsed:7.1f} s  exit {done.returncode}  {tail[0]}")
    for line in done.stdout.splitlines():  # a run that failed says which cases, and why
        if line.startswith(("FAILED ", "ERROR ")):
            print(f"    {line}")
    if done.returncode != 0:
        print(f"    kept for a look: {keep_failed_run(results, done.stdout + done.stderr, label)}")
    return elapsed


def keep_failed_run(results: Path, output: str, label: str) -> Path:
    """A failed run's pytest output and records, copied out of the bench's temporary directory
    (a failure seen once on a slow day must not leave only its one-line summary)."""
    slug = re.sub(r"\W+", "-", label)
    kept = REPO / ".hil" / "bench" / f"{time.strftime('%Y%m%d-%H%M%S')}-{slug}"
    kept.mkdir(parents=True)
    (kept / "pytest.log").write_text(output)
    for name in ("records.jsonl", "run.json"):
        if (results / name).exists():
            shutil.copy2(results / name, kept / name)
    return kept


# one measured figure: its name in bench/figures.json, value, unit and what it is
FigureRow = tuple[str, int | float, str, str]


def cold_vs_warm(args: list[str]) -> list[FigureRow]:
    print(f"cold and warm `pytest {' '.join(args)}` on {os.cpu_count()} cores")
    two = parallel_efficiency()
    with tempfile.TemporaryDirectory(prefix="hil-bench-") as tmp:
        root = Path(tmp)
        serial = timed_pytest(
            root / "cache-serial",
            root / "r1",
            [*args, "--hil-export-workers=0"],
            "cold, export pool off",
        )
        pooled = timed_pytest(root / "cache", root / "r2", args, "cold, export pool on")
        made_serial, made_pooled, by_workers = artifact_counts(
            root / "cache-serial", root / "cache", root / "r2"
        )
        warm = timed_pytest(root / "cache", root / "r3", args, "warm")
    print(f"  pooled cold / unpooled cold: {pooled / serial:.2f} (goal: at most 0.55 on 2 cores)")
    print(f"  warm is {pooled / warm:.1f}x faster than the pooled cold run (goal: at least 5x)\n")
    return [
        ("cold_warm.cold_pool_off_s", round(serial, 1), "s", "pytest suites cold, export pool off"),
        ("cold_warm.cold_pool_on_s", round(pooled, 1), "s", "pytest suites cold, export pool on"),
        ("cold_warm.pool_ratio", round(pooled / serial, 2), "", "cold, export pool on over off"),
        ("cold_warm.warm_s", round(warm, 1), "s", "pytest suites, warm cache"),
        ("cold_warm.warm_speedup", round(pooled / warm, 1), "x", "warm over pooled cold"),
        ("cold_warm.artifacts_pool_off", made_serial, "artifacts", "made cold, export pool off"),
        ("cold_warm.artifacts_pool_on", made_pooled, "artifacts", "made cold, export pool on"),
        ("cold_warm.artifacts_by_workers", by_workers, "artifacts", "built by the pool's workers"),
        ("cold_warm.two_processes", two, "", "two CPU-bound processes at once, each over one"),
    ]


def artifact_counts(
    serial_cache: Path, pooled_cache: Path, pooled_results: Path
) -> tuple[int, int, int]:
    """How many artifacts each cold run made, and how many the pooled run's workers built: equal
    counts mean nothing was exported twice and the checks exported nothing themselves."""
    made = {
        c.name: len(list((c / "artifacts").glob("*/artifact.json")))
        for c in (serial_cache, pooled_cache)
    }
    logs = (pooled_results / "export-workers").glob("*.log")
    by_workers = sum(p.read_text().count("] exported in ") for p in logs)
    print(
        f"  artifacts: {made[serial_cache.name]} unpooled, {made[pooled_cache.name]} pooled, "
        f"{by_workers} of them by the workers"
    )
    return made[serial_cache.name], made[pooled_cache.name], by_workers


def parallel_efficiency(rounds: int = 3) -> float:
    """This machine's throughput for two CPU-bound processes against one (1.0: two full cores;
    a VM's vCPUs may give less), the ceiling under any pooled figure."""
    import multiprocessing

    context = multiprocessing.get_context("fork")
    alone, together = [], []
    for _ in range(rounds):
        with context.Pool(1) as pool:
            alone.append(pool.apply(_busy))
        with context.Pool(2) as pool:
            together.append(max(pool.map(_busy, [0, 1])))
    print(
        f"  two CPU-bound processes at once run at {min(alone) / min(together):.2f} of one "
        f"alone each (best of {rounds}; 1.00: two full cores)"
    )
    return round(min(alone) / min(together), 2)


def _busy(_: int = 0) -> float:
    torch.set_num_threads(1)
    started = time.perf_counter()
    a = torch.randn(256, 256)
    for _ in range(200):
        a = (a @ a).tanh()
    total = 0
    for i in range(2_000_000):
        total += i
    return time.perf_counter() - started


def bare_windows(pte: Path, x: torch.Tensor, runs: int) -> Callable[[], float]:
    """A bare loop on the ExecuTorch runtime: the program loaded once, as hil's host target does;
    each call times one window of `runs` executions and returns its median in us."""
    from executorch.runtime import Runtime

    method = Runtime.get().load_program(pte).load_method("forward")
    for _ in range(POLICY.warmup):
        method.execute([x])

    def window() -> float:
        timings = []
        for _ in range(runs):
            begin = time.perf_counter_ns()
            method.execute([x])
            timings.append((time.perf_counter_ns() - begin) / 1000.0)
        return statistics.median(timings)

    return window


ROUNDS = 25  # hil windows, each between two bare ones; the median of their ratios is compared


def host_overhead() -> list[FigureRow]:
    """hil's host target against a bare loop on the same .pte, in short windows that alternate
    bare, hil, bare, ...: each hil window is compared with the mean of the bare windows on both
    sides of it, and the median of those ratios is the figure. This VM's speed swings between
    phases (the same loop measured 210 and 350 us a run, phases under a second to many seconds
    long), so best-of-N windows per side compared whichever side a fast phase happened to catch
    (0.64 once for portable); neighbouring windows share a phase."""
    print(
        "per-inference overhead: hil host target vs a bare ExecuTorch loop (same .pte, "
        f"median of {ROUNDS} ratios of a hil window to the bare windows either side)"
    )

    def model() -> torch.nn.Module:
        torch.manual_seed(0)
        return torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU(), torch.nn.Flatten())

    case = Case("bench_cnn", model, seeded((1, 3, 16, 16)), timing=POLICY)
    figures: list[FigureRow] = []
    with (
        tempfile.TemporaryDirectory(prefix="hil-bench-") as tmp,
        Session(cache_dir=Path(tmp) / "cache", results_dir=Path(tmp) / "results") as session,
    ):
        for recipe in ("portable", "xnnpack-fp32"):
            first = session.check(case, "host", recipe)  # exports and deploys once
            assert first.latency is not None
            bare = bare_windows(first.artifact.pte_path, case.inputs()[0], first.latency.runs)
            ratios, hil_us, bare_us = [], [], [bare()]
            for _ in range(ROUNDS):
                result = session.check(case, "host", recipe)
                assert result.latency is not None
                hil_us.append(result.latency.median_us)
                bare_us.append(bare())
                ratios.append(hil_us[-1] / statistics.mean(bare_us[-2:]))
            low, median, high = statistics.quantiles(ratios, n=4)
            print(
                f"  {recipe:<14} ratio {median:.3f} (goal: at most 1.05; middle half of the "
                f"ratios {low:.3f}-{high:.3f}; best windows {min(hil_us) / min(bare_us):.3f}; "
                f"hil {min(hil_us):.1f}-{max(hil_us):.1f} us, "
                f"bare {min(bare_us):.1f}-{max(bare_us):.1f} us)"
            )
            name = f"cold_warm.overhead_{recipe.replace('-', '_')}"
            what = f"{recipe}: hil's host target over a bare ExecuTorch loop, per inference"
            figures.append((name, round(median, 3), "", what))
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--overhead-only", action="store_true", help="only the host overhead")
    parser.add_argument("--record", action="store_true", help="write bench/figures.json")
    args, pytest_args = parser.parse_known_args()  # the rest is pytest's
    figures: list[FigureRow] = []
    if not args.overhead_only:
        default = ["suites", *(f"--target={t}" for t in suite_targets())]
        figures += cold_vs_warm(pytest_args or default)
    figures += host_overhead()
    if args.record:
        command = " ".join(["bench/cold_warm.py", *sys.argv[1:]])
        for name, value, unit, what in figures:
            record(name, value, unit, what, command)
        print(f"figures recorded: {len(figures)} in bench/figures.json")


if __name__ == "__main__":
    main()
