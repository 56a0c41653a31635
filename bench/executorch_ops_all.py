"""ExecuTorch's whole Arm operator-test folder (156 files), or model-test folder, by their harness
and through `-p hil.executorch_ops` on u55-ref, u85-ref, host, tosa-fp-ref and vgf-emu (issues #26,
#32, #33).

    .venv/bin/python bench/executorch_ops_all.py                     # every file (hours)
    .venv/bin/python bench/executorch_ops_all.py --files test_relu test_add
    .venv/bin/python bench/executorch_ops_all.py --part-size 20 --no-warm
    .venv/bin/python bench/executorch_ops_all.py --folder models     # their model tests
    .venv/bin/python bench/executorch_ops_all.py --folder models --files test_resnet8

`--folder models` runs their model tests (backends/arm/test/models) the same way, on u85-ref,
u55-ref, host and tosa-fp-ref unless --targets says otherwise (vgf-emu too, if named); their kept
runs of it are under `.hil/bench/theirs-models/`, apart from the op folder's. Nothing here may
download, so the model files and tests that need a download (hub or pretrained weights, a
checkpoint not shipped) or a package not installed here are left out by name
(their_harness.LEFT_OUT, each with why; the list is printed): hil runs none of them and none of
theirs is counted (their harness is not given the files, and skips the tests itself).

Their side is bench/their_harness.py's kept runs (`.hil/bench/theirs/`, built up in parts
over several runs, each part's junit and wall time kept): files it has not run yet are run
first, in parts, unless --no-their-runs. Without vgf-emu among --targets their VGF rows are left
out of their runs and of the count (they are judged only there): half of their time. hil's side
runs here, cold then warm, in one pytest run each (or in parts of --part-size files, one cache
for all).

Printed, from one run:
* every collected case of theirs and what hil did with it: judged (on which targets) or skipped,
  each skip reason counted; a case neither judged nor skipped by name is listed (goal: none);
* agreement: every case their harness passed against hil's verdicts on the same case, in two
  parts: on the target that asks their pipeline's own question (THEIR_QUESTION: the TOSA
  reference for a TOSA pipeline, the NPU for an Ethos-U one, vgf-emu for VGF), and on the
  targets hil adds (the host's CPU recipes, the U55 for a generic TOSA INT row), which their
  harness never runs; where hil fails what they pass, hil's reason, grouped by cause;
* their VGF rows on vgf-emu apart: judged, skipped by reason, failed with causes;
* time, start-up apart: per case hil judged, their harness's own per-case seconds on those same
  cases (pytest's times in their junit) against hil's cold run; hil's warm run whole (goal under
  10 minutes on 2 cores) and cold per case over theirs (goal under 0.2). Their seconds are their
  kept runs' unless --their-now, which runs their harness on the same cases in this invocation,
  before hil's runs and alone on the machine (their kept runs were made with several parts at
  once, so their seconds there are slower than a run alone: 0.71 to 0.84 of them on three samples).

`--same-program` measures instead that the program hil judges is the program their pipeline
builds, on SAME_PROGRAM (a sample of the op, model and misc folders, TosaPipelineFP rows on
tosa-fp-ref): once with `--hil-their-program` (their pipeline builds every program; each
record's artifact digest against their serialize stage's, by construction), once as a user
runs it (hil's own tosa-fp recipe where the test makes no edit beyond its options), whose
.pte and delegate payloads (the TOSA graphs) are compared with their pipeline's. Printed; with
--record, written as same_program.* figures.

Their harness runs without an FVP and without their Vulkan executor_runner here: its Ethos-U
cases and its VGF cases that would run compile and then fail for want of those (their expected
failures), so only their TOSA cases and VGF compile-only cases can pass. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from figures import differences_file, record, record_differences
from npu_vs_executorch import REPO, Run, junit_outcomes, junit_seconds, pytest_run, their_folder
from their_harness import (
    FOLDERS,
    LEFT_OUT,
    SELECTION,
    WITHOUT_VGF,
    add_file_options,
    claim,
    covers,
    kept_dir,
    kept_parts,
    run_part,
    runnable,
    save,
    wanted_files,
)

from hil.executorch_ops.runner import EXTRA
from hil.executorch_ops.summary import figures, hil_figure

TARGETS = ("u55-ref", "u85-ref", "host", "tosa-fp-ref", "vgf-emu")
# their model folder: vgf-emu only when named (their VGF rows were half their time on ops)
DEFAULT_TARGETS = {"ops": TARGETS, "models": ("u85-ref", "u55-ref", "host", "tosa-fp-ref")}

RECIPES = (
    "ethos-u",
    "cortex-m",
    "xnnpack-int8",
    "xnnpack-fp32",
    "portable",
    "tosa-fp",
    "vgf",
    "vgf-fp",
    "unfit",
)
SUFFIX = re.compile(
    r"(?:-|\[)((?:"
    + "|".join(map(re.escape, TARGETS))
    + r")(?:\+[\w-]+)*)-("
    + "|".join(map(re.escape, RECIPES))
    + r")\]$"
)


def skip_reason(message: str) -> str:
    """A skip's reason, short: its head, or NOT JUDGED for a check hil could not judge (its
    message begins with the case's name and says which question and why)."""
    if message.startswith("test_"):
        return "NOT JUDGED (a question the test waives or hil cannot judge)"
    return message.split(":")[0][:80]


