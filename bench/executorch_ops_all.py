"""ExecuTorch's 16 Arm operator test files, every pipeline and variant, by their harness and
through `-p hil.executorch_ops` on u55-ref, u85-ref, host and tosa-fp-ref, in one run (issue
#26's goals).

    .venv/bin/python bench/executorch_ops_all.py                       # all 16 files (hours)
    .venv/bin/python bench/executorch_ops_all.py --files test_relu test_add

Printed, from one run:
* every collected case of theirs, and what hil did with it: judged (on which targets) or
  skipped, with each skip reason counted (a case neither judged nor skipped by name is listed:
  the goal is none);
* agreement: every case their harness passed, against hil's verdicts on the same case (a
  TosaPipelineINT case is judged on u55-ref, u85-ref and host: each verdict counts); cases
  where hil fails what they pass are listed with hil's reason;
* time, start-up apart: the whole runs; per case hil judged, the seconds their harness spent
  on those same cases (pytest's per-case times in its junit) against hil's cold and warm runs
  (hil exports ahead, so its per-case share is its run over the cases); the warm run's whole
  time (goal under 3 minutes) and cold per case over theirs (goal at most 0.3).

Their harness runs without an FVP here: its Ethos-U cases compile through Vela and then fail
for want of the FVP (their expected failure), so only their TOSA cases can pass. Nothing is
asserted; the figures are for the README.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from npu_vs_executorch import (
    FILES,
    REPO,
    Run,
    junit_outcomes,
    junit_seconds,
    ops_folder,
    pytest_run,
)

TARGETS = ("u55-ref", "u85-ref", "host", "tosa-fp-ref")
KEPT = REPO / ".hil" / "bench"
RECIPES = ("ethos-u", "cortex-m", "xnnpack-int8", "xnnpack-fp32", "portable", "tosa-fp", "unfit")
SUFFIX = re.compile(
    r"(?:-|\[)((?:" + "|".join(map(re.escape, TARGETS)) + r")(?:\+[\w-]+)*)-("
    + "|".join(map(re.escape, RECIPES)) + r")\]$"
)  # fmt: skip


def skip_reason(message: str) -> str:
    """A skip's reason, short: its head, or NOT JUDGED for a check hil could not judge (its
    message begins with the case's name and says which question and why)."""
    if message.startswith("test_"):
        return "NOT JUDGED (a question the test waives or hil cannot judge)"
    return message.split(":")[0][:70]


def verdicts_of(records: Path) -> dict[tuple[str, str, str], str]:
    """(their case id, target, recipe) -> hil's verdict, from a run's records.jsonl."""
    found: dict[tuple[str, str, str], str] = {}
    if records.exists():
        for line in records.read_text().splitlines():
            record = json.loads(line)
            found[(record["case"], record["target"], record["recipe"])] = record["verdict"]
    return found


def verdict_of(hil_id: str, verdicts: dict[tuple[str, str, str], str]) -> str | None:
    found = SUFFIX.search(hil_id)
    if found is None:
        return None
    return verdicts.get((their_case(hil_id), found.group(1), found.group(2)))


def their_case(hil_case: str) -> str:
    """hil's id without its target-recipe parameter: the id their harness gives the case."""
    found = SUFFIX.search(hil_case)
    if found is None:
        return hil_case
    head = hil_case[: found.start()]
    return head + "]" if hil_case[found.start()] == "-" else head


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", nargs="+", default=list(FILES))
    parser.add_argument("--theirs", type=Path, metavar="JUNIT_XML",
                        help="reuse their harness's run (its junit file, kept by an earlier "
                        "run of this bench) instead of running it again (an hour here)")
    parser.add_argument("--theirs-seconds", type=float, nargs=2, metavar=("RUN", "START_UP"),
                        help="with --theirs: that run's wall time and start-up")
    args = parser.parse_args()
    folder = ops_folder()
    files = [str(folder / f"{name}.py") for name in args.files]
    work = Path(tempfile.mkdtemp(prefix="hil-et-all-"))
    base = {
        **os.environ,
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
        "HIL_CACHE_DIR": str(work / "cache"),
        "HIL_RESULTS_DIR": str(work / "results"),
        "PYTHONPATH": str(REPO),
    }
    plugin = ["-p", "hil.executorch_ops", f"--hil-devices={REPO / 'devices'}", "-rs",
              *(f"--target={t}" for t in TARGETS)]  # fmt: skip
    nothing = [*files, "-k", "no_test_has_this_name"]
    print(f"ExecuTorch's Arm op tests, every pipeline: {len(files)} files; hil on "
          f"{', '.join(TARGETS)}")  # fmt: skip
    if args.theirs:
        run, start_theirs = args.theirs_seconds or (float("nan"), 0.0)
        theirs = Run("ExecuTorch harness (kept)", run, 0, junit_outcomes(args.theirs))
        their_junit = args.theirs
        print(f"  their harness: kept from {args.theirs}: {theirs.counts()}")
    else:
        start_theirs = pytest_run("start-up, their harness", nothing, work, base).seconds
        theirs = pytest_run("ExecuTorch harness", files, work, base)
        their_junit = work / "ExecuTorch_harness.xml"
        kept = KEPT / "their-harness.xml"
        KEPT.mkdir(parents=True, exist_ok=True)
        shutil.copy(work / "ExecuTorch_harness.xml", kept)
        print(f"  their run kept: {kept} (--theirs {kept} --theirs-seconds "
              f"{theirs.seconds:.1f} {start_theirs:.1f} reuses it)")  # fmt: skip
    start_hil = pytest_run("start-up, hil", [*plugin, *nothing], work, base, with_hil=True).seconds
    cold = pytest_run("hil, cold", [*plugin, *files], work, base, with_hil=True)
    verdicts = verdicts_of(work / "results" / "records.jsonl")  # the cold run's
    warm = pytest_run("hil, warm", [*plugin, *files], work, base, with_hil=True)
    report(theirs, cold, warm, start_theirs, start_hil, junit_seconds(their_junit), verdicts)
    shutil.rmtree(work, ignore_errors=True)
    return 0


