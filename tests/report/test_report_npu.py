"""A real Ethos-U85 stand-in result (Vela estimate, TOSA reference numerics) in the report and allure:
device counters shown in their units, estimated latency labelled as such everywhere."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from allure_read import allure_results, attachment
from headless_chromium import Chromium, executable
from report_lab import NpuRun

from hil.report.certify import write_report


def test_npu_counters_and_estimated_latency_reach_the_report(
    npu_run: NpuRun, tmp_path: Path
) -> None:
    written = write_report([npu_run.results], tmp_path / "report")
    (row,) = json.loads(written.json_path.read_text())["results"]
    assert row["target"] == "u85-ref" and row["latency"]["timing"] == "estimated"
    assert row["counters"]["npu_cycles"] > 0 and row["counters"]["sram_bytes"] > 0
    assert 0 < row["counters"]["mac_utilization"] <= 1
    assert {"partition", "vela"} <= set(row["artifact"]["details"])
    assert row["target_info"]["npu"] == "ethos-u85-256"

    binary = executable()
    if binary is None:
        pytest.skip("chromium is not installed")
    with Chromium(binary, tmp_path / "profile") as browser:
        page = browser.open(written.html_path.as_uri())
        chip = browser.evaluate(page, "document.querySelector('#matrix td.cell').innerText")
        assert " (est)" in chip
        latency = browser.evaluate(
            page, "document.getElementById('r-conv-block-u85-ref-ethos-u').innerText"
        )
        assert latency.count("(est)") == 2  # median and p90
        captions = browser.evaluate(
            page, "[...document.querySelectorAll('figcaption')].map(f => f.textContent)"
        )
        assert "u85-ref: latency vs budget (estimated (Vela))" in captions
        partition = browser.evaluate(  # the partition view, without the explore server
            page, f"document.querySelector('tr[data-partition=\"{row['key']}\"]').innerText"
        )
        counters = browser.evaluate(
            page,
            """(() => { const t = document.querySelector('table.counters[data-target="u85-ref"]');
                const names = [...t.querySelectorAll('th')].map(h => h.textContent);
                const cells = [...t.querySelectorAll('tr')[1].querySelectorAll('td')].map(d => d.textContent);
                return Object.fromEntries(names.map((n, i) => [n, cells[i]])); })()""",
        )
    assert counters["timing"] == "estimated (Vela)"
    cells = partition.split("\t")
    assert cells[:2] == ["conv_block", "u85-ref"] and cells[3] == "1" and cells[4] == "100 %"
    assert "convolution" in cells[5] and cells[6].strip() == "none"
    assert counters["npu_cycles"] == f"{int(row['counters']['npu_cycles']):,}"
    assert counters["mac_utilization"].endswith(" %")
    assert counters["sram_bytes"].endswith(("KiB", "MiB"))


def test_npu_case_in_allure_has_partition_and_vela_attachments(npu_run: NpuRun) -> None:
    result = allure_results(npu_run.allure)["test_npu[conv_block-u85-ref-ethos-u]"]
    partition = json.loads(attachment(npu_run.allure, result, "partition report").read_text())
    assert partition["delegates"] >= 1
    vela = json.loads(attachment(npu_run.allure, result, "Vela summary").read_text())
    assert vela["total"]["npu_cycles"] > 0
    assert attachment(npu_run.allure, result, "latency vs budget (estimated (Vela))").stat().st_size
    values = dict(
        line.split("=", 1)
        for line in (npu_run.allure / "environment.properties").read_text().splitlines()
    )
    assert values["target.u85-ref"] == "ethos_u_ref, estimated timing"
    assert values["target.u85-ref.npu"] == "ethos-u85-256"
