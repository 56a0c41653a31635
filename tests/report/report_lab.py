"""Real result files for the report tests: three real pytest runs of tiny cases on the host target.

Run A (the baseline) covers every kind of verdict: passes, a budget breach, an expected poor int8
quantization, an export failure, an unavailable target (skipped) and a target whose link is down
(infrastructure error). Run B is "the next release": one case now fails, one is fixed, one got
much faster. Run C is another machine's target (host2). Each run is a nested `pytest.main` with
the installed hil plugin, as a lab job would run it, in a git checkout of its own.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from unreachable_boards import GHOST_PORT, board_file, refused_port

from hil.report.certify import write_report

DEVICE = """
name: {name}
kind: host
description: {description}
recipes: {recipes}
latency: {{warmup: 1, min_runs: 3, min_time_s: 0.005, max_runs: 20}}
"""

SUITE = """
import pytest, torch
import hil


class DataDependent(torch.nn.Module):
    def forward(self, x):
        if x.sum() > 0:  # data-dependent control flow: torch.export refuses it
            return x * 2
        return x


def linear(n_in, n_out):
    def make():
        torch.manual_seed(0)
        return torch.nn.Linear(n_in, n_out)
    return make


TINY = hil.ToleranceOverride(reason="held to 1e-9 on purpose", max_abs=1e-9)

CASES = [
    hil.Case("relu", torch.nn.ReLU, hil.seeded((1, 16))),
    hil.Case("linear", linear(16, 8), hil.seeded((2, 16)), {linear_extra}),
    hil.Case("tight", linear(16, 8), hil.seeded((1, 16)), recipes=frozenset({{"portable"}}),
             {tight_extra}),
    hil.Case("drift", linear(16, 8), hil.seeded((4, 16)), tolerance=TINY,
             recipes=frozenset({{"xnnpack-int8"}}),
             xfail={{"xnnpack-int8": "int8 cannot meet 1e-9"}}),
    hil.Case("broken", DataDependent, hil.seeded((1, 8)), recipes=frozenset({{"portable"}})),
    hil.Case("heavy", linear({heavy}, {heavy}), hil.seeded(({rows}, {heavy})),
             recipes=frozenset({{"portable"}})),
]


@pytest.mark.hil_cases(CASES)
def test_op(hil_check):
    hil_check()
"""

BASELINE = {"linear_extra": "", "tight_extra": 'budget_ms={"*": 1e-6}', "heavy": 384, "rows": 64}
# The next release: linear's int8 quantization bar is raised (a new failure), tight loses its impossible
# budget (fixed), heavy shrinks (its latency drops far beyond any threshold).
NEXT = {
    "linear_extra": 'tolerance=hil.ToleranceOverride(reason="release bar", min_sqnr_db=90.0)',
    "tight_extra": "",
    "heavy": 8,
    "rows": 1,
}


@dataclass(frozen=True)
class Runs:
    """Where each run left its results, and what pytest returned."""

    a: Path
    b: Path
    c: Path
    allure_a: Path
    allure_b: Path
    report_a: Path  # report.json of run A, written by `write_report`
    report_b: Path  # folder run B wrote with --hil-report, against report_a as its baseline
    project: Path
    commit: str
    exit_codes: tuple[int, int, int]


def _git(folder: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.email=lab@example.invalid", "-c", "user.name=lab", *args],
        cwd=folder,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def _suite(values: dict[str, object]) -> str:
    return SUITE.format(**values)


def _run(project: Path, *args: str) -> int:
    try:
        return _main(project, *args)
    finally:  # the next run must import the suite afresh (the modules hil imported may stay)
        for name, module in list(sys.modules.items()):
            if str(getattr(module, "__file__", "") or "").startswith(str(project)):
                del sys.modules[name]


def _main(project: Path, *args: str) -> int:
    return int(
        pytest.main(
            [
                str(project / "suites"),
                "-p",
                "no:cacheprovider",
                "-p",
                "no:labgrid",
                "--import-mode=importlib",
                "--rootdir",
                str(project),
                "-c",
                str(project / "pytest.ini"),
                "-q",
                *args,
            ]
        )
    )


def run_lab(root: Path, cache: Path) -> Runs:
    project = root / "checkout"
    devices = project / "devices"
    devices.mkdir(parents=True)
    for name, recipes, description in (
        ("host", "[portable, xnnpack-fp32, xnnpack-int8]", "this CPU"),
        ("host2", "[portable]", "the CPU of another lab machine"),
    ):
        (devices / f"{name}.yaml").write_text(
            DEVICE.format(name=name, recipes=recipes, description=description)
        )
    for name, port, description in (
        ("ghost", GHOST_PORT, "a board that is not connected"),
        ("flaky", refused_port(), "a board whose serial link is down"),
    ):
        (devices / f"{name}.yaml").write_text(board_file(name, port, description=description))
    (project / "pytest.ini").write_text("[pytest]\n")
    suite = project / "suites" / "operators"
    suite.mkdir(parents=True)
    (suite / "test_lab_ops.py").write_text(_suite(BASELINE))
    _git(project, "init", "-q")
    _git(project, "add", ".")
    _git(project, "commit", "-qm", "baseline")
    commit = _git(project, "rev-parse", "HEAD")

    common = [f"--hil-devices={devices}", f"--hil-cache-dir={cache}"]
    a, b, c = root / "results-a", root / "results-b", root / "results-c"
    allure_a, allure_b = root / "allure-a", root / "allure-b"
    code_a = _run(
        project,
        "--target=host",
        "--target=ghost",
        "--target=flaky",
        f"--hil-results-dir={a}",
        f"--alluredir={allure_a}",
        *common,
    )
    code_c = _run(
        project, "--target=host2", "-k", "relu or linear", f"--hil-results-dir={c}", *common
    )
    (suite / "test_lab_ops.py").write_text(_suite(NEXT))  # uncommitted: a dirty checkout
    baseline = write_report([a], root / "report-a", title="release 1").json_path
    code_b = _run(
        project,
        "--target=host",
        f"--hil-results-dir={b}",
        f"--alluredir={allure_b}",
        f"--hil-report={root / 'report-b'}",
        f"--hil-baseline={baseline}",
        *common,
    )
    return Runs(
        a,
        b,
        c,
        allure_a,
        allure_b,
        baseline,
        root / "report-b",
        project,
        commit,
        (code_a, code_b, code_c),
    )


NPU_SUITE = """
import pytest, torch
import hil


