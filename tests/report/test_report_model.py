"""The certification report's content, from real result files: schema, rows, merge, digest,
regression view, and the `hil report` command."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from report_lab import Runs

from hil.cli import main
from hil.errors import ReportError
from hil.report import document
from hil.report.certify import verify_file, write_report


def rows_by_key(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {row["key"]: row for row in report["results"]}


@pytest.fixture(scope="module")
def baseline(runs: Runs, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    written = write_report([runs.a], tmp_path_factory.mktemp("baseline"), title="release 1")
    return json.loads(written.json_path.read_text())


def test_report_of_a_real_run_follows_its_schema(baseline: dict[str, Any]) -> None:
    jsonschema.Draft202012Validator(document.schema()).validate(baseline)
    assert baseline["schema"] == "hil-certification-report"
    assert baseline["schema_version"] == 5


def test_every_kind_of_verdict_is_a_row_with_its_category_and_reason(
    baseline: dict[str, Any], runs: Runs
) -> None:
    rows = rows_by_key(baseline)
    expected = {
        "relu/host/portable": ("PASS", "pass"),
        "tight/host/portable": ("OVER BUDGET", "failure"),
        "broken/host/portable": ("EXPORT FAILED", "failure"),
        "drift/host/xnnpack-int8": ("POOR QUANTIZATION", "expected"),
        "relu/flaky/portable": ("INFRA", "infrastructure"),
        "linear/flaky/portable": ("SKIPPED", "skipped"),
        "relu/ghost/portable": ("SKIPPED", "skipped"),
    }
    for key, (verdict, category) in expected.items():
        assert (rows[key]["verdict"], rows[key]["category"]) == (verdict, category), key
    assert "latency (median): latency_ms = " in rows["tight/host/portable"]["reason"]
    assert "torch.export failed" in rows["broken/host/portable"]["reason"]
    assert "max_abs" in rows["drift/host/xnnpack-int8"]["reason"]  # its 1e-9 quantization bar
    assert rows["drift/host/xnnpack-int8"]["reason"].startswith("expected failure (int8 cannot")
    assert "ghost: no board at /dev/ttyHIL-ghost" in rows["relu/ghost/portable"]["reason"]
    assert "cannot open serial port socket://" in rows["relu/flaky/portable"]["reason"]
    assert rows["relu/host/portable"]["reason"] is None
    summary = baseline["summary"]
    assert summary["categories"]["failure"] == 2
    assert summary["categories"]["infrastructure"] == 1
    assert summary["failing"] == 3
    assert summary["total"] == len(baseline["results"])


def test_rows_carry_artifact_run_and_a_command_that_reproduces_them(
    baseline: dict[str, Any], runs: Runs
) -> None:
    (run,) = baseline["runs"]
    row = rows_by_key(baseline)["linear/host/xnnpack-int8"]
    assert row["run"] == run["run_id"]
    assert len(row["artifact"]["sha256"]) == 64 and row["artifact"]["size"] > 0
    assert row["nodeid"] == "suites/operators/test_lab_ops.py::test_op[linear-host-xnnpack-int8]"
    assert row["suite"] == "operators"
    assert f"git checkout {runs.commit}" in row["reproduce"]
    assert f"'{row['nodeid']}' --target=host" in row["reproduce"]
    assert "--hil-results-dir" not in row["reproduce"] and "--alluredir" not in row["reproduce"]
    assert "--hil-cache-dir=" in row["reproduce"]  # options that shape the run are kept
    assert run["git"] == {
        "commit": runs.commit,
        "branch": run["git"]["branch"],
        "dirty": False,
        "changed_files": [],
    }
    assert run["exit_status"] == 1
    assert run["tools"]["torch"].startswith("2.13")
    assert set(run["targets"]) == {"host", "ghost", "flaky"}
    assert run["targets"]["host"]["identities"] == [{"name": "host", "kind": "host"}]
    assert len(run["targets"]["host"]["device_sha256"]) == 64


def test_schema_refuses_what_a_report_must_not_be(baseline: dict[str, Any]) -> None:
    broken = copy.deepcopy(baseline)
    broken["results"][0]["category"] = "fine"
    del broken["runs"]
    broken["results"][1]["artifact"] = {"sha256": "not-a-hash", "size": 3}
    with pytest.raises(ReportError) as caught:
        document.validate(broken, "tampered")
    text = str(caught.value)
    assert "at /: 'runs' is a required property" in text
    assert "at /results/0/category" in text
    assert "at /results/1/artifact" in text


def test_digest_verifies_and_any_edit_breaks_it(runs: Runs, tmp_path: Path) -> None:
    written = write_report([runs.a], tmp_path / "report")
    assert verify_file(written.json_path).ok
    data = json.loads(written.json_path.read_text())
    (tmp_path / "compact.json").write_text(json.dumps(data))  # other whitespace, same content
    assert verify_file(tmp_path / "compact.json").ok
    passed = next(i for i, r in enumerate(data["results"]) if r["verdict"] == "PASS")
    timed = next(i for i, r in enumerate(data["results"]) if r["latency"])
    tampered = [copy.deepcopy(data) for _ in range(3)]
    tampered[0]["results"][passed]["verdict"] = "MISMATCH"
    tampered[1]["runs"][0]["git"]["dirty"] = True
    tampered[2]["results"][timed]["latency"]["median_us"] *= 0.5
    for number, edited in enumerate(tampered):
        path = tmp_path / f"tampered{number}.json"
        path.write_text(json.dumps(edited, indent=2))
        check = verify_file(path)
        assert not check.ok and check.recorded == data["digest"]["value"]
        assert "MISMATCH" in str(check)


def test_merge_keeps_every_run_and_the_later_run_supersedes(runs: Runs, tmp_path: Path) -> None:
    written = write_report([runs.a, runs.c, runs.b], tmp_path / "merged")
    report = json.loads(written.json_path.read_text())
    run_a, run_c, run_b = (r["run_id"] for r in report["runs"])
    assert len({run_a, run_b, run_c}) == 3
    rows = rows_by_key(report)
    assert rows["relu/host2/portable"]["run"] == run_c  # another machine's target
    assert rows["relu/ghost/portable"]["run"] == run_a  # only run A had it
    tight = rows["tight/host/portable"]
    assert (tight["run"], tight["verdict"]) == (run_b, "PASS")
    assert tight["superseded"] == [{"run": run_a, "verdict": "OVER BUDGET", "category": "failure"}]
    assert set(report["targets"]) == {"host", "host2", "ghost", "flaky"}
    assert report["targets"]["host"]["runs"] == [run_a, run_b]
    assert report["targets"]["host2"]["description"] == "the CPU of another lab machine"


def test_a_report_can_be_merged_with_more_results(runs: Runs, tmp_path: Path) -> None:
    first = write_report([runs.a], tmp_path / "first")
    again = write_report([first.json_path, runs.c], tmp_path / "again")
    report = json.loads(again.json_path.read_text())
    assert len(report["runs"]) == 2
    assert {"relu/host2/portable", "relu/host/portable"} <= set(rows_by_key(report))


def test_regression_view_names_new_failures_fixes_and_latency_moves(
    runs: Runs, tmp_path: Path
) -> None:
    old = write_report([runs.a], tmp_path / "old")
    new = write_report([runs.b], tmp_path / "new", baseline=old.json_path, latency_threshold=0.5)
    change = json.loads(new.json_path.read_text())["regression"]
    assert [e["key"] for e in change["new_failures"]] == ["linear/host/xnnpack-int8"]
    assert change["new_failures"][0]["before"] == "PASS"
    assert change["new_failures"][0]["after"] == "POOR QUANTIZATION"
    assert [e["key"] for e in change["fixed"]] == ["tight/host/portable"]
    moved = {e["key"]: e for e in change["latency"]}
    heavy = moved["heavy/host/portable"]
    assert heavy["direction"] == "faster" and heavy["change"] < -0.5
    assert heavy["artifact_changed"] is True and heavy["timing"] == "measured"
    assert all(abs(e["change"]) > 0.5 for e in change["latency"])
    assert "relu/ghost/portable" in change["removed"]
    assert change["baseline"]["digest_ok"] is True
    assert change["baseline"]["digest"] == old.digest


def test_a_changed_baseline_is_flagged_in_the_regression_view(runs: Runs, tmp_path: Path) -> None:
    old = write_report([runs.a], tmp_path / "old")
    data = json.loads(old.json_path.read_text())
    data["title"] = "quietly edited"
    old.json_path.write_text(json.dumps(data))
    new = write_report([runs.b], tmp_path / "new", baseline=old.json_path)
    assert new.regression is not None and new.regression["baseline"]["digest_ok"] is False


def test_hil_report_command_writes_verifies_and_explains_errors(
    runs: Runs, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "cli"
    assert (
        main(
            [
                "report",
                "--results",
                str(runs.a),
                "--results",
                str(runs.c),
                "--out",
                str(out),
                "--alluredir",
                str(tmp_path / "allure"),
            ]
        )
        == 1  # certifiable, with test failures (hil.report.gate)
    )
    printed = capsys.readouterr().out
    assert f"report: {out / 'report.html'}" in printed
    assert "3 test failures" not in printed and "2 test failures" in printed
    assert (tmp_path / "allure" / "environment.properties").read_text().count("git.commit=") == 1
    assert main(["report", "--verify", str(out / "report.json")]) == 1  # the failures gate
    assert "content hash verified" in capsys.readouterr().out
    data = json.loads((out / "report.json").read_text())
    data["summary"]["failing"] = 0
    (out / "report.json").write_text(json.dumps(data))
    assert main(["report", "--verify", str(out / "report.json")]) == 5
    assert "content hash MISMATCH" in capsys.readouterr().out
    assert main(["report", "--results", str(tmp_path / "nowhere"), "--out", str(out)]) == 2
    assert "no results at" in capsys.readouterr().err
