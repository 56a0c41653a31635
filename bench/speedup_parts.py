"""What each of hil's speed-ups to torch and ExecuTorch gains, so one that stops paying for itself
can be dropped (issue #35). Printed as ratios from one run, never asserted.

    .venv/bin/python bench/speedup_parts.py              # 6 operator rows, ethos-u, xnnpack-int8
    .venv/bin/python bench/speedup_parts.py --rows 3 --rounds 2

Each configuration exports the same cases cold (an empty cache) in a fresh process, one thread,
alternating configurations over --rounds rounds: every part, none (pristine, torch and
ExecuTorch as shipped), and every part but one (HIL_SPEEDUPS_OFF=<part>), for each part. A
part's gain is the time without it over the time with all: 1.00 means it saves nothing here.
`--record` writes the figures the docs quote to bench/figures.json.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from figures import record  # noqa: E402

from hil.speedups.switch import LEFT_OUT, PRISTINE, parts  # noqa: E402

EXPORT = """
import sys
from pathlib import Path
from hil.devices import DeviceRegistry
from hil.session import Session
from suites.operators.table import OPERATORS
rows = [c for c in OPERATORS if "full" not in c.tags][: int(sys.argv[3])]
registry = DeviceRegistry.from_dirs([Path(sys.argv[1]) / "devices"])
with Session(devices=registry, cache_dir=sys.argv[2], results_dir=sys.argv[2] + "-r") as s:
    for case in rows:
        for target, recipe in (("u85-ref", "ethos-u"), ("host", "xnnpack-int8")):
            s.export(case, target, recipe)
"""


def timed_export(env_extra: dict[str, str], rows: int, work: Path) -> float:
    cache = Path(tempfile.mkdtemp(prefix="cache-", dir=work))
    env = {k: v for k, v in os.environ.items() if k not in (PRISTINE, LEFT_OUT)}
    env.update({"PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1", **env_extra})
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", EXPORT, str(REPO), str(cache), str(rows)],
        env=env,
        check=True,
        capture_output=True,
    )
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--record", action="store_true", help="write bench/figures.json")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="hil-speedup-parts-"))
    names = [p.name for p in parts()]
    configs: dict[str, dict[str, str]] = {"all": {}, "none (pristine)": {PRISTINE: "1"}}
    configs.update({f"all but {n}": {LEFT_OUT: n} for n in names})
    times: dict[str, list[float]] = {c: [] for c in configs}
    for _ in range(args.rounds):
        for label, extra in configs.items():
            times[label].append(timed_export(extra, args.rows, work))
    base = statistics.median(times["all"])
    print(
        f"{args.rows} operator rows x (u85-ref ethos-u, host xnnpack-int8), cold, median of "
        f"{args.rounds}: every part {base:.1f} s"
    )
    pristine = statistics.median(times["none (pristine)"])
    print(f"  none (pristine): {pristine:.1f} s, {pristine / base:.2f}x the time of every part")
    exports = f"cold exports of {args.rows} operator rows"
    figures = [
        ("all_s", round(base, 1), "s", f"{exports}, every speed-up part"),
        ("none_s", round(pristine, 1), "s", f"{exports}, no speed-up part (as shipped)"),
        ("none_ratio", round(pristine / base, 2), "x", "time with no part over with every part"),
    ]
    for name in names:
        without = statistics.median(times[f"all but {name}"])
        print(f"  without {name:<22} {without:6.1f} s: gain {without / base:.2f}")
        what = f"time without {name} over with every part"
        figures.append((f"without_{name.replace('-', '_')}", round(without / base, 2), "", what))
    if args.record:
        command = " ".join(["bench/speedup_parts.py", *sys.argv[1:]])
        for name, value, unit, what in figures:
            record(f"speedup_parts.{name}", value, unit, what, command)
    return 0


if __name__ == "__main__":
    sys.exit(main())
