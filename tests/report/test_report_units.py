"""Pure pieces of the report: units, labels, the reproduce arguments, allure's file formats."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from report_lab import Runs

from hil.report import allure_files, fmt, html, verdicts
from hil.report.inputs import load_source
from hil.results.provenance import selection_free


def test_counters_read_in_the_unit_their_name_implies() -> None:
    assert fmt.counter("npu_cycles", 1953695.0) == "1,953,695"
    assert fmt.counter("sram_bytes", 1179648.0) == "1.1 MiB"
    assert fmt.counter("arena_pool_peak_bytes", 512.0) == "512 B"
    assert fmt.counter("mac_utilization", 0.198) == "19.8 %"
    assert fmt.counter("delegated_fraction", 0.99099) == "99.1 %"
    assert fmt.counter("clock_hz", 1e9) == "1000 MHz"
    assert fmt.counter("est_time_us", 1953.7) == "1.95 ms"
    assert fmt.counter("macs_per_cycle", 128.0) == "128"
    assert fmt.counter("anything", None) == "-"


def test_every_timing_that_is_not_a_measurement_says_so() -> None:
    assert fmt.timing_label("estimated") == "estimated (Vela)"
    assert fmt.timing_label("emulated") == "emulated (QEMU)"
    assert fmt.timing_suffix("estimated") == " (est)"
    assert fmt.timing_suffix("emulated") == " (emu)"
    assert fmt.timing_suffix("measured") == ""


def test_large_latency_moves_read_as_factors() -> None:
    assert html.change(0.125) == "+12.5 %"
    assert html.change(-0.99) == "-99.0 % (100.0x faster)"
    assert html.change(2.0) == "+200.0 % (3.0x slower)"


def test_reproducing_a_line_drops_selection_targets_and_output_folders() -> None:
    args = [
        "suites",
        "--target=host",
        "--target",
        "u85-ref",
        "-k",
        "conv",
        "--hil-full",
        "--alluredir",
        "out/allure",
        "--hil-report=out/r",
        "--hil-results-dir",
        "x",
        "-p",
        "no:cacheprovider",
        "--hil-devices=lab/devices",
    ]
    kept = selection_free(args, positional=["suites"])
    assert kept == ["--hil-full", "-p", "no:cacheprovider", "--hil-devices=lab/devices"]


def test_verdicts_fall_into_one_category_each() -> None:
    assert verdicts.category_of("MISMATCH") == verdicts.FAILURE
    assert verdicts.category_of("MISMATCH", "xfailed") == verdicts.EXPECTED
    assert verdicts.category_of("CRASH") == verdicts.INFRASTRUCTURE
    assert verdicts.category_of("SOMETHING NEW") == verdicts.FAILURE
    assert verdicts.category_of("SOMETHING NEW", from_error=True) == verdicts.ERROR


def test_environment_properties_escape_what_java_properties_would_misread() -> None:
    text = allure_files.properties_text({"machine": "lab1: Cortex=A76 #2", "µ": "5 µs"})
    assert text == "machine=lab1\\: Cortex\\=A76 \\#2\n\\u00b5=5 \\u00b5s\n"


def test_categories_match_whole_messages_the_way_allure_does() -> None:
    infra, failures, errors = allure_files.categories()
    message = "hil.errors.OutputMismatch: relu on host [portable]: outputs disagree\n  max_abs ..."
    assert re.fullmatch(failures["messageRegex"], message)
    assert not re.fullmatch(infra["messageRegex"], message)
    assert re.fullmatch(infra["messageRegex"], "hil.errors.LinkTimeout: no answer\nin 5 s")
    assert re.fullmatch(errors["messageRegex"], "hil.errors.CaseError: case 'x' could not be built")


def test_a_record_written_twice_counts_once(runs: Runs, tmp_path: Path) -> None:
    folder = tmp_path / "results"
    shutil.copytree(runs.a, folder)
    lines = (folder / "records.jsonl").read_text().splitlines()
    (folder / "records.jsonl").write_text("\n".join([*lines, lines[0]]) + "\n")
    source = load_source(folder)
    assert len(source.rows) == len(load_source(runs.a).rows)
    assert json.loads(lines[0])["case"] in {r["case"] for r in source.rows}


def test_a_device_profile_is_a_row_of_where_the_time_goes(runs: Runs, tmp_path: Path) -> None:
    """A record's profile (the device's ETDump) follows the schema and is drawn per model and
    target, slowest operators first, layout copies marked."""
    from hil.report.certify import write_report

    folder = tmp_path / "results"
    shutil.copytree(runs.a, folder)
    lines = (folder / "records.jsonl").read_text().splitlines()
    record = json.loads(lines[0])
    record["profile"] = {
        "unit": "QEMU instructions",
        "runs": 5,
        "total": 1000.0,
        "covered": 0.99,
        "layout_share": 0.3,
        "operators": [
            {"instruction": 3, "operator": "aten::convolution.out", "layout": False, "time": 690},
            {"instruction": 1, "operator": "aten::permute_copy.out", "layout": True, "time": 300},
        ],
    }
    (folder / "records.jsonl").write_text("\n".join([json.dumps(record), *lines[1:]]) + "\n")
    written = write_report([folder], tmp_path / "report")
    page = written.html_path.read_text()
    table = page[page.index('id="operator-times-table"') :]
    assert "1,000 QEMU instructions" in table
    assert "aten::convolution.out [3] 69 %" in table
    assert re.search(r"aten::permute_copy\.out \[1\] <em>\(layout\)</em> 30 %", table)


def test_an_overview_draws_the_results_nearest_their_limit() -> None:
    """Thousands of results made a 103 MB chart: an overview draws at most OVERVIEW_BARS,
    failures first, then the nearest their limit, and says so."""
    from hil.report.plots import Bar

    bars = [Bar(f"case{i}", float(i), 100.0, True) for i in range(100)]
    bars.append(Bar("over", 150.0, 100.0, False))
    drawn, said = html._nearest_limit(bars)
    assert len(drawn) == html.OVERVIEW_BARS and drawn[0].label == "over"
    assert drawn[1].label == "case99" and "the 60 of 101 nearest their limit" in said
    assert html._nearest_limit(bars[:10]) == (bars[:10], "")


def test_the_runner_table_names_each_build_and_whether_it_is_a_release(
    runs: Runs, tmp_path: Path
) -> None:
    """The handshake facts each record carries become the report's runner table: a release
    runner, a test build that obeys DEBUG, and one with a planted kernel, each named so."""
    from hil.report.certify import write_report

    folder = tmp_path / "results"
    shutil.copytree(runs.a, folder)
    lines = (folder / "records.jsonl").read_text().splitlines()
    runner = {"build_id": "b1", "executorch": "1.5.1", "platform": "posix", "engine": "executorch"}
    builds = [
        ("vboard", {**runner, "debug_commands": "refused", "etdump": "yes", "build": "release"}),
        ("vtest", {**runner, "build_id": "b2", "debug_commands": "accepted", "etdump": "yes"}),
        ("vplant", {**runner, "build_id": "b3", "debug_commands": "refused", "etdump": "yes",
                    "planted_fault": "aten::add.out"}),
        ("vold", {**runner, "build_id": "b4", "debug_commands": "refused", "etdump": "no"}),
    ]  # fmt: skip
    records = []
    for (target, info), line in zip(builds, lines, strict=False):
        record = json.loads(line)
        record.update(target=target, target_info=info)
        records.append(json.dumps(record))
    (folder / "records.jsonl").write_text("\n".join([*records, *lines[4:]]) + "\n")
    page = write_report([folder], tmp_path / "report").html_path.read_text()
    table = page[page.index('id="runners"') : page.index("<h3>Artifacts</h3>")]
    rows = {
        target: re.sub(r"<[^>]+>", " ", row)
        for target, row in re.findall(r'<tr data-target="([^"]+)"[^>]*>(.*?)</tr>', table, re.S)
    }
    assert set(rows) == {"vboard", "vtest", "vplant", "vold"}
    assert " release " in rows["vboard"] and " refused " in rows["vboard"]
    assert "test build: hangs or faults on request" in rows["vtest"]
    assert "test build: a kernel wrong on purpose" in rows["vplant"]
    assert "aten::add.out" in rows["vplant"]
    assert rows["vold"].count("unknown: its handshake did not say") == 1
