"""Installing hil does not tax pytest runs that never use it, and a run that does use it
without saying so (no option, no conftest) still gets hil: at collection, or, in an xdist
controller, from the first record a worker sends. Each run is a real pytest in a fresh
interpreter outside the checkout, because what is measured is that interpreter's sys.modules."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

NOT_USING_HIL = """
import sys

def test_plain(pytestconfig):
    assert pytestconfig.pluginmanager.hasplugin("hil")  # the entry point did load
    heavy = sorted(m for m in ("torch", "executorch", "numpy") if m in sys.modules)
    assert heavy == [], f"imported without hil in use: {heavy}"
"""

USING_HIL_UNANNOUNCED = """
import pytest
import torch

import hil

CASES = [hil.Case("lazy_linear", lambda: torch.nn.Linear(4, 2), hil.seeded((1, 4)),
                  recipes=("portable",))]


@pytest.mark.hil_cases(CASES)
def test_block(hil_check):
    assert hil_check().passed
"""


def _pytest(project: Path, *args: str, cache: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HIL_CACHE_DIR": str(cache), "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("PYTEST_ADDOPTS", None)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def test_a_run_that_does_not_use_hil_imports_no_torch(tmp_path: Path, shared_cache: Path) -> None:
    (tmp_path / "test_plain.py").write_text(NOT_USING_HIL)
    done = _pytest(tmp_path, cache=shared_cache)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "1 passed" in done.stdout


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one-process", "xdist"])
def test_hil_starts_when_a_test_first_uses_it(
    tmp_path: Path, shared_cache: Path, workers: list[str]
) -> None:
    (tmp_path / "test_block.py").write_text(USING_HIL_UNANNOUNCED)
    done = _pytest(tmp_path, "-p", "xdist", *workers, "-rA", cache=shared_cache)
    out = done.stdout
    assert done.returncode == 0, out[-3000:] + done.stderr[-3000:]
    assert "test_block[lazy_linear-host-portable]" in out
    assert "hil summary" in out  # the controller kept the record (xdist: from the worker)
    assert (tmp_path / ".hil" / "results" / "records.jsonl").read_text().count('"case"') == 1
