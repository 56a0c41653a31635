"""`pytest --target=fvp-...` through pytester: without an FVP every case skips with one reason
and the install steps; with the fake FVP (tests/fakes/fvp) each failure class is reported as its
class, and the summary sets FVP cycles beside Vela's and lists infrastructure problems apart."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import yaml
from debug_builds import with_debug_commands
from fakes.fvp import ARTIFACTS_ENV, install

REPO = Path(__file__).resolve().parent.parent.parent

SUITE = """
import pytest, torch
import hil
from hil.runner import messages as m

def non_negative():
    return (torch.rand(1, 8, 8, 8, generator=torch.Generator().manual_seed(0)),)

def conv():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Conv2d(8, 8, 3, padding=1), torch.nn.ReLU())

MODELS = [
    hil.Case("relu", torch.nn.ReLU, non_negative),
    hil.Case("conv", conv, non_negative),
    hil.Case("relu_budget", torch.nn.ReLU, non_negative,
             counter_budgets={"npu_cycles": {"*": 10}}),
]

@pytest.mark.hil_cases(MODELS)
def test_model(hil_check):
    hil_check()

@pytest.mark.hil_cases([hil.Case("relu_fault", torch.nn.ReLU, non_negative)])
def test_fault(hil_target, hil_check):
    hil_check()  # the runner holds the model now (loading one disarms injected faults)
    hil_target.client.debug(m.DEBUG_FAULT, during_next_run=True)
    hil_check()

@pytest.mark.hil_cases([hil.Case("relu_hang", torch.nn.ReLU, non_negative)])
def test_hang(hil_target, hil_check):
    hil_check()
    hil_target.client.debug(m.DEBUG_HANG, during_next_run=True)
    hil_check()
"""


@pytest.fixture
def project(
    pytester: pytest.Pytester, shared_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> pytest.Pytester:
    devices = pytester.mkdir("devices")
    shutil.copy(REPO / "devices" / "fvp-u85.yaml", devices)
    # a test build of the echo runner: it faults and hangs on request
    echo = with_debug_commands(yaml.safe_load((REPO / "devices" / "fvp-u55.yaml").read_text()))
    echo["name"] = "fvp-echo"
    echo["connection"].update(
        engine="echo",
        time_limit_s=300,
        boot_timeout_s=60,
        reply_timeout_s=5,
        bytes_per_s=10000,
        run_timeout_s=3,
    )
    echo["latency"].update(max_runs=5)
    (devices / "fvp-echo.yaml").write_text(yaml.safe_dump(echo))
    pytester.makepyfile(test_fvp_suite=SUITE)
    pytester.makeini(
        f"[pytest]\naddopts = --hil-cache-dir={shared_cache} -p no:cacheprovider -p no:labgrid "
        "-W ignore::pytest.PytestAssertRewriteWarning\n"
    )
    monkeypatch.setenv("PATH", str(Path(shutil.which("python3") or "/usr/bin/python3").parent))
    monkeypatch.delenv("HIL_FVP_DIR", raising=False)
    monkeypatch.setenv("HIL_RESULTS_DIR", str(pytester.path / "results"))
    return pytester


def test_without_an_fvp_every_case_skips_with_one_reason(project: pytest.Pytester) -> None:
    result = project.runpytest("--target=fvp-u85", "-rs")
    result.assert_outcomes(skipped=5)  # no errors, no xfails
    skips = [
        re.match(r"SKIPPED \[(\d+)\] [^:]+:\d+: (.*)", line)
        for line in result.stdout.lines
        if line.startswith("SKIPPED")
    ]
    assert sum(int(s[1]) for s in skips if s) == 5
    assert {s[2] for s in skips if s} == {  # one reason for all (pytest groups by test line)
        "target fvp-u85 unavailable: FVP_Corstone_SSE-320 (the corstone-320 FVP) is not "
        "installed: not found in PATH (connection.fvp_dir and $HIL_FVP_DIR not set)"
    }
    result.stdout.fnmatch_lines(
        ["  fix: install the Arm Corstone-320 Ecosystem FVP*--i-agree-to-the-contained-eula*"]
    )


def test_without_an_fvp_the_require_option_errors(project: pytest.Pytester) -> None:
    result = project.runpytest("--target=fvp-u85", "--hil-require")
    result.assert_outcomes(errors=5)
    result.stdout.fnmatch_lines(["*target fvp-u85 is required but unavailable*"])


@pytest.mark.skipif(
    not (shutil.which("qemu-system-arm") and shutil.which("arm-none-eabi-gcc")),
    reason="the fake FVP runs the runner in QEMU: apt-get install qemu-system-arm gcc-arm-none-eabi",
)
def test_failure_classes_with_fake_fvp(
    project: pytest.Pytester, shared_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = install(project.path / "fvp-bin")
    monkeypatch.setenv("PATH", f"{fake}:/usr/bin:/bin")
    monkeypatch.setenv(ARTIFACTS_ENV, str(shared_cache))
    result = project.runpytest("--target=fvp-echo", "-p", "no:randomly")
    # The echo runner's outputs are its inputs, never a model verdict: relu and conv are NOT
    # JUDGED (skipped with that cause) while the FVP around them is judged: relu_budget is
    # OVER BUDGET on its PMU cycles, the fault (CRASH) and the hang (INFRA) fail, and the
    # summary lists those two apart as problems of the lab
    result.assert_outcomes(skipped=2, failed=3)
    result.stdout.fnmatch_lines(
        [
            "*hil summary*",
            "Corstone FVP: NPU cycles from the Ethos-U PMU beside Vela's estimate for the same .pte",
            "  fvp-echo: FVP_Corstone_SSE-300_Ethos-U55 0.0.0 (hil fake FVP), ethos-u55-128 "
            "(accurate mode), runner corstone-300-* (echo engine)",
            "case*target*NPU cycles (FVP PMU)*NPU cycles (Vela est)*FVP/Vela*CPU cycles*verdict",
            "relu *fvp-echo*1.00*NOT JUDGED",
            "conv *fvp-echo*1.00*NOT JUDGED",
            "relu_budget *fvp-echo*1.00*OVER BUDGET",
            "infrastructure and target problems: 1 CRASH, 1 INFRA (not verdicts on the model; "
            "model verdicts: *",
            "  CRASH  relu_fault on fvp-echo [[]ethos-u]: TargetCrash: *the runner faulted*",
            "  INFRA  relu_hang on fvp-echo [[]ethos-u]: LinkTimeout: *the FVP still runs; FVP log: *",
        ]
    )
