"""A script that uses only `hil.Session` leaves what a pytest run leaves (run.json,
records.jsonl), so `hil report` makes its certification report: a real script in a real
interpreter, the real `hil report` command."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = """
import torch, hil
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
with hil.Session(results_dir={results!r}, cache_dir={cache!r}) as session:
    case = hil.case_from_module("lib_mlp", model, (torch.randn(2, 4),))
    print(session.check(case, "host", "portable").verdict)
    try:
        session.check(case, "host", "no-such-recipe")
    except hil.HilError as e:
        print("refused:", type(e).__name__)
"""


def test_a_library_run_is_certified_by_hil_report(tmp_path: Path, shared_cache: Path) -> None:
    results, out = tmp_path / "results", tmp_path / "report"
    script = tmp_path / "notebook_cell.py"
    script.write_text(SCRIPT.format(results=str(results), cache=str(shared_cache)))
    ran = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=600, check=False
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert ran.stdout.split() == ["PASS", "refused:", "UsageError"]
    records = [json.loads(line) for line in (results / "records.jsonl").read_text().splitlines()]
    assert [(r["recipe"], r["verdict"]) for r in records] == [
        ("portable", "PASS"),
        ("no-such-recipe", "ERROR"),
    ]
    run = json.loads((results / "run.json").read_text())
    assert run["finished"] and run["exit_status"] == 1
    assert str(script) in run["command"]["line"] and "host" in run["targets"]
    made = subprocess.run(
        [sys.executable, "-m", "hil.cli", "report", "--results", str(results), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert made.returncode == 0, made.stderr[-3000:]
    report = json.loads((out / "report.json").read_text())
    assert [(r["case"], r["verdict"]) for r in report["results"]] == [
        ("lib_mlp", "PASS"),
        ("lib_mlp", "ERROR"),
    ]
    assert (out / "report.html").stat().st_size > 0
