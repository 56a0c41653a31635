"""Serial targets through the pytest plugin: a runner that hangs inside a suite fails that
case with the timeout, and the target's remaining cases are skipped with that first cause; a
runner that crashes fails its case and the next case gets a fresh runner."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from debug_builds import with_debug_commands

REPO = Path(__file__).resolve().parents[2]

SUITE = """
import pytest, torch
import hil

def linear():
    torch.manual_seed(0)
    return torch.nn.Linear(8, 4)

CASES = [
    hil.Case("first", linear, hil.seeded((1, 8))),
    hil.Case("second", linear, hil.seeded((2, 8))),
    hil.Case("third", linear, hil.seeded((3, 8))),
]

@pytest.mark.hil_cases(CASES)
def test_case(hil_check):
    hil_check()
"""


def serial_device(folder: Path, name: str, inject: str) -> None:
    spec = {
        "name": name,
        "kind": "serial",
        "recipes": ["portable"],
        "latency": {"warmup": 0, "min_runs": 2, "min_time_s": 0.01, "max_runs": 10},
        "connection": {
            "virtual": "host-runner",
            "runner_args": ["--inject", inject],
            "reply_timeout_s": 1.0,
            "run_timeout_s": 1.0,
        },
    }
    # a test build of the runner: a release one refuses --inject
    (folder / f"{name}.yaml").write_text(yaml.safe_dump(with_debug_commands(spec)))


@pytest.fixture
def project(
    pytester: pytest.Pytester, shared_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> pytest.Pytester:
    monkeypatch.setenv("HIL_FIRMWARE_DIR", str(REPO / ".hil" / "firmware"))  # reuse builds
    devices = pytester.mkdir("devices")
    serial_device(devices, "hangs", "hang@1")
    serial_device(devices, "crashes", "fault@1")
    pytester.makepyfile(test_suite=SUITE)
    pytester.makeini(
        f"[pytest]\naddopts = --hil-cache-dir={shared_cache} -p no:cacheprovider -p no:labgrid "
        "-W ignore::pytest.PytestAssertRewriteWarning\n"
    )
    return pytester


def test_hung_runner_fails_its_case_and_skips_the_rest_with_the_first_cause(
    project: pytest.Pytester,
) -> None:
    result = project.runpytest("--target=hangs", "-rs")
    result.assert_outcomes(failed=1, skipped=2)
    result.stdout.fnmatch_lines(
        [
            "*LinkTimeout*silent during RUN*",
            "SKIPPED*target hangs is out of service since an earlier failure*silent during RUN*",
        ]
    )


def test_crashed_runner_fails_its_case_and_the_next_case_gets_a_fresh_runner(
    project: pytest.Pytester,
) -> None:
    result = project.runpytest("--target=crashes")
    # --inject fault@1 faults the first RUN of each runner process: every case meets a fresh
    # runner, so every case crashes, and none is skipped as "out of service".
    result.assert_outcomes(failed=3)
    result.stdout.fnmatch_lines(["*TargetCrash*SIGSEGV*"])
