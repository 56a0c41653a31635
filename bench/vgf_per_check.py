"""vgf-emu's cost per check beside the TOSA reference model's, and what keeping the Vulkan
process alive saves (issue #33's speed point). Printed as ratios from one run, never asserted.

    .venv/bin/python bench/vgf_per_check.py            # the default operator rows
    .venv/bin/python bench/vgf_per_check.py --rows 6

For each of the first --rows operator rows of suites/operators (the default selection), with
every export made first (a warm check exports nothing):
* a warm check on vgf-emu (vgf and vgf-fp) and on tosa-fp-ref, each in a fresh session, so the
  scenario is built in the check as a new deployment would; then the same check again in that
  session (deployed: the worker runs the scenario it holds);
* the ML SDK's own command line on the same VGF (`scenario_runner --scenario ...`, one process
  per run, the way a test would call it without hil's worker).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from hil.case import Case  # noqa: E402
from hil.devices import DeviceRegistry  # noqa: E402
from hil.session import Session  # noqa: E402
from hil.vgf import environment  # noqa: E402
from hil.vgf.scenario import write_scenario  # noqa: E402
from suites.operators.table import OPERATORS  # noqa: E402

CHECKS = (("vgf-emu", "vgf"), ("vgf-emu", "vgf-fp"), ("tosa-fp-ref", "tosa-fp"))


def timed(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def timed_check(session: Session, case: Case, target: str, recipe: str) -> float:
    return timed(lambda: session.check(case, target, recipe))


def cli_run(vgf: bytes, folder: Path, stack: environment.Stack) -> float:
    """One scenario_runner process on `vgf`, as the SDK's command line runs it."""
    scenario = write_scenario(vgf, folder, "delegate")
    for slot in scenario.outputs:
        (folder / f"{slot.uid}.npy").unlink(missing_ok=True)
    runner = Path(sys.executable).parent / "scenario_runner"
    env = {**os.environ, **stack.env}
    return timed(
        lambda: subprocess.run(
            [str(runner), "--scenario", str(scenario.path), "--output", str(folder)],
            env=env,
            check=True,
            capture_output=True,
        )
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=8)
    args = parser.parse_args()
    rows = [c for c in OPERATORS if "full" not in c.tags][: args.rows]
    work = Path(tempfile.mkdtemp(prefix="hil-vgf-bench-"))
    devices = DeviceRegistry.from_dirs([REPO / "devices"])
    cache = work / "cache"
    with Session(devices=devices, cache_dir=cache, results_dir=work / "r0") as session:
        for case in rows:  # every export first: the times below are warm checks
            for target, recipe in CHECKS:
                session.export(case, target, recipe)
    fresh: dict[tuple[str, str], list[float]] = {c: [] for c in CHECKS}
    again: dict[tuple[str, str], list[float]] = {c: [] for c in CHECKS}
    for target, recipe in CHECKS:
        with Session(devices=devices, cache_dir=cache, results_dir=work / "r1") as session:
            session.target(target)  # provisioning (the worker's start) is the session's, once
            for case in rows:
                fresh[(target, recipe)].append(timed_check(session, case, target, recipe))
                again[(target, recipe)].append(timed_check(session, case, target, recipe))
    stack = environment.prepare_stack(environment.find_layers(), work / "stack")
    cli = []
    with Session(devices=devices, cache_dir=cache, results_dir=work / "r2") as session:
        for case in rows:
            artifact = session.export(case, "vgf-emu", "vgf")
            for part in artifact.parts.vgf_graphs:
                vgf = (artifact.folder / part.folder / "out.vgf").read_bytes()
                cli.append(cli_run(vgf, work / "cli" / case.name / part.name, stack))
    print(f"{len(rows)} operator rows ({', '.join(c.name for c in rows)}); medians per check:")
    table = {}
    for key in CHECKS:
        table[key] = (statistics.median(fresh[key]), statistics.median(again[key]))
        print(
            f"  {key[0]:<12} {key[1]:<8} new deployment {1000 * table[key][0]:7.1f} ms, "
            f"deployed {1000 * table[key][1]:7.1f} ms"
        )
    tosa = table[("tosa-fp-ref", "tosa-fp")]
    vgf_fp = table[("vgf-emu", "vgf-fp")]
    print(
        f"  vgf-emu (vgf-fp) over tosa-fp-ref, the same float programs: new deployment "
        f"{vgf_fp[0] / tosa[0]:.2f}x, deployed {vgf_fp[1] / tosa[1]:.2f}x"
    )
    if cli:
        print(
            f"  the SDK's scenario_runner, one process per run: "
            f"{1000 * statistics.median(cli):.0f} ms a delegate; hil's worker, a deployed check: "
            f"{1000 * table[('vgf-emu', 'vgf')][1]:.1f} ms "
            f"({statistics.median(cli) / table[('vgf-emu', 'vgf')][1]:.0f}x)"
        )
    (work / "vgf_per_check.json").write_text(
        json.dumps(
            {f"{t}/{r}": {"new": fresh[(t, r)], "deployed": again[(t, r)]} for t, r in CHECKS}
        )
    )
    shutil.rmtree(cache, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
