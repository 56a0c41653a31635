"""`hil report` is what a release engineer runs on a laptop: it reads what a run wrote and
imports neither torch nor ExecuTorch. Shown in a process where importing either fails."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from report_lab import Runs

# Before hil is imported: any import of torch, ExecuTorch or torchao raises, as in a venv
# without them, and the test's process stays the one hil runs in.
NO_TORCH = textwrap.dedent(
    """
    import importlib.abc, sys

    class NoTorch(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name.partition(".")[0] in ("torch", "executorch", "torchao"):
                raise ImportError(f"{name} is not installed here")

    sys.meta_path.insert(0, NoTorch())
    from hil.cli import main
    code = main(sys.argv[1:])
    loaded = sorted(m for m in sys.modules if m.partition(".")[0] in ("torch", "executorch"))
    print("LOADED", loaded)
    sys.exit(code)
    """
)


def hil_without_torch(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", NO_TORCH, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_report_verify_and_baseline_run_without_torch(runs: Runs, tmp_path: Path) -> None:
    report = hil_without_torch("report", "--results", runs.a, "--out", tmp_path / "a")
    # run A holds failures (OVER BUDGET, EXPORT FAILED, INFRA): their plots are drawn too, and
    # its exit says so (hil.report.gate)
    assert report.returncode == 1, report.stderr
    assert "LOADED []" in report.stdout
    page = (tmp_path / "a" / "report.html").read_text()
    assert "<svg" in page or "data:image/png" in page
    verified = hil_without_torch("report", "--verify", tmp_path / "a" / "report.json")
    assert verified.returncode == 1, verified.stderr
    assert "LOADED []" in verified.stdout
    compared = hil_without_torch(
        "report",
        "--results",
        runs.b,
        "--baseline",
        tmp_path / "a" / "report.json",
        "--out",
        tmp_path / "b",
    )
    assert "LOADED []" in compared.stdout, compared.stderr
    assert json.loads((tmp_path / "b" / "report.json").read_text())["regression"] is not None
