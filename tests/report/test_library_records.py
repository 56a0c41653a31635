"""A script that uses only `hil.Session` leaves what a pytest run leaves (run.json,
records.jsonl), so `hil report` makes its certification report: a real script in a real
interpreter, the real `hil report` command."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

# a notebook cell's session: one small model, a first check on host; each test adds its own
PRELUDE = """
import torch, hil
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
with hil.Session(results_dir={results!r}, cache_dir={cache!r}) as session:
    case = hil.case_from_module("lib_mlp", model, (torch.randn(2, 4),))
    print(session.check(case, "host", "portable").verdict)
"""

SCRIPT = (
    PRELUDE
    + """    try:
        session.check(case, "host", "no-such-recipe")
    except hil.HilError as e:
        print("refused:", type(e).__name__)
"""
)


def run_script(
    text: str, script: Path, results: Path, cache: Path
) -> subprocess.CompletedProcess[str]:
    """The script in a real interpreter of its own, committed in a checkout of its own (a
    certificate names the commit of the code that ran), its session writing to `results`."""
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(text.format(results=str(results), cache=str(cache)))
    git = ["git", "-c", "user.email=lab@example.invalid", "-c", "user.name=lab"]
    for step in (["init", "-q"], ["add", script.name], ["commit", "-qm", "notebook"]):
        subprocess.run([*git, *step], cwd=script.parent, check=True)
    return subprocess.run(
        [sys.executable, str(script)],
        cwd=script.parent,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def hil_report(results: Path, out: Path) -> subprocess.CompletedProcess[str]:
    """The real `hil report` command on `results`, writing to `out`."""
    return subprocess.run(
        [sys.executable, "-m", "hil.cli", "report", "--results", str(results), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_a_library_run_is_certified_by_hil_report(tmp_path: Path, shared_cache: Path) -> None:
    results, out = tmp_path / "results", tmp_path / "report"
    script = tmp_path / "project" / "notebook_cell.py"
    ran = run_script(SCRIPT, script, results, shared_cache)
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
    made = hil_report(results, out)
    assert made.returncode == 1, made.stderr[-3000:]  # certifiable; the ERROR result fails it
    report = json.loads((out / "report.json").read_text())
    assert report["certification"] == {"certifiable": True, "reasons": []}
    assert [(r["case"], r["verdict"]) for r in report["results"]] == [
        ("lib_mlp", "PASS"),
        ("lib_mlp", "ERROR"),
    ]
    assert (out / "report.html").stat().st_size > 0


ALTERED = (
    PRELUDE
    + """    same = session.check(case, "host", "xnnpack-fp32", rewrite_outputs=lambda outs: list(outs))
    print(same.verdict)
"""
)


def test_a_pass_with_rewritten_outputs_is_marked_and_the_run_is_not_certified(
    tmp_path: Path, shared_cache: Path
) -> None:
    """Outputs rewritten after the run (here: to themselves, so the check passes) are not the
    device's: the record says so although it passed, and `hil report` writes the report for
    study but refuses to certify the run, naming the result and why."""
    results, out = tmp_path / "results", tmp_path / "report"
    ran = run_script(ALTERED, tmp_path / "project" / "fault_injection.py", results, shared_cache)
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert ran.stdout.split() == ["PASS", "PASS"]
    records = [json.loads(line) for line in (results / "records.jsonl").read_text().splitlines()]
    assert [r["altered"] for r in records] == [
        [],
        ["outputs rewritten after the run (fault injection): not the device's outputs"],
    ]
    made = hil_report(results, out)
    assert made.returncode == 3, made.stderr[-3000:]
    assert "NOT CERTIFIABLE (1 reason(s))" in made.stderr
    assert "1 result(s) of an altered run (outputs rewritten after the run" in made.stderr
    assert "lib_mlp on host [xnnpack-fp32]" in made.stderr
    report = json.loads((out / "report.json").read_text())
    assert report["summary"]["altered"] == [
        "lib_mlp on host [xnnpack-fp32]: outputs rewritten after the run (fault injection): "
        "not the device's outputs"
    ]
    html = (out / "report.html").read_text()
    assert "NOT CERTIFIED" in html and "lib_mlp on host [xnnpack-fp32]" in html
