"""The loopback lab: a real labgrid coordinator and one exporter per board (ser2net serving
each runner's pty), two xdist workers sharing the two boards, and one board killed in the
middle of a case. Checked through the records and run.json the run leaves: every case ran
exactly once to completion, the killed board's case was an infrastructure error on that board
and passed on the other, and every place was released at the end."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from lab_rack import FIRMWARE_DIR, BoardKiller, lab_state, needs_lab, rack_device, virtual_rack

pytestmark = needs_lab

SUITE = """
import pytest, torch
import hil
from hil.devices import TimingPolicy

def linear(seed):
    def make():
        torch.manual_seed(seed)
        return torch.nn.Linear(8, 4)
    return make

def wide():
    torch.manual_seed(0)
    return torch.nn.Linear(256, 256)

CASES = [hil.Case(f"lin{i}", linear(i), hil.seeded((1, 8))) for i in range(6)]
# About 1.5 s of runs on the board; the only case whose runner logs "3..99999 runs".
CASES.insert(2, hil.Case("victim", wide, hil.seeded((16, 256)), timing=TimingPolicy(
    warmup=0, min_runs=3, min_time_s=1.5, max_runs=99999, max_time_s=3.0)))

@pytest.mark.hil_cases(CASES)
def test_case(hil_check):
    hil_check()
"""
CASE_IDS = {"lin0", "lin1", "victim", "lin2", "lin3", "lin4", "lin5"}


def run_pytest(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "HIL_FIRMWARE_DIR": str(FIRMWARE_DIR),
        "XDG_CACHE_HOME": str(project / "cache"),
    }  # the lease notes
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            *args,
            "-p",
            "no:cacheprovider",
            "-p",
            "no:labgrid",
            "-W",
            "ignore",
            "-o",
            "addopts=",
        ],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=420,
    )


def test_two_workers_two_boards_one_killed_mid_case(tmp_path: Path, shared_cache: Path) -> None:
    project = tmp_path / "project"
    (project / "devices").mkdir(parents=True)
    (project / "test_rack_suite.py").write_text(SUITE)
    with virtual_rack(tmp_path / "rack", ["vb1", "vb2"]) as rack:
        rack_device(project / "devices", "rack", rack.coordinator)
        with BoardKiller(rack, b"run: 0 warm-up, 3..99999 runs") as killer:
            done = run_pytest(
                project,
                "test_rack_suite.py",
                "--target=rack",
                "-n",
                "2",
                "--hil-retries=1",
                f"--hil-cache-dir={shared_cache}",
                "--hil-results-dir=results",
            )
        places, reservations = lab_state(rack.coordinator)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-6000:]
    assert killer.killed in ("vb1", "vb2"), output[-3000:]
    other = ({"vb1", "vb2"} - {killer.killed}).pop()

    records = [json.loads(line) for line in (project / "results/records.jsonl").open()]
    assert sorted(r["case"] for r in records) == sorted(CASE_IDS)  # each once: none lost
    assert all(r["verdict"] == "PASS" for r in records), records
    assert {r["board"] for r in records} <= {"vb1", "vb2"}
    victim = next(r for r in records if r["case"] == "victim")
    assert victim["boards"] == [killer.killed, other]
    first, second = victim["attempts"]
    assert (first["board"], first["verdict"]) == (killer.killed, "INFRA")
    assert first["error_class"] in ("TransportError", "LinkTimeout", "ProtocolError")
    assert first["recovery"] == f"{killer.killed} out of service; moved to {other}"
    assert (second["board"], second["verdict"]) == (other, "PASS")
    assert victim["board"] == other
    assert all("attempts" not in r for r in records if r["case"] != "victim")  # none run twice

    items = json.loads((project / "results/run.json").read_text())["items"]
    assert sorted(i["case"] for i in items) == sorted(CASE_IDS)
    assert {i["outcome"] for i in items} == {"passed"}

    assert "boards taken out of service: 1" in output
    assert "victim on rack [portable]: PASS after 2 attempts" in output
    assert places == {"vb1": None, "vb2": None}, "a place was left acquired"
    assert reservations == 0, "a reservation was left behind"
