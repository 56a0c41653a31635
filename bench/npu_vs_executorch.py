"""ExecuTorch's own Arm operator tests, by their harness and through hil.check: verdicts and time.

    .venv/bin/python bench/npu_vs_executorch.py                 # 16 op files, tosa_INT, u85-ref
    .venv/bin/python bench/npu_vs_executorch.py --files test_add test_conv2d --target u55-ref

Their tests (backends/arm/test/ops in the executorch wheel) quantize each operator, lower it to
TOSA, run Arm's TOSA reference model and compare with the quantized model (atol + 1 output
step). hil runs the very same test functions through its plugin (`-p hil.executorch_ops
--target=TARGET`: their pipelines answered by hil on the target, Vela, the partition report,
both verdict questions, their stage assertions), so both sides run the same cases with the same
inputs; hil's case ids carry the target and recipe, which are taken off to pair them. Printed:

* each side's exit status, pass/fail/xfail/skip counts, and the case ids each side ran;
* time: start-up (a run that collects and selects nothing) apart from the per-case time, for
  ExecuTorch's harness with and without hil's export speed-up (hil/speedups/export_speedup.py,
  which any torch 2.13 user could apply), and for hil cold (empty cache) and warm;
* how many of hil's cold exports its worker processes made: a cold hil run exports ahead on
  every core, as `pytest suites` does, while their harness runs its tests in one process (with
  pytest-xdist it too could use both cores; that is not installed here and not measured);
* every case where the two disagree, with hil's reason.

Nothing is asserted; the numbers are for the README (ARCHITECTURE.md: benches print ratios).
`--record` writes the figures the docs quote to bench/figures.json.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from figures import record

REPO = Path(__file__).resolve().parent.parent
FILES = (
    "test_add",
    "test_sub",
    "test_mul",
    "test_conv2d",
    "test_linear",
    "test_relu",
    "test_sigmoid",
    "test_tanh",
    "test_avg_pool2d",
    "test_max_pool",
    "test_mean_dim",
    "test_softmax",
    "test_cat",
    "test_permute",
    "test_view",
    "test_hardswish",
)
SPEEDUP = (
    "import hil.speedups.export_speedup as s\ndef pytest_configure(config):\n    s.install()\n"
)


@dataclass(frozen=True)
class Run:
    label: str
    seconds: float
    status: int
    outcomes: dict[str, tuple[str, str]]  # case id -> (outcome, first line of the message)

    def counts(self) -> str:
        found = Counter(o for o, _ in self.outcomes.values())
        return ", ".join(f"{n} {o}" for o, n in sorted(found.items())) or "nothing ran"


def their_folder(folder: str = "ops") -> Path:
    """Their Arm test folder in the installed wheel: "ops" (operator tests) or "models"."""
    import executorch

    return Path(next(iter(executorch.__path__))) / "backends" / "arm" / "test" / folder


def junit_cases(path: Path, suffix: str = "") -> Iterator[tuple[str, ET.Element]]:
    """(case id, its <testcase>) of a junit file ("test_add::test_add_tensor_tosa_INT[...]");
    `suffix` ("u85-ref-ethos-u") is taken off hil's ids. A missing file has none."""
    if not path.exists():
        return
    for case in ET.parse(path).getroot().iter("testcase"):
        test = str(case.get("name"))
        if suffix:
            test = test.replace(f"-{suffix}]", "]").replace(f"[{suffix}]", "")
        yield f"{case.get('classname', '').rsplit('.', 1)[-1]}::{test}", case


def junit_outcomes(path: Path, suffix: str = "") -> dict[str, tuple[str, str]]:
    """Case id -> (outcome, message)."""
    outcomes: dict[str, tuple[str, str]] = {}
    for name, case in junit_cases(path, suffix):
        outcome, message = "passed", ""
        for child in case:
            if child.tag in ("failure", "error"):
                outcome, message = "failed", child.get("message", "")
            elif child.tag == "skipped":
                kind = child.get("type", "")
                outcome = "xfailed" if "xfail" in kind else "skipped"
                message = child.get("message", "")
        outcomes[name] = (outcome, message.strip().splitlines()[0] if message.strip() else "")
    return outcomes


