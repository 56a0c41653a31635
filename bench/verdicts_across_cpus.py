"""Do the suites give the same verdicts on another machine? Run them under each SIMD path.

torch picks its CPU kernels' SIMD path at start, and ATEN_CPU_CAPABILITY forces one: default,
avx2, avx512. Another path rounds float32 differently, which changes calibration, so each run
exports its own .pte files into its own cache, as another machine would, and computes its own
quantized reference. A verdict that depends on the machine shows up as a difference here.

    .venv/bin/python bench/verdicts_across_cpus.py                 # the make-suites targets
    .venv/bin/python bench/verdicts_across_cpus.py --targets host u85-ref --keep

Prints each path's verdict counts, every (case, target, recipe) whose verdict differs between
paths, and the largest share of its limit any correct target used on each path. Exit status 0
when every path gave the same verdicts. Paths this CPU cannot run are listed and left out.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from figures import record

ROOT = Path(__file__).resolve().parent.parent
PYTHON = ROOT / ".venv" / "bin" / "python"
PATHS = ("default", "avx2", "avx512")
TARGETS = ("host", "vboard", "u55-ref", "u85-ref", "cortex-m55-ref", "pi5-emu")

Key = tuple[str, str, str]


def capability_runs(path: str) -> bool:
    """Whether torch takes `path` on this CPU (it silently falls back when it cannot)."""
    probe = "import torch; print(torch.backends.cpu.get_cpu_capability())"
    done = subprocess.run(
        [str(PYTHON), "-c", probe],
        capture_output=True,
        text=True,
        env={**os.environ, "ATEN_CPU_CAPABILITY": path},
        check=False,
    )
    return done.stdout.strip().lower() == path


def run_suites(path: str, targets: list[str], work: Path, keep: bool) -> float:
    results, cache = work / f"results-{path}", work / f"cache-{path}"
    if not keep:
        subprocess.run(["rm", "-rf", str(results), str(cache)], check=True)
    command = [
        str(PYTHON),
        "-m",
        "pytest",
        "suites",
        "-q",
        "-p",
        "no:cacheprovider",
        *(f"--target={t}" for t in targets),
        f"--hil-cache-dir={cache}",
        f"--hil-results-dir={results}",
    ]
    started = time.perf_counter()
    with (work / f"log-{path}.txt").open("w") as log:
        subprocess.run(
            command,
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
            check=False,
            env={**os.environ, "ATEN_CPU_CAPABILITY": path},
        )
    return time.perf_counter() - started


def verdicts(results: Path) -> dict[Key, tuple[str, float | None]]:
    """(case, target, recipe) -> (verdict as pytest ended it, share of the error limit used)."""
    found: dict[Key, tuple[str, float | None]] = {}
    for line in (results / "records.jsonl").read_text().splitlines():
        record: dict[str, Any] = json.loads(line)
        margin = record.get("margin")
        found[(record["case"], record["target"], record["recipe"])] = (
            str(record["verdict"]),
            margin if isinstance(margin, (int, float)) else None,
        )
    run = json.loads((results / "run.json").read_text())
    for item in run.get("items", []):
        key = (item["case"], item["target"], item["recipe"])
        verdict, margin = found.get(key, ("NO RECORD", None))
        if item["outcome"] == "skipped" and key not in found:
            verdict = "SKIPPED"  # the target was not there (run.json has the reason)
        elif item["outcome"] == "xfailed":
            verdict = f"XFAIL ({verdict})"
        found[key] = (verdict, margin)
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", nargs="+", default=list(TARGETS))
    parser.add_argument("--work", type=Path, default=ROOT / ".hil" / "bench-cpus")
    parser.add_argument("--keep", action="store_true", help="reuse earlier caches and results")
    parser.add_argument(
        "--reuse",
        nargs="*",
        default=[],
        metavar="PATH",
        help="take these paths' verdicts from an earlier run in --work instead of running them",
    )
    parser.add_argument("--record", action="store_true", help="write bench/figures.json")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    usable = [p for p in PATHS if capability_runs(p)]
    skipped = sorted(set(PATHS) - set(usable))
    print(
        f"SIMD paths run here: {', '.join(usable)}"
        + (f"; not on this CPU: {', '.join(skipped)}" if skipped else "")
    )
    by_path: dict[str, dict[Key, tuple[str, float | None]]] = {}
    largest = 0.0
    for path in usable:
        reused = path in args.reuse
        seconds = 0.0 if reused else run_suites(path, args.targets, args.work, args.keep)
        by_path[path] = verdicts(args.work / f"results-{path}")
        counts = Counter(v for v, _ in by_path[path].values())
        margins = [m for v, m in by_path[path].values() if v == "PASS" and m is not None]
        largest = max([largest, *margins])
        print(
            f"  {path:8s} "
            + ("(earlier run)" if reused else f"{seconds / 60:5.1f} min")
            + "  "
            + ", ".join(f"{n} {v}" for v, n in sorted(counts.items()))
            + (
                f"; largest share of an error limit a PASS used: {max(margins):.2f}"
                if margins
                else ""
            )
        )
    keys = sorted(set().union(*(set(v) for v in by_path.values())))
    differing = [
        k for k in keys if len({by_path[p].get(k, ("ABSENT", None))[0] for p in usable}) > 1
    ]
    print(f"{len(keys)} checks on {len(args.targets)} targets; verdicts differ on {len(differing)}")
    for key in differing:
        row = ", ".join(f"{p}: {by_path[p].get(key, ('ABSENT', None))[0]}" for p in usable)
        print(f"  {key[0]} on {key[1]} [{key[2]}]: {row}")
    if args.record:
        command = " ".join(["bench/verdicts_across_cpus.py", *sys.argv[1:]])
        for name, value, unit, what in (
            ("paths", len(usable), "paths", "SIMD paths run (ATEN_CPU_CAPABILITY)"),
            ("checks", len(keys), "checks", f"checks on {len(args.targets)} targets, each path"),
            ("differ", len(differing), "checks", "checks whose verdict differs between paths"),
            ("largest_share", round(largest, 2), "", "largest share of its limit a PASS used"),
        ):
            record(f"verdicts_across_cpus.{name}", value, unit, what, command)
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