def their_case(hil_case: str) -> str:
    """hil's id without its target-recipe parameter: the id their harness gives the case."""
    found = SUFFIX.search(hil_case)
    if found is None:
        return hil_case
    head = hil_case[: found.start()]
    return head + "]" if hil_case[found.start()] == "-" else head


def target_of(hil_case: str) -> str:
    found = SUFFIX.search(hil_case)
    return found.group(1) if found else ""


# The target whose check asks what their harness asks of each pipeline: their TOSA pipelines
# run the TOSA reference model (the FP profile on tosa-fp-ref; the INT profile, whole, on the
# U85's, the U55's being a subset), their NPU pipelines the NPU, their VGF pipeline VGF. A
# pipeline not named here (OpNotSupportedPipeline, CortexMTester) and a check without a record
# count on every target.
THEIR_QUESTION = {
    "TosaPipelineFP": "tosa-fp-ref",
    "TosaPipelineINT": "u85-ref",
    "EthosU55PipelineINT": "u55-ref",
    "EthosU85PipelineINT": "u85-ref",
    "VgfPipeline": "vgf-emu",
}


@dataclass
class HilSide:
    """hil's runs over every part: outcomes by hil case id, records, seconds."""

    outcomes: dict[str, tuple[str, str]]
    verdicts: dict[tuple[str, str], str]  # (their case id, target) -> worst verdict
    seconds: float
    start_up: float
    pipelines: dict[tuple[str, str], str] = field(default_factory=dict)  # same key -> pipeline
    records: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)  # the worst


def records_of(records: Path, side: HilSide) -> None:
    """Into `side`: (their case id, target) -> the worst verdict, its record, and their
    pipeline's name."""
    found, pipelines = side.verdicts, side.pipelines
    if records.exists():
        for line in records.read_text().splitlines():
            record = json.loads(line)
            # a test's second pipeline run is "name#2": one case of theirs
            key = (re.sub(r"#\d+$", "", record["case"]), record["target"])
            if found.get(key) in (None, "PASS"):
                found[key] = record["verdict"]
                side.records[key] = record
            pipeline = (record.get("executorch") or {}).get("pipeline")
            if pipeline:
                pipelines[key] = pipeline


def asks_their_question(side: HilSide, case: str, target: str) -> bool:
    pipeline = side.pipelines.get((case, target))
    return pipeline not in THEIR_QUESTION or THEIR_QUESTION[pipeline] == target


def run_hil(
    parts: list[list[str]],
    work: Path,
    base: dict[str, str],
    label: str,
    targets: list[str],
    folder: str = "ops",
) -> HilSide:
    selects = base.get("HIL_BENCH_CASES") or base.get("HIL_BENCH_LEFT_OUT")
    plugin = [
        *(["-p", "only_cases"] if selects else []),
        "-p",
        "hil.executorch_ops",
        f"--hil-devices={REPO / 'devices'}",
        "-rs",
        *(f"--target={t}" for t in targets),
    ]
    side = HilSide({}, {}, 0.0, 0.0)
    for n, part in enumerate(parts):
        paths = [str(their_folder(folder) / f"{f}.py") for f in part]
        env = {**base, "HIL_RESULTS_DIR": str(work / f"results-{label}-{n}")}
        side.start_up += pytest_run(
            f"{label} start-up {n}",
            [*plugin, *paths, "-k", "no_test_has_this_name"],
            work,
            env,
            with_hil=True,
        ).seconds
        run = pytest_run(f"{label} part {n}", [*plugin, *paths], work, env, with_hil=True)
        side.seconds += run.seconds
        side.outcomes.update(run.outcomes)
        records_of(Path(env["HIL_RESULTS_DIR"]) / "records.jsonl", side)
    return side