def block():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU(), torch.nn.Conv2d(8, 4, 3))


@pytest.mark.hil_cases([hil.Case("conv_block", block, hil.seeded((1, 3, 16, 16)),
                                 budget_ms={"u85-ref": 5.0})])
def test_npu(hil_check):
    hil_check()
"""


@dataclass(frozen=True)
class NpuRun:
    results: Path
    allure: Path
    exit_code: int


def run_npu(root: Path, cache: Path, devices: Path) -> NpuRun:
    """One small conv block on the Ethos-U85 stand-in (TOSA reference numerics, Vela estimate)."""
    project = root / "checkout"
    suite = project / "suites" / "models"
    suite.mkdir(parents=True)
    (project / "pytest.ini").write_text("[pytest]\n")
    (suite / "test_lab_npu.py").write_text(NPU_SUITE)
    results, allure = root / "results", root / "allure"
    code = _run(
        project,
        "--target=u85-ref",
        f"--hil-devices={devices}",
        f"--hil-cache-dir={cache}",
        f"--hil-results-dir={results}",
        f"--alluredir={allure}",
    )
    return NpuRun(results, allure, code)


def run_all_skipped(runs: Runs, folder: Path, cache: Path, project: Path | None = None) -> Path:
    """A run in which nothing was judged: every case on a board that is not connected (in
    `project`, a clone of the lab's checkout, where given; else in the lab's own, now dirty)."""
    results = folder / "results-skipped"
    project = project or runs.project
    devices = project / "devices"
    _run(
        project,
        "--target=ghost",
        f"--hil-devices={devices}",
        f"--hil-cache-dir={cache}",
        f"--hil-results-dir={results}",
    )
    return results


def run_quarantined(runs: Runs, folder: Path, cache: Path) -> Path:
    """Run B's new failure (linear's raised int8 bar) under a quarantine entry naming it."""
    quarantine = folder / "quarantine.yaml"
    quarantine.write_text(
        '- case: "linear-host-xnnpack-int8"\n'
        "  reason: the raised int8 bar is being looked at\n"
        "  issue: LAB-1\n"
        "  expires: 2999-12-31\n"
    )
    results = folder / "results-quarantined"
    devices = runs.project / "devices"
    _run(
        runs.project,
        "--target=host",
        "-k",
        "linear",
        f"--hil-quarantine={quarantine}",
        f"--hil-devices={devices}",
        f"--hil-cache-dir={cache}",
        f"--hil-results-dir={results}",
    )
    return results