def report(theirs: Run, cold: Run, warm: Run, start_theirs: float, start_hil: float,
           their_seconds: dict[str, float], verdicts: dict[tuple[str, str, str], str]
           ) -> None:  # fmt: skip
    by_case: dict[str, list[tuple[str, str, str]]] = {}
    for hil_id, (outcome, message) in cold.outcomes.items():
        by_case.setdefault(their_case(hil_id), []).append((hil_id, outcome, message))
    unaccounted = sorted(set(theirs.outcomes) - set(by_case))
    judged = {c for c, runs in by_case.items() if any(o != "skipped" for _, o, _ in runs)}
    skips = Counter(skip_reason(m) for runs in by_case.values() for _, o, m in runs
                    if o == "skipped")  # fmt: skip
    print(f"their cases {len(theirs.outcomes)}: judged by hil {len(judged)}, skipped by name "
          f"{len(by_case) - len(judged)}, unaccounted {len(unaccounted)}")  # fmt: skip
    for case in unaccounted[:20]:
        print(f"  unaccounted: {case}")
    print("hil's skip reasons (checks):")
    for reason, count in skips.most_common():
        print(f"  {count:5d}  {reason}")
    agree = differ = unjudged = 0
    for case, (outcome, _) in sorted(theirs.outcomes.items()):
        if outcome != "passed":
            continue
        for hil_id, hil_outcome, message in by_case.get(case, []):
            if hil_outcome == "skipped":
                continue
            if hil_outcome in ("passed", "xfailed") and verdict_of(hil_id, verdicts) == (
                "NOT JUDGED"
            ):
                unjudged += 1  # a pass of pytest's, not a verdict of PASS
                print(f"  theirs passed, hil NOT JUDGED: {hil_id}")
            elif hil_outcome in ("passed", "xfailed"):
                agree += 1
            else:
                differ += 1
                print(f"  theirs passed, hil {hil_outcome}: {hil_id}: {message[:200]}")
    print(f"on the cases their harness passed: hil agrees {agree}, differs {differ}, "
          f"not judged {unjudged}")  # fmt: skip
    checks = sum(1 for o, _ in cold.outcomes.values() if o != "skipped") or 1
    cases = max(len(judged), 1)

    def per(run: Run, start: float, n: int) -> float:
        return max(run.seconds - start, 0.0) / n

    # Their side on the same cases: the seconds their harness spent on each case hil judged
    # (pytest's own per-case time), so their VGF cases (skipped at once by both) and the cases
    # hil skips by name weigh nothing on either side.
    t_theirs = sum(their_seconds.get(c, 0.0) for c in judged) / cases
    t_cold = per(cold, start_hil, cases)
    print(f"whole run (start-up apart): ExecuTorch {theirs.seconds - start_theirs:.0f} s, hil "
          f"cold {cold.seconds - start_hil:.0f} s, warm {warm.seconds - start_hil:.0f} s")
    print(f"per case hil judged ({cases}; start-up apart): ExecuTorch {t_theirs:.2f} s; hil "
          f"cold {t_cold:.2f} s ({per(cold, start_hil, checks):.2f} s a check, {checks} checks: "
          f"a TosaPipelineINT case is judged on every target), warm "
          f"{per(warm, start_hil, cases):.3f} s")  # fmt: skip
    ratio = t_cold / t_theirs if t_theirs else float("nan")
    print(f"goals: warm whole run {warm.seconds:.0f} s (goal < 180 s); cold per case over "
          f"theirs {ratio:.2f} (goal <= 0.3)")  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