def run_theirs_now(
    parts: list[list[str]], work: Path, base: dict[str, str], selection: str, folder: str = "ops"
) -> dict[str, float]:
    """Their harness on the same cases as hil's runs (the listed ones with --their-passed-only),
    in this invocation: pytest's seconds per case. Nothing is kept."""
    listed = bool(base.get("HIL_BENCH_CASES"))  # their listed cases, whatever their names
    select = ["-p", "only_cases"] if listed else ["-k", selection]
    seconds: dict[str, float] = {}
    for n, part in enumerate(parts):
        paths = [str(their_folder(folder) / f"{f}.py") for f in part]
        label = f"theirs now part {n}"
        pytest_run(label, [*select, *paths], work, base, with_hil=False)
        seconds.update(junit_seconds(work / f"{label.replace(' ', '_')}.xml"))
    return seconds


def read_hil(work: Path, label: str) -> HilSide | None:
    """A finished run's side from its work folder (junit files and records); its wall times
    are not in the folder, so they read as 0 (times are reported by the run itself)."""
    parts = sorted(work.glob(f"{label}_part_*.xml"))
    if not parts:
        return None
    side = HilSide({}, {}, 0.0, 0.0)
    for n, report in enumerate(parts):
        side.outcomes.update(junit_outcomes(report, ""))
        records_of(work / f"results-{label}-{n}" / "records.jsonl", side)
    return side


# (folder, file, -k): TosaPipelineFP rows whose models need no download, over the folders
SAME_PROGRAM = (
    ("ops", "test_add", "tosa_FP"),
    ("models", "test_residual_conv_block", "tosa_FP"),
    ("models", "test_deep_autoencoder", "tosa_FP"),
    ("misc", "test_custom_partition", "FP"),
    ("misc", "test_multiple_outputs", "FP"),
)


def program_parts(pte: Path) -> tuple[str, list[str]]:
    """A .pte's sha256 and its delegates' payloads' (the TOSA graphs), in program order."""
    import hashlib

    from executorch.exir._serialize._program import deserialize_pte_binary

    data = pte.read_bytes()
    program = deserialize_pte_binary(data)
    program = getattr(program, "program", program)
    payloads = [hashlib.sha256(d.data).hexdigest() for d in program.backend_delegate_data]
    return hashlib.sha256(data).hexdigest(), payloads


