"""hil.results' writer: one run holds a folder at a time, an earlier run is moved aside byte
for byte, and run.json says how many records the run wrote and their sha256. Real files,
real flocks, a real process killed with SIGKILL."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from hil.errors import ResultsBusy
from hil.results.writer import ResultsFolder


def run_doc(run_id: str) -> dict[str, Any]:
    return {
        "run_id": run_id,
        "started": "2026-12-07T10:00:00+00:00",
        "finished": None,
        "command": {"line": f"pytest suites  # {run_id}"},
        "targets": {},
    }


def record(case: str) -> dict[str, Any]:
    return {"case": case, "target": "host", "recipe": "portable", "verdict": "PASS"}


def test_a_second_run_is_refused_naming_the_holder_until_the_first_releases(
    tmp_path: Path,
) -> None:
    first, second = ResultsFolder(tmp_path), ResultsFolder(tmp_path)
    first.begin(run_doc("run-a"))
    first.append(record("a"))
    with pytest.raises(ResultsBusy) as refused:
        second.begin(run_doc("run-b"))
    text = str(refused.value)
    assert "is being written by run run-a" in text and f"pid {os.getpid()}" in text
    assert "pytest suites  # run-a" in text and "this very process" in text
    assert refused.value.fix and "--hil-results-dir" in refused.value.fix
    assert "hil check --results-dir" in refused.value.fix and "wait" in refused.value.fix
    assert refused.value.holder["run_id"] == "run-a"
    # the refused run touched nothing
    assert json.loads((tmp_path / "run.json").read_text())["run_id"] == "run-a"
    assert (tmp_path / "records.jsonl").read_text().count("\n") == 1
    assert not second.holding and not (tmp_path / "earlier").exists()
    first.release()
    second.begin(run_doc("run-b"))
    assert second.holding
    second.release()


def test_an_earlier_run_moves_into_earlier_run_id_byte_for_byte(tmp_path: Path) -> None:
    first = ResultsFolder(tmp_path)
    first.begin(run_doc("run-a"))
    for case in ("a", "b"):
        first.append(record(case))
    first.finish(run_doc("run-a"), exit_status=0, records=[])
    first.release()
    run_bytes = (tmp_path / "run.json").read_bytes()
    records_bytes = (tmp_path / "records.jsonl").read_bytes()

    second = ResultsFolder(tmp_path)
    moved = second.begin(run_doc("run-b"))
    assert moved == tmp_path / "earlier" / "run-a"
    assert (moved / "run.json").read_bytes() == run_bytes
    assert (moved / "records.jsonl").read_bytes() == records_bytes
    assert (tmp_path / "records.jsonl").read_bytes() == b""
    assert json.loads((tmp_path / "run.json").read_text())["run_id"] == "run-b"
    second.release()


def test_earlier_names_never_collide_and_records_without_run_json_are_kept(
    tmp_path: Path,
) -> None:
    (tmp_path / "earlier" / "run-a").mkdir(parents=True)  # a copied-back run of that id
    (tmp_path / "run.json").write_text(json.dumps(run_doc("run-a")))
    folder = ResultsFolder(tmp_path)
    assert folder.begin(run_doc("run-b")) == tmp_path / "earlier" / "run-a-2"
    folder.release()

    (tmp_path / "run.json").unlink()  # records with no run.json (an older hil, a hand)
    (tmp_path / "records.jsonl").write_text(json.dumps(record("x")) + "\n")
    moved = folder.begin(run_doc("run-c"))
    assert moved is not None and moved.name.startswith("unknown-")
    assert (moved / "records.jsonl").read_text() == json.dumps(record("x")) + "\n"
    assert not (moved / "run.json").exists()
    folder.release()

    (tmp_path / "run.json").unlink()  # an empty records.jsonl alone is nothing to keep
    before = sorted(p.name for p in (tmp_path / "earlier").iterdir())
    assert folder.begin(run_doc("run-d")) is None
    assert sorted(p.name for p in (tmp_path / "earlier").iterdir()) == before
    folder.release()


def test_finish_says_how_many_records_and_their_sha256(tmp_path: Path) -> None:
    folder = ResultsFolder(tmp_path)
    run = run_doc("run-a")
    folder.begin(run)
    for case in ("a", "b", "c"):
        folder.append(record(case))
    folder.finish(run, exit_status=1, records=[])
    written = json.loads((tmp_path / "run.json").read_text())
    data = (tmp_path / "records.jsonl").read_bytes()
    assert written["records"] == {"count": 3, "sha256": hashlib.sha256(data).hexdigest()}
    assert written["exit_status"] == 1 and written["finished"]
    assert folder.holding  # until release(): a report made at the end still reads this run
    folder.release()


HOLDER = """
import sys, time
from pathlib import Path
from hil.results.writer import ResultsFolder
folder = ResultsFolder(Path(sys.argv[1]))
folder.begin({"run_id": "killed-run", "started": "now", "command": {"line": "a script"}})
folder.append({"case": "a", "target": "host", "recipe": "portable", "verdict": "PASS"})
print("holding", flush=True)
time.sleep(600)
"""


def test_a_killed_holder_frees_the_folder_and_its_run_is_kept(tmp_path: Path) -> None:
    """The lock is the kernel's: SIGKILL leaves no stale lock to clean up by hand."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
        with pytest.raises(ResultsBusy, match=f"run killed-run \\(pid {holder.pid} on "):
            ResultsFolder(tmp_path).begin(run_doc("run-b"))
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=30)
    folder = ResultsFolder(tmp_path)
    moved = folder.begin(run_doc("run-b"))
    assert moved == tmp_path / "earlier" / "killed-run"
    assert json.loads((moved / "run.json").read_text())["run_id"] == "killed-run"
    assert json.loads((moved / "records.jsonl").read_text())["case"] == "a"
    folder.release()