def junit_seconds(path: Path) -> dict[str, float]:
    """Case id -> the seconds pytest measured for it (setup, call and teardown)."""
    return {name: float(case.get("time") or 0.0) for name, case in junit_cases(path)}


def pytest_run(
    label: str,
    args: list[str],
    work: Path,
    env: dict[str, str],
    suffix: str = "",
    with_hil: bool | None = None,
) -> Run:
    """One pytest run; hil's plugin is on for hil's side (`suffix`, the id part its
    target-recipe parameter adds, is taken off its case ids), off for theirs."""
    report = work / f"{label.replace(' ', '_')}.xml"
    hil = [] if (bool(suffix) if with_hil is None else with_hil) else ["-p", "no:hil"]
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        *hil,
        f"--junitxml={report}",
        *args,
    ]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=work, env=env, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    run = Run(label, seconds, done.returncode, junit_outcomes(report, suffix))
    print(f"  {label:<34} {seconds:7.1f} s  exit {done.returncode}: {run.counts()}")
    return run


def ahead_counts(logs: Path) -> str:
    """What hil's export workers built in the cold run (the rest its checks exported)."""
    built = Counter(
        log.stem
        for log in logs.glob("export-worker-*.log")
        for line in log.read_text().splitlines()
        if line.endswith(" s") and " exported in " in line
    )
    if not built:
        return "exported ahead: nothing (every export was the check's own)"
    each = ", ".join(f"{n} by {worker}" for worker, n in sorted(built.items()))
    return (
        f"exported ahead by hil's workers: {sum(built.values())} ({each}); the rest by its checks"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", nargs="+", default=list(FILES))
    parser.add_argument("--target", default="u85-ref")
    parser.add_argument(
        "--recipe", default="ethos-u", help="the recipe hil's ids name on a target without an NPU"
    )
    parser.add_argument("-k", default="tosa_INT", help="their test selection (default tosa_INT)")
    parser.add_argument("--record", action="store_true", help="write bench/figures.json")
    args = parser.parse_args()
    folder = their_folder()
    files = [str(folder / f"{name}.py") for name in args.files]
    work = Path(tempfile.mkdtemp(prefix="hil-et-ops-"))
    (work / "speedup").mkdir()
    (work / "speedup" / "et_speedup.py").write_text(SPEEDUP)
    base = {
        **os.environ,
        # the venv's tools (flatc for their a8w4 cases) as an activated venv has them: `make
        # bench` runs .venv/bin/python without activating, and 68 of their cases failed so
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
        "HIL_CACHE_DIR": str(work / "cache"),
        "HIL_RESULTS_DIR": str(work / "results"),
    }
    ours = {**base, "PYTHONPATH": str(REPO)}
    sped = {**base, "PYTHONPATH": os.pathsep.join([str(work / "speedup"), str(REPO)])}
    theirs = [*files, "-k", args.k]
    plugin = [
        "-p",
        "hil.executorch_ops",
        f"--target={args.target}",
        f"--hil-devices={REPO / 'devices'}",
    ]
    hil_args = [*plugin, *theirs]
    suffix = f"{args.target}-{'ethos-u' if args.target.startswith(('u5', 'u8')) else args.recipe}"
    nothing = [*files, "-k", "no_test_has_this_name"]
    print(
        f"ExecuTorch's Arm op tests ({args.k}) from {folder}: {len(files)} files, hil on "
        f"{args.target}"
    )
    startup = {
        "theirs": pytest_run("start-up, their harness", nothing, work, base).seconds,
        "hil": pytest_run("start-up, hil", [*plugin, *nothing], work, ours, suffix).seconds,
    }
    et = pytest_run("ExecuTorch harness", theirs, work, base)
    et_fast = pytest_run("ExecuTorch harness + speed-up", ["-p", "et_speedup", *theirs], work, sped)
    cold = pytest_run(f"hil {args.target}, cold", hil_args, work, ours, suffix)
    print(f"  {'':<34} {ahead_counts(work / 'results' / 'export-workers')}")
    warm = pytest_run(f"hil {args.target}, warm", hil_args, work, ours, suffix)
    ran_theirs, ran_ours = set(et.outcomes), set(cold.outcomes)
    print(
        f"cases run: ExecuTorch {len(ran_theirs)}, hil {len(ran_ours)}; run by only one side: "
        f"{sorted(ran_theirs ^ ran_ours) or 'none'}"
    )
    cases = max(len(ran_theirs & ran_ours), 1)

    def per_case(run: Run, start: float) -> float | None:
        """Seconds per case beyond start-up; None when the run was within start-up's noise
        (a warm run can take less than the start-up run measured apart)."""
        beyond = run.seconds - start
        return beyond / cases if beyond > 0.05 * start else None

    def shown(value: float | None, digits: int = 2) -> str:
        return f"{value:.{digits}f} s" if value is not None else "within start-up noise"

    def ratio(theirs: float | None, ours: float | None) -> str:
        if theirs is None or ours is None:
            return "not measurable (a run within start-up noise)"
        return f"{theirs / ours:.2f}"

    t_et, t_fast = per_case(et, startup["theirs"]), per_case(et_fast, startup["theirs"])
    t_cold, t_warm = per_case(cold, startup["hil"]), per_case(warm, startup["hil"])
    print(f"start-up: their harness {startup['theirs']:.1f} s, hil {startup['hil']:.1f} s")
    print(
        f"per case (start-up excluded): ExecuTorch {shown(t_et)} ({shown(t_fast)} with hil's "
        f"export speed-up), hil cold {shown(t_cold)}, warm {shown(t_warm, 3)}"
    )
    print(
        f"ExecuTorch / hil per case: cold {ratio(t_et, t_cold)} ({ratio(t_fast, t_cold)} against "
        f"the sped-up harness), warm {ratio(t_et, t_warm)}; whole runs, start-up included: "
        f"cold {et.seconds / cold.seconds:.2f} ({et_fast.seconds / cold.seconds:.2f}), warm "
        f"{et.seconds / warm.seconds:.1f}"
    )
    agree = differ = 0
    for case in sorted(ran_theirs & ran_ours):
        theirs_outcome, hil_outcome = et.outcomes[case][0], cold.outcomes[case]
        if (theirs_outcome == "passed") == (hil_outcome[0] == "passed"):
            agree += 1
            continue
        differ += 1
        print(
            f"  differ: {case}: ExecuTorch {theirs_outcome}, hil {hil_outcome[0]}: "
            f"{hil_outcome[1][:240]}"
        )
    print(f"verdicts agree on {agree} cases, differ on {differ}")
    if args.record:
        command = " ".join(["bench/npu_vs_executorch.py", *sys.argv[1:]])
        both = len(ran_theirs & ran_ours)
        record_figures((t_et, t_fast, t_cold, t_warm), both, agree, command)
    shutil.rmtree(work, ignore_errors=True)
    return 0


def record_figures(
    seconds: tuple[float | None, float | None, float | None, float | None],
    cases: int,
    agree: int,
    command: str,
) -> None:
    """The figures the docs quote, rounded as printed: per-case seconds (start-up apart) of their
    harness, it with hil's export speed-up, hil cold and warm, and hil's speed-ups; a time
    within start-up noise (None) is not recorded, and that is printed."""
    t_et, t_fast, t_cold, t_warm = seconds

    def speedup(ours: float | None) -> float | None:
        return t_et / ours if t_et is not None and ours is not None else None

    figures: list[tuple[str, float | None, int, str, str]] = [  # name, value, digits, unit, what
        ("their_case_s", t_et, 2, "s", "their harness, a case"),
        ("their_sped_up_case_s", t_fast, 2, "s", "their harness + hil's export speed-up, a case"),
        ("hil_cold_case_s", t_cold, 2, "s", "hil, cold cache, a case"),
        ("hil_warm_case_s", t_warm, 3, "s", "hil, warm cache, a case"),
        ("cold_speedup", speedup(t_cold), 2, "x", "hil cold's speed-up over their harness, a case"),
        ("warm_speedup", speedup(t_warm), 2, "x", "hil warm's speed-up over their harness, a case"),
        ("cases", cases, 0, "cases", "their operator cases both sides ran"),
        ("agree", agree, 0, "cases", "of those, hil's verdict and theirs agree"),
    ]
    for name, value, digits, unit, what in figures:
        if value is None:
            print(f"  not recorded: npu_vs_executorch.{name} (within start-up noise)")
        else:
            record(f"npu_vs_executorch.{name}", round(value, digits), unit, what, command)


if __name__ == "__main__":
    sys.exit(main())