def same_program(work: Path, cache: Path | None, record_them: bool) -> int:
    """hil's judged program against their pipeline's, on SAME_PROGRAM (see the top)."""
    roots = {folder: their_folder(folder) for folder, _, _ in SAME_PROGRAM}
    found: dict[str, dict[str, dict[str, Any]]] = {}
    for label, extra in (("theirs", ["--hil-their-program"]), ("hils", [])):
        results = work / f"results-{label}"
        for folder, stem, keyword in SAME_PROGRAM:
            args = [
                "-p",
                "hil.executorch_ops",
                str(roots[folder] / f"{stem}.py"),
                "-k",
                keyword,
                "--target=tosa-fp-ref",
                f"--hil-cache-dir={cache or work / 'cache'}",
                f"--hil-results-dir={results / stem}",
                *extra,
            ]
            pytest_run(f"{label} {stem}", args, work, dict(os.environ), with_hil=True)
            for line in (results / stem / "records.jsonl").read_text().splitlines():
                rec = json.loads(line) if line.strip() else {}
                if EXTRA in rec:
                    found.setdefault(label, {})[f"{folder}/{rec['case']}"] = rec
    theirs, hils = found.get("theirs", {}), found.get("hils", {})
    by_construction = [
        c for c, r in theirs.items() if r[EXTRA].get("their_pte_sha256") == r["artifact"]["sha256"]
    ]
    own = {c: r for c, r in hils.items() if r[EXTRA].get("built_by") == "hil's recipe"}
    same_pte, same_graphs = [], []
    for case, rec in own.items():
        if case not in theirs:
            continue
        ours = program_parts(Path(rec["artifact"]["path"]))
        their = program_parts(Path(theirs[case]["artifact"]["path"]))
        if ours[0] == their[0]:
            same_pte.append(case)
        if ours[1] == their[1]:
            same_graphs.append(case)
    compared = [c for c in own if c in theirs]
    folders = Counter(c.split("/")[0] for c in theirs)
    print(f"same program, sample over {dict(folders)} ({len(theirs)} cases on tosa-fp-ref):")
    print(
        f"  built by their pipeline: the .pte hil judged is their serialize stage's in "
        f"{len(by_construction)} of {len(theirs)}"
    )
    print(
        f"  hil's own recipe (no edit beyond its options), {len(compared)} cases: the same .pte "
        f"in {len(same_pte)}, the same delegate payloads (TOSA graphs) in {len(same_graphs)}"
    )
    for case in sorted(set(compared) - set(same_graphs)):
        print(f"    other delegate payloads: {case}")
    if record_them:
        command = "bench/executorch_ops_all.py --same-program"
        for name, value, what in (
            ("same_program.cases", len(theirs), "sample cases (ops, models, misc) on tosa-fp-ref"),
            ("same_program.by_construction", len(by_construction), "judged .pte = theirs"),
            ("same_program.hil_recipe_cases", len(compared), "cases on hil's own recipe"),
            ("same_program.hil_recipe_same_pte", len(same_pte), "hil's .pte = theirs"),
            ("same_program.hil_recipe_same_graphs", len(same_graphs), "same TOSA payloads"),
        ):
            record(name, value, "cases", what, command)
    print(f"  (work folder: {work})")
    return 0 if len(by_construction) == len(theirs) and theirs else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--same-program",
        action="store_true",
        help="measure that hil judges their pipeline's program (SAME_PROGRAM sample) and stop",
    )
    add_file_options(parser, "all")
    parser.add_argument(
        "--part-size",
        type=int,
        default=0,
        help="files a hil pytest run (default 0: one run for all, as a user's)",
    )
    parser.add_argument(
        "--no-their-runs",
        action="store_true",
        help="use only their kept runs (files they lack count as unknown)",
    )
    parser.add_argument("--no-warm", action="store_true", help="skip hil's warm run")
    parser.add_argument(
        "--targets",
        nargs="+",
        choices=TARGETS,
        help="hil's targets (default: all five for ops, all but vgf-emu for models; their "
        "own questions need tosa-fp-ref, u85-ref, u55-ref and vgf-emu)",
    )
    parser.add_argument(
        "--folder", choices=FOLDERS, default="ops", help="their test folder (default ops)"
    )
    parser.add_argument(
        "--their-passed-only",
        action="store_true",
        help="run only the cases their harness passed (what agreement counts), deselecting "
        "the rest at collection",
    )
    parser.add_argument(
        "--their-now",
        action="store_true",
        help="time their harness in this invocation on the same cases (not kept), before hil's "
        "runs: the cold ratio's same-day side",
    )
    parser.add_argument(
        "--record",
        action="store_true",
        help="write the figures the docs quote (bench/figures.json, bench/ops_differences.json): "
        "for a run of the whole op folder on tosa-fp-ref and u85-ref (on an older ExecuTorch: "
        "ops_1_4.* figures and ops_differences_1_4.json)",
    )
    parser.add_argument(
        "--cache",
        type=Path,
        metavar="DIR",
        help="hil's artifact cache (default: a new one in the work folder); an earlier run's "
        "cache re-judges its programs without exporting (its times are then not cold)",
    )
    parser.add_argument(
        "--no-times",
        action="store_true",
        help="with --record: leave the time figures as they are (this run shared the machine)",
    )
    parser.add_argument(
        "--report",
        type=Path,
        metavar="WORK",
        help="print the report of a finished run's work folder again (with --files: its files)",
    )
    args = parser.parse_args()
    if args.same_program:
        work = Path(tempfile.mkdtemp(prefix="hil-same-program-"))
        return same_program(work, args.cache, args.record)
    folder = args.folder
    targets = args.targets or list(DEFAULT_TARGETS[folder])
    left_out = LEFT_OUT.get(folder, {})
    listed = wanted_files(args, folder)
    files = runnable(listed, folder)
    work = args.report or Path(tempfile.mkdtemp(prefix="hil-et-all-"))
    base = {
        **os.environ,
        "HIL_CACHE_DIR": str(args.cache or work / "cache"),
        "PYTHONPATH": str(REPO),
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
    }
    print(f"ExecuTorch's Arm {folder[:-1]} tests: {len(files)} files; hil on {', '.join(targets)}")
    tests_left_out = print_left_out(left_out, listed)
    if tests_left_out:  # hil's side deselects them; their side skips them itself, not counted
        base["HIL_BENCH_LEFT_OUT"] = ",".join(sorted(tests_left_out))
        base["PYTHONPATH"] = os.pathsep.join([str(REPO / "bench"), str(REPO)])
    # their VGF rows are judged only on vgf-emu: without it, their runs leave them out
    selection = SELECTION if "vgf-emu" in targets else WITHOUT_VGF
    kept = {f for p in kept_parts(folder) if covers(p, selection) for f in p.files}
    missing = [f for f in files if f not in kept]
    if missing and not args.no_their_runs:
        for i in range(0, len(missing), 12):
            mine = claim(missing[i : i + 12], selection, folder)
            if mine:
                save(run_part(mine, work, base, selection, folder), folder)
    parts = [p for p in kept_parts(folder) if covers(p, selection) and set(p.files) & set(files)]
    theirs: dict[str, tuple[str, str]] = {}
    their_seconds: dict[str, float] = {}
    stems = {Path(f).name for f in files}  # a kept part may hold other files than these
    for part in parts:
        theirs.update(junit_outcomes(kept_dir(folder) / part.junit))
        their_seconds.update(junit_seconds(kept_dir(folder) / part.junit))
    theirs = {
        case: seen
        for case, seen in theirs.items()
        if case.split("::")[0] in stems
        and case.split("[")[0] not in tests_left_out
        and (selection == SELECTION or "vgf" not in case.lower())
    }
    days = sorted({p.day for p in parts})
    print(
        f"  their harness: {len(parts)} kept parts ({', '.join(days)}), "
        f"{Run('', 0, 0, theirs).counts()}"
    )
    if args.their_passed_only:
        theirs = {case: seen for case, seen in theirs.items() if seen[0] == "passed"}
        listed = work / "their-passed.txt"
        if args.report is None:  # a report of a run must not change what its parts select
            listed.write_text("\n".join(sorted(theirs)) + "\n")
        base["HIL_BENCH_CASES"] = str(listed)
        base["PYTHONPATH"] = os.pathsep.join([str(REPO / "bench"), str(REPO)])
        print(f"  only the {len(theirs)} cases their harness passed")
    size = args.part_size or len(files)
    chunks = [files[i : i + size] for i in range(0, len(files), size)]
    if args.their_now:
        if args.report is None:
            their_seconds = run_theirs_now(chunks, work, base, selection, folder)
        else:
            their_seconds = {}
            for report_file in sorted(work.glob("theirs_now_part_*.xml")):
                their_seconds.update(junit_seconds(report_file))
    if args.report is not None:
        cold, warm = read_hil(work, "cold"), read_hil(work, "warm")
    else:
        cold = run_hil(chunks, work, base, "cold", targets, folder)
        warm = None if args.no_warm else run_hil(chunks, work, base, "warm", targets, folder)
    measured = report(theirs, their_seconds, cold, warm, work)
    if args.record:
        command = " ".join(["bench/executorch_ops_all.py", *measuring_arguments(sys.argv[1:])])
        record_figures(measured, command, figures_prefix(), times=not args.no_times)
    print(f"  (work folder, with each part's results: {work})")
    return 0


