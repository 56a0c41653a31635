"""Fixtures of the report tests: real result files from real runs (see report_lab.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from report_lab import NpuRun, Runs, run_lab, run_npu


@pytest.fixture(scope="session")
def runs(tmp_path_factory: pytest.TempPathFactory, shared_cache: Path) -> Runs:
    """Three runs of tiny cases on the host target, once per test session (about 40 s)."""
    return run_lab(tmp_path_factory.mktemp("lab"), shared_cache)


@pytest.fixture(scope="session")
def npu_run(tmp_path_factory: pytest.TempPathFactory, shared_cache: Path) -> NpuRun:
    """A conv block on u85-ref, the Ethos-U85 stand-in of devices/ (about 20 s)."""
    devices = Path(__file__).resolve().parents[2] / "devices"
    if not (devices / "u85-ref.yaml").exists():
        pytest.skip("devices/u85-ref.yaml is not in this checkout")
    run = run_npu(tmp_path_factory.mktemp("npu"), shared_cache, devices)
    # a run that produced nothing is a failure of what these tests read, never a skip
    assert (run.results / "records.jsonl").read_text().strip(), (
        f"u85-ref produced no result here (pytest exit {run.exit_code})"
    )
    return run
