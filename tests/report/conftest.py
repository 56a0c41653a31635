"""Fixtures of the report tests: real result files from real runs (see report_lab.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from report_lab import Runs, run_lab


@pytest.fixture(scope="session")
def runs(tmp_path_factory: pytest.TempPathFactory, shared_cache: Path) -> Runs:
    """Three runs of tiny cases on the host target, once per test session (about 40 s)."""
    return run_lab(tmp_path_factory.mktemp("lab"), shared_cache)