def measuring_arguments(argv: list[str]) -> list[str]:
    """The command line without the options that say where a run's files are or what is
    written (`--report DIR`, `--cache DIR`, `--record`, `--no-times`) or that it reused their
    kept runs (`--no-their-runs`; without it their missing files run first): the command a
    reader runs to measure the same thing."""
    kept: list[str] = []
    skip_value = False
    for arg in argv:
        if skip_value:
            skip_value = False
        elif arg in ("--report", "--cache"):
            skip_value = True
        elif arg not in ("--record", "--no-times", "--no-their-runs") and not arg.startswith(
            ("--report=", "--cache=")
        ):
            kept.append(arg)
    return kept


def print_left_out(left_out: dict[str, str], wanted: list[str]) -> set[str]:
    """Print what of `wanted` (file stems) is left out by name, and why; the tests left out
    (not whole files), as their case ids without parameters, are returned."""
    stems = {Path(f).name for f in wanted}
    shown = {
        name: why
        for name, why in left_out.items()
        if name in wanted or ("::" in name and name.split("::")[0] in stems)
    }
    if shown:
        print(f"  left out by name, {len(shown)} (hil runs none; none of theirs is counted):")
    for why in dict.fromkeys(shown.values()):
        print(f"    {', '.join(n for n, w in shown.items() if w == why)}: {why}")
    return {name for name in shown if "::" in name}


