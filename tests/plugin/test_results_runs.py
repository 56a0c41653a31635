"""Runs and their results folder, end to end: no run wipes or mixes another's results, and a
run's folder says whether it is complete (collected, ended, records' count and sha256, each
record's arrays_sha256). Real pytest runs (in-process and in subprocesses), a real `hil
check`, a real library Session, a real xdist controller and a real SIGKILL."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import torch

import hil
from hil.errors import ResultsBusy
from hil.results.writer import ResultsFolder

HOST = """
name: host
kind: host
recipes: [portable]
latency: {warmup: 1, min_runs: 3, min_time_s: 0.01, max_runs: 20}
"""

SUITE = """
import os, subprocess, time
from pathlib import Path
import pytest, torch
import hil

@pytest.mark.hil_cases([hil.Case("relu", torch.nn.ReLU, hil.seeded((1, 8)))])
def test_case(hil_check):
    hil_check()

def test_plain():
    pass

def test_left_out():
    pass
"""

CASE = "test_suite.py::test_case[relu-host-portable]"
PLAIN = "test_suite.py::test_plain"


@pytest.fixture
def project(
    pytester: pytest.Pytester, shared_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> pytest.Pytester:
    monkeypatch.delenv("HIL_RESULTS_DIR", raising=False)  # each run: its project's .hil/results
    (pytester.mkdir("devices") / "host.yaml").write_text(HOST)
    pytester.makepyfile(test_suite=SUITE)
    pytester.makeini(
        f"[pytest]\naddopts = --hil-cache-dir={shared_cache} -p no:cacheprovider -p no:labgrid "
        "-W ignore::pytest.PytestAssertRewriteWarning\n"
    )
    return pytester


def read_run(folder: Path) -> dict[str, Any]:
    run: dict[str, Any] = json.loads((folder / "run.json").read_text())
    return run


def records_of(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (folder / "records.jsonl").read_text().splitlines()]


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def pytest_subprocess(
    project: pytest.Pytester, *args: str, env: dict[str, str] | None = None
) -> subprocess.Popen[str]:
    """A pytest run of the project in a process of its own (one that may be killed)."""
    return subprocess.Popen(
        [sys.executable, "-m", "pytest", *args],
        cwd=project.path,
        env={**os.environ, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def test_run_json_lists_collected_and_ended_and_vouches_for_its_records(
    project: pytest.Pytester,
) -> None:
    result = project.runpytest("--target=host", "-k", "not left_out")
    result.assert_outcomes(passed=2, deselected=1)
    results = project.path / ".hil" / "results"
    run = read_run(results)
    assert run["collected"] == [CASE, PLAIN]  # kept after deselection, in collection order
    assert run["ended"] == [CASE, PLAIN]
    assert run["records"] == {"count": 1, "sha256": sha256(results / "records.jsonl")}
    (record,) = records_of(results)
    assert record["arrays_sha256"] == sha256(Path(record["arrays"]))


def test_a_hil_check_after_a_pytest_run_keeps_that_run_in_earlier(
    project: pytest.Pytester, shared_cache: Path
) -> None:
    project.runpytest("--target=host").assert_outcomes(passed=3)
    results = project.path / ".hil" / "results"
    pytest_run = read_run(results)
    kept = {name: (results / name).read_bytes() for name in ("run.json", "records.jsonl")}
    project.path.joinpath("tiny.py").write_text(
        "import torch\ndef make():\n    return torch.nn.Tanh()\n"
    )
    command = ["check", "tiny:make", "--input-shape", "1x8", "--recipe", "portable"]
    folders = ["--results-dir", str(results), "--cache-dir", str(shared_cache)]
    checked = subprocess.run(
        [sys.executable, "-m", "hil.cli", *command, *folders],
        cwd=project.path,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert checked.returncode == 0, checked.stderr[-3000:]
    earlier = results / "earlier" / pytest_run["run_id"]
    assert {name: (earlier / name).read_bytes() for name in kept} == kept  # byte for byte
    run = read_run(results)
    assert run["run_id"] != pytest_run["run_id"] and run["collected"] is None
    assert [r["case"] for r in records_of(results)] == ["make"]
    assert run["records"] == {"count": 1, "sha256": sha256(results / "records.jsonl")}


WAITING = """

def test_waits_for_go():
    Path("waiting").write_text("")
    deadline = time.monotonic() + 300
    while not Path("go").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