def report(
    theirs: dict[str, tuple[str, str]],
    their_seconds: dict[str, float],
    cold: HilSide,
    warm: HilSide | None,
    work: Path,
) -> Measured:
    by_case: dict[str, list[tuple[str, str, str]]] = defaultdict(list)
    for hil_id, (outcome, message) in cold.outcomes.items():
        by_case[their_case(hil_id)].append((hil_id, outcome, message))
    unaccounted = sorted(set(theirs) - set(by_case))
    judged = {
        c for c, runs in by_case.items() if any(o != "skipped" and target_of(h) for h, o, _ in runs)
    }
    # a test building no pipeline hil answers runs as their own test, unparametrized: it is
    # neither judged by hil nor an agreement (MXFP pipelines, eager-only checks, helpers)
    own = {
        c
        for c, runs in by_case.items()
        if c not in judged and any(o != "skipped" for _, o, _ in runs)
    }
    print(
        f"their cases {len(theirs)}; hil's cases {len(by_case)}: judged {len(judged)}, "
        f"run as their own tests (not judged) {len(own)}, skipped by name "
        f"{len(by_case) - len(judged) - len(own)}, unaccounted {len(unaccounted)}"
    )
    passed_own = sorted(c for c in own if theirs.get(c, ("",))[0] == "passed")
    if passed_own:
        print(f"  of their passed cases, run as their own tests, not counted: {len(passed_own)}")
        for case, n in Counter(c.split("[")[0] for c in passed_own).most_common(8):
            print(f"    {n:4d}  {case}")
    for case in unaccounted[:20]:
        print(f"  unaccounted: {case}")
    checks = Counter(
        o for runs in by_case.values() for h, o, _ in runs if target_of(h) or o == "skipped"
    )
    print("hil's checks: " + ", ".join(f"{n} {o}" for o, n in checks.most_common()))
    skips = Counter(
        skip_reason(m) for runs in by_case.values() for _, o, m in runs if o == "skipped"
    )
    print("hil's skip reasons (checks):")
    for reason, count in skips.most_common():
        print(f"  {count:6d}  {reason}")
    measured = Measured(theirs=len(theirs), judged=len(judged), checks=sum(checks.values()))
    measured.theirs_passed = sum(1 for o, _ in theirs.values() if o == "passed")
    measured.own_question, measured.rows = agreement(
        theirs, by_case, cold, work / "differences.json"
    )
    vgf_rows(by_case, theirs)
    times(theirs, their_seconds, judged, cold, warm, checks, measured)
    return measured


@dataclass
class Measured:
    """What one run measured, for the figures the docs quote."""

    theirs: int  # their cases, as their kept runs hold them
    judged: int  # of those, judged by hil on some target
    checks: int
    theirs_passed: int = 0
    own_question: Tally | None = None
    rows: list[dict[str, Any]] = field(default_factory=list)
    cold_s: float = 0.0
    cold_case_s: float = 0.0
    their_case_s: float = 0.0
    warm_s: float | None = None


def figures_prefix() -> str:
    """Where a run's figures go: "ops" on the newest ExecuTorch hil supports (what `make setup`
    installs), "ops_1_4" on an older one (what `make compat` installs), so the pages can quote
    both releases' agreement side by side."""
    from hil.compat.versions import NEWEST, installed

    minor = installed().minor
    newest = ".".join(NEWEST.split(".")[:2])
    return "ops" if minor in (None, newest) else f"ops_{minor.replace('.', '_')}"


def record_figures(measured: Measured, command: str, prefix: str, times: bool = True) -> None:
    """The op folder's figures the docs quote, under `prefix` (the times only from a run that
    had the machine to itself)."""
    own = measured.own_question
    assert own is not None
    figure = [
        ("ops.their_cases", measured.theirs, "cases", "their cases in the run (TOSA rows)"),
        ("ops.their_passed", measured.theirs_passed, "cases", "their harness passed here"),
        ("ops.agree", own.agree, "checks", "hil agrees with their pass, their own question"),
        ("ops.differ", own.differs, "checks", "hil fails what their harness passes"),
        ("ops.not_judged", own.unjudged, "checks", "their passed cases hil says NOT JUDGED on"),
        ("ops.agreement", round(own.share, 2), "%", "agreement on their own question"),
    ]
    if times:
        figure += [
            ("ops.cold_s", round(measured.cold_s), "s", "hil, cold cache, whole run"),
            ("ops.cold_case_s", round(measured.cold_case_s, 2), "s", "hil, cold, a judged case"),
            ("ops.their_case_s", round(measured.their_case_s, 2), "s", "their harness, a case"),
        ]
    if times and measured.their_case_s:
        ratio = round(measured.cold_case_s / measured.their_case_s, 2)
        figure.append(("ops.cold_ratio", ratio, "", "hil cold over their harness, a case"))
    if times and measured.warm_s is not None:
        figure.append(("ops.warm_s", round(measured.warm_s), "s", "hil, warm cache, whole run"))
    for name, value, unit, what in figure:
        record(name.replace("ops", prefix, 1), value, unit, what, command)
    record_differences(measured.rows, differences_file(prefix))
    print(
        f"figures recorded: {len(figure)} in bench/figures.json, {len(measured.rows)} differences"
    )


def agreement(
    theirs: dict[str, tuple[str, str]],
    by_case: dict[str, list[tuple[str, str, str]]],
    cold: HilSide,
    differences: Path,
) -> tuple[Tally, list[dict[str, Any]]]:
    """Their passed cases against hil's checks: their own question apart from hil's added ones.
    Each difference's two quantities (hil's measure against hil's limit, the worst error against
    their allclose bound) are printed and written to `differences` (JSON, one row each: what the
    docs' list of differences is made from)."""
    tallies = {True: Tally(), False: Tally()}
    rows: list[dict[str, Any]] = []
    for case, (outcome, _) in sorted(theirs.items()):
        if outcome != "passed":
            continue
        for hil_id, hil_outcome, message in by_case.get(case, []):
            target = target_of(hil_id)
            verdict = cold.verdicts.get((case, target))
            if not target or (hil_outcome == "skipped" and verdict != "NOT JUDGED"):
                continue  # skipped by name: not a check of hil's
            tally = tallies[asks_their_question(cold, case, target)]
            if verdict == "NOT JUDGED":  # shown as a skip that names what could not be judged
                tally.unjudged += 1
            elif hil_outcome in ("passed", "xfailed"):
                tally.agree += 1
            else:
                record = cold.records.get((case, target)) or {}
                tally.differ[f"{verdict or hil_outcome}: {_cause(message)}"].append(
                    f"{hil_id}  [{figures(record)}]"
                )
                rows.append(difference_row(case, target, verdict or hil_outcome, message, record))
    differences.write_text(json.dumps(rows, indent=1, default=str) + "\n")
    print(f"the {len(rows)} differences, each with its figures: {differences}")
    tallies[True].print("their own question (the target that asks what their pipeline asks)")
    tallies[False].print("questions hil adds (targets and backends their harness never runs)")
    return tallies[True], rows


@dataclass
class Tally:
    agree: int = 0
    unjudged: int = 0
    differ: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))

    @property
    def differs(self) -> int:
        return sum(len(v) for v in self.differ.values())

    @property
    def share(self) -> float:
        return 100.0 * self.agree / max(self.agree + self.differs, 1)

    def print(self, title: str) -> None:
        total, share = self.differs, self.share
        print(
            f"on the cases their harness passed, {title}: hil agrees {self.agree}, differs "
            f"{total} ({share:.2f} % agreement), not judged {self.unjudged}"
        )
        for cause, ids in sorted(self.differ.items(), key=lambda kv: -len(kv[1])):
            print(f"  {len(ids):5d}  {cause}")
            for hil_id in ids[:6]:
                print(f"           {hil_id}")