"""


def test_a_library_session_is_refused_while_a_pytest_run_holds_the_folder(
    project: pytest.Pytester, shared_cache: Path
) -> None:
    (project.path / "test_suite.py").write_text(SUITE + WAITING)
    results = project.path / "results"
    running = pytest_subprocess(project, "--target=host", "--hil-results-dir=results")
    try:
        deadline = time.monotonic() + 300
        while not (project.path / "waiting").exists():
            assert running.poll() is None and time.monotonic() < deadline, "the run never waited"
            time.sleep(0.05)
        holder = read_run(results)
        with hil.Session(results_dir=results, cache_dir=shared_cache) as session:
            case = hil.Case("intruder", torch.nn.ReLU, hil.seeded((1, 8)))
            with pytest.raises(ResultsBusy, match=f"being written by run {holder['run_id']}"):
                session.check(case, "host", "portable")
    finally:
        (project.path / "go").write_text("")
        output = running.communicate(timeout=300)[0]
    assert running.returncode == 0, output[-3000:]
    run = read_run(results)
    assert run["run_id"] == holder["run_id"] and not (results / "earlier").exists()
    assert [r["case"] for r in records_of(results)] == ["relu"]  # nothing of the intruder
    assert run["records"] == {"count": 1, "sha256": sha256(results / "records.jsonl")}
    assert run["ended"] == run["collected"] and len(run["collected"]) == 4


@pytest.mark.parametrize("start", ["at-configure", "at-collection"])
def test_a_pytest_run_on_a_busy_folder_is_a_usage_error(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, shared_cache: Path, start: str
) -> None:
    """With a hil option hil starts at configure; without one, when collection meets the
    first hil test: both refuse before running anything, with the holder named and the fix,
    and no traceback."""
    results = project.path / "busy"
    holder = ResultsFolder(results)
    holder.begin({"run_id": "holder-run", "started": "now", "command": {"line": "the holder"}})
    holder.append({"case": "theirs"})
    try:
        if start == "at-configure":
            result = project.runpytest("--target=host", f"--hil-results-dir={results}")
        else:  # a process of its own: this one imported hil's library, which starts hil
            monkeypatch.setenv("HIL_RESULTS_DIR", str(results))
            monkeypatch.setenv("HIL_CACHE_DIR", str(shared_cache))
            result = project.runpytest_subprocess("-o", "addopts=-p no:cacheprovider -p no:labgrid")
    finally:
        holder.release()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            f"ERROR: results folder {results} is being written by run holder-run (pid {os.getpid()}*",
            "*fix: give this run a folder of its own (pytest --hil-results-dir DIR*",
        ]
    )
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
    assert "passed" not in result.stdout.str()  # nothing ran
    assert read_run(results)["run_id"] == "holder-run"
    assert records_of(results) == [{"case": "theirs"}]


KILLED = """

def test_slow():
    time.sleep(1.2)  # longer than run.json's rewrite interval: written as ended

def test_killed():
    subprocess.run(["kill", "-KILL", str(os.getpid())], check=False)

def test_never_ran():
    pass
"""


def test_a_run_killed_with_sigkill_lists_only_the_tests_that_ended(
    project: pytest.Pytester,
) -> None:
    (project.path / "test_suite.py").write_text(SUITE + KILLED)
    killed = pytest_subprocess(project, "--target=host", "-k", "not left_out")
    output = killed.communicate(timeout=300)[0]
    assert killed.returncode == -9, output[-3000:]
    results = project.path / ".hil" / "results"
    run = read_run(results)
    slow, dead, never = (f"test_suite.py::test_{n}" for n in ("slow", "killed", "never_ran"))
    assert run["collected"] == [CASE, PLAIN, slow, dead, never]
    assert run["ended"] == [CASE, PLAIN, slow]
    assert run["finished"] is None and run["records"] is None
    assert [r["case"] for r in records_of(results)] == ["relu"]
    # the kernel dropped the killed run's lock: the next run starts, and keeps it
    project.runpytest("--target=host", "-k", "plain").assert_outcomes(passed=1, deselected=5)
    assert (results / "earlier" / run["run_id"] / "run.json").read_bytes() == json.dumps(
        run, sort_keys=True, indent=2
    ).encode() + b"\n"


def test_under_xdist_the_controller_records_collected_and_ended(
    project: pytest.Pytester, shared_cache: Path
) -> None:
    """No hil option: the controller starts hil only at the first hil record, after the
    workers reported their collection and maybe after other tests ended; run.json still
    lists them all. Workers write arrays, never run.json or records.jsonl."""
    results = project.path / "results"
    env = {"HIL_RESULTS_DIR": str(results), "HIL_CACHE_DIR": str(shared_cache)}
    ran = pytest_subprocess(
        project, "-n", "2", "-o", "addopts=-p no:cacheprovider -p no:labgrid", env=env
    )
    output = ran.communicate(timeout=600)[0]
    assert ran.returncode == 0, output[-3000:]
    run = read_run(results)
    everything = {CASE, PLAIN, "test_suite.py::test_left_out"}
    assert set(run["collected"]) == everything and len(run["collected"]) == 3
    assert set(run["ended"]) == everything and len(run["ended"]) == 3
    (record,) = records_of(results)
    assert run["records"] == {"count": 1, "sha256": sha256(results / "records.jsonl")}
    assert record["arrays_sha256"] == sha256(Path(record["arrays"]))


def test_collect_only_leaves_the_folder_and_its_run_alone(project: pytest.Pytester) -> None:
    """Listing the tests runs nothing: the last run stays the folder's run, untouched."""
    project.runpytest("--target=host").assert_outcomes(passed=3)
    folder = project.path / ".hil" / "results"
    before = {name: sha256(folder / name) for name in ("run.json", "records.jsonl")}
    listed = project.runpytest("--target=host", "--collect-only", "-q")
    assert listed.ret == 0
    assert {name: sha256(folder / name) for name in before} == before
    assert not (folder / "earlier").exists()