def difference_row(
    case: str, target: str, verdict: str, message: str, record: dict[str, Any]
) -> dict[str, Any]:
    extra = record.get(EXTRA, {})
    return {
        "case": case,
        "target": target,
        "pipeline": extra.get("pipeline"),
        "hil": verdict,
        "hil_failure": message.strip().splitlines()[0] if message.strip() else "",
        "hil_figure": hil_figure(record),
        "their_max_error": extra.get("their_rule_max_error"),
        "their_allowed": extra.get("their_rule_allowed"),
        "their_rule_detail": extra.get("their_rule_detail"),
        "cause": _cause(message),
        "figures": figures(record),
    }


def _cause(message: str) -> str:
    """A failure's cause, short: its first line without hil's error class, the case's name and
    numbers (so that one cause groups the cases it fails)."""
    first = message.strip().splitlines()[0] if message.strip() else ""
    text = re.sub(r"^hil\.errors\.\w+: ", "", first)
    text = re.sub(r"^\S+::\S+ on \S+ \[[^\]]+\]: ", "", text)
    text = re.sub(r"case '[^']+': ", "", text)
    return re.sub(r"[-+]?\d[\d.e+-]*", "N", text)[:150]


def vgf_rows(
    by_case: dict[str, list[tuple[str, str, str]]], theirs: dict[str, tuple[str, str]]
) -> None:
    rows = {
        c: [r for r in runs if target_of(r[0]) in ("vgf-emu", "")]  # "": skipped before a target
        for c, runs in by_case.items()
        if "vgf" in c
    }
    outcomes = Counter(o for runs in rows.values() for _, o, _ in runs)
    failed = Counter(_cause(m) for runs in rows.values() for _, o, m in runs if o == "failed")
    skipped = Counter(
        skip_reason(m) for runs in rows.values() for _, o, m in runs if o == "skipped"
    )
    print(
        f"their VGF rows: {len(rows)} cases; hil on vgf-emu: "
        + ", ".join(f"{n} {o}" for o, n in outcomes.most_common())
    )
    theirs_vgf = Counter(theirs[c][0] for c in rows if c in theirs)
    print(
        "  their harness on the same rows: "
        + ", ".join(f"{n} {o}" for o, n in theirs_vgf.most_common())
    )
    for reason, count in skipped.most_common():
        print(f"  skipped {count:5d}  {reason}")
    for cause, count in failed.most_common():
        print(f"  failed  {count:5d}  {cause}")


def times(
    theirs: dict[str, tuple[str, str]],
    their_seconds: dict[str, float],
    judged: set[str],
    cold: HilSide,
    warm: HilSide | None,
    checks: Counter[str],
    measured: Measured,
) -> None:
    timed = judged & set(theirs) & set(their_seconds)  # a case their run did not time is left out
    t_theirs = sum(their_seconds[c] for c in timed) / max(len(timed), 1)
    t_cold = max(cold.seconds - cold.start_up, 0.0) / max(len(judged), 1)
    n_checks = sum(n for o, n in checks.items() if o != "skipped") or 1
    print(
        f"hil cold: {cold.seconds:.0f} s ({cold.start_up:.0f} s of it start-up), "
        f"{t_cold:.2f} s a judged case, {max(cold.seconds - cold.start_up, 0) / n_checks:.2f} "
        f"s a check ({n_checks} checks)"
    )
    print(
        f"their harness on the cases hil judged: {t_theirs:.2f} s a case (pytest's own times, "
        f"{len(timed)} cases)"
    )
    ratio = t_cold / t_theirs if t_theirs else float("nan")
    print(f"goal: cold per case over theirs {ratio:.2f} (goal < 0.2)")
    measured.cold_s, measured.cold_case_s, measured.their_case_s = cold.seconds, t_cold, t_theirs
    if warm is not None:
        measured.warm_s = warm.seconds
        print(
            f"hil warm: {warm.seconds:.0f} s whole ({warm.start_up:.0f} s start-up) (goal < 600 s)"
        )


if __name__ == "__main__":
    sys.exit(main())
