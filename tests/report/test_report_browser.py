"""report.html as a reviewer sees it: opened in headless Chromium with no network."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import matplotlib.image
import numpy as np
import pytest
from headless_chromium import Chromium, executable
from report_lab import Runs, run_all_skipped, run_quarantined

from hil.report.certify import write_report

REPO = Path(__file__).resolve().parents[2]
# Screenshots are kept for people (CI uploads this folder); override with HIL_TEST_ARTIFACTS.
ARTIFACTS = Path(os.environ.get("HIL_TEST_ARTIFACTS", REPO / ".hil" / "test-artifacts"))


@pytest.fixture(scope="module")
def page(runs: Runs, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Run B's report merged with run A's lab errors and host2, against run A as baseline."""
    binary = executable()
    if binary is None:
        pytest.skip("chromium is not installed: apt-get install chromium (make test does this)")
    out = tmp_path_factory.mktemp("html")
    written = write_report([runs.c, runs.b], out, baseline=runs.report_a, title="release 2")
    report = json.loads(written.json_path.read_text())
    with Chromium(binary, tmp_path_factory.mktemp("profile")) as browser:
        session = browser.open(written.html_path.as_uri())
        yield browser, session, report, written


def js(page: Any, expression: str) -> Any:
    browser, session, _, _ = page
    return browser.evaluate(session, expression)


def test_matrix_shows_every_case_against_every_target_and_backend(page: Any) -> None:
    _, _, report, _ = page
    heads = js(page, "[...document.querySelectorAll('#matrix th.target')].map(t => t.textContent)")
    assert heads == ["host2", "host"]
    recipes = js(
        page, "[...document.querySelectorAll('#matrix th.recipe')].map(t => t.textContent)"
    )
    assert recipes == ["portable", "portable", "xnnpack-fp32", "xnnpack-int8"]
    cases = js(page, "[...document.querySelectorAll('#matrix tbody tr')].map(r => r.dataset.case)")
    assert cases == report["cases"]
    cells = js(
        page,
        """Object.fromEntries([...document.querySelectorAll('#matrix td.cell')].map(td =>
            [td.closest('tr').dataset.case + '/' + td.dataset.target + '/' + td.dataset.recipe,
             [...td.querySelectorAll('.chip')].map(c => c.dataset.verdict + ':' + c.className)
                .join(' ') || td.textContent.trim()]))""",
    )
    assert cells["relu/host2/portable"] == "PASS:chip pass"
    assert cells["linear/host/xnnpack-int8"] == "POOR QUANTIZATION:chip failure"
    assert cells["broken/host/portable"] == "EXPORT FAILED:chip failure"
    assert cells["drift/host/xnnpack-int8"] == "POOR QUANTIZATION:chip expected"
    assert cells["tight/host/portable"] == "PASS:chip pass"
    assert cells["broken/host2/portable"] == "not run"
    reason = js(
        page, "document.querySelector('#matrix a[href=\"#r-linear-host-xnnpack-int8\"]').title"
    )
    assert "sqnr_db" in reason and "limit >= 90" in reason  # the raised quantization bar


def test_plots_are_images_the_browser_decoded(page: Any) -> None:
    images = js(
        page,
        """[...document.images].map(i => ({kind: i.closest('figure').dataset.kind,
            width: i.naturalWidth, height: i.naturalHeight, shown: i.getBoundingClientRect().width,
            src: i.src.slice(0, 22)}))""",
    )
    kinds = [i["kind"] for i in images]
    assert kinds.count("latency") == 2 and kinds.count("error") == 2  # per target
    assert "arrays" in kinds  # the int8 mismatch's outputs against the reference
    for image in images:
        assert image["width"] > 200 and image["height"] > 100 and image["shown"] > 200, image
        assert image["src"].startswith("data:image/"), image


def test_page_needs_no_network(page: Any) -> None:
    fetched = js(
        page,
        "performance.getEntriesByType('resource').map(e => e.name)"
        ".filter(n => !n.startsWith('data:'))",
    )
    assert fetched == []
    links = js(
        page,
        "[...document.querySelectorAll('[src],[href]')].map(e => e.getAttribute('src') ||"
        " e.getAttribute('href')).filter(u => !u.startsWith('data:') && !u.startsWith('#'))",
    )
    assert links == []


def test_numbers_regression_and_provenance_are_on_the_page(page: Any, runs: Runs) -> None:
    _, _, report, written = page
    text = js(page, "document.body.innerText")
    assert written.digest in text
    row = js(page, "document.getElementById('r-linear-host-xnnpack-int8').innerText")
    assert "POOR QUANTIZATION" in row and "int8" in row and " us" in row
    new = js(
        page,
        "[...document.querySelectorAll('table.changes[data-kind=failure] td')].map(t => t.textContent)",
    )
    assert new[:5] == ["linear", "host", "xnnpack-int8", "PASS", "POOR QUANTIZATION"]
    fixed = js(
        page,
        "[...document.querySelectorAll('table.changes[data-kind=pass] td')].map(t => t.textContent)",
    )
    assert fixed[:5] == ["tight", "host", "portable", "OVER BUDGET", "PASS"]
    moved = js(page, "document.getElementById('latency-changes').innerText")
    assert "heavy" in moved and "faster" in moved
    runs_shown = js(
        page, "[...document.querySelectorAll('#runs tr[data-run]')].map(r => r.dataset.run)"
    )
    assert runs_shown == [r["run_id"] for r in report["runs"]]
    provenance = js(page, "document.getElementById('provenance').textContent")
    assert runs.commit in provenance
    assert "uncommitted changes" in provenance  # run B ran on an edited checkout
    assert "suites/operators/test_lab_ops.py" in provenance
    assert "torch" in provenance and "executorch" in provenance and "1.5.1" in provenance
    assert "git checkout " + runs.commit in provenance


def test_lab_errors_look_different_from_test_failures(runs: Runs, tmp_path: Path) -> None:
    binary = executable()
    if binary is None:
        pytest.skip("chromium is not installed")
    written = write_report([runs.a], tmp_path / "a")
    with Chromium(binary, tmp_path / "profile") as browser:
        session = browser.open(written.html_path.as_uri())
        style = browser.evaluate(
            session,
            """Object.fromEntries(['failure', 'infrastructure'].map(c => {
                const s = getComputedStyle(document.querySelector('#matrix .chip.' + c));
                return [c, [s.backgroundImage, s.outlineStyle, s.backgroundColor]]; }))""",
        )
        assert style["failure"][0] == "none" and style["infrastructure"][0].startswith(
            "repeating-linear-gradient"
        )
        assert style["infrastructure"][1] == "dashed" and style["failure"][1] == "none"
        cards = browser.evaluate(
            session,
            "Object.fromEntries([...document.querySelectorAll('#summary .card')]"
            ".map(c => [c.dataset.category, c.querySelector('b').textContent]))",
        )
        assert cards["infrastructure"] == "1" and cards["failure"] == "2"


def headline(runs: list[Path], folder: Path) -> dict[str, Any]:
    """The verdict line of a report over `runs`, as painted: each part's class, colour, text."""
    binary = executable()
    if binary is None:
        pytest.skip("chromium is not installed")
    written = write_report(runs, folder / "report")
    with Chromium(binary, folder / "profile") as browser:
        session = browser.open(written.html_path.as_uri())
        shot = browser.screenshot(session, folder / "headline.png")
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, ARTIFACTS / f"report-headline-{folder.name}.png")
        parts: dict[str, Any] = browser.evaluate(
            session,
            """[...document.querySelectorAll('#verdict-line span')].map(s =>
                [s.className, getComputedStyle(s).color, s.textContent.trim()])""",
        )
        return parts


def verdicts_of(parts: list[Any]) -> list[Any]:
    """The headline after its first line, which says whether the report is certifiable."""
    assert parts[0][2].startswith(("Certifiable", "NOT CERTIFIED")), parts
    return parts[1:]


def test_a_green_run_has_a_green_headline(runs: Runs, tmp_path: Path) -> None:
    certified, *rest = headline([runs.c], tmp_path)
    assert certified[0] == "headline pass" and certified[2].startswith("Certifiable")
    (verdict,) = rest
    assert verdict[0] == "headline pass" and verdict[1] == "rgb(46, 125, 50)"
    assert verdict[2].startswith("All ") and "judged results passed" in verdict[2]


def test_a_run_where_nothing_was_judged_is_not_green(
    runs: Runs, tmp_path: Path, shared_cache: Path
) -> None:
    results = run_all_skipped(runs, tmp_path, shared_cache)
    verdict, skipped, *_ = verdicts_of(headline([results], tmp_path))
    assert verdict[0] == "headline not-judged", verdict
    assert verdict[2].startswith("Nothing was judged") and "skipped" in verdict[2], verdict
    assert skipped[0] == "headline skipped"


def test_quarantined_failures_are_named_in_the_headline_not_counted_as_expected(
    runs: Runs, tmp_path: Path, shared_cache: Path
) -> None:
    results = run_quarantined(runs, tmp_path, shared_cache)
    report = json.loads(write_report([results], tmp_path / "json").json_path.read_text())
    assert report["summary"]["categories"]["quarantined"] == 1
    assert report["summary"]["categories"]["expected"] == 0
    assert report["summary"]["quarantined"] == ["linear on host [xnnpack-int8]"]
    verdict, *_ = verdicts_of(headline([results], tmp_path))
    assert verdict[0] == "headline quarantined", verdict
    assert (
        "1 known failure is quarantined (not a pass): linear on host [xnnpack-int8]" in verdict[2]
    )


def test_a_run_with_failures_is_red_first_and_names_its_skips_in_grey(
    runs: Runs, tmp_path: Path
) -> None:
    verdict, skipped, *causes = verdicts_of(headline([runs.a], tmp_path))
    assert verdict[0] == "headline failure" and verdict[1] == "rgb(198, 40, 40)"
    assert "results fail their test" in verdict[2] and "1 infrastructure errors" in verdict[2]
    assert skipped[0] == "headline skipped" and skipped[1] == "rgb(117, 117, 117)"
    assert any("on ghost: " in c[2] and "no board at" in c[2] for c in causes), causes


def test_screenshot_of_the_report_is_kept_and_shows_the_verdicts(page: Any, tmp_path: Path) -> None:
    browser, session, _, _ = page
    shot = browser.screenshot(session, tmp_path / "report.png")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shutil.copy(shot, ARTIFACTS / "report-screenshot.png")
    pixels = (matplotlib.image.imread(shot)[:, :, :3] * 255).round().astype(int)
    assert pixels.shape[0] > 1500 and pixels.shape[1] >= 1000
    for css in ("#2e7d32", "#c62828"):  # PASS green and failure red chips were painted
        rgb = np.array([int(css[i : i + 2], 16) for i in (1, 3, 5)])
        assert (np.abs(pixels - rgb).sum(axis=2) == 0).sum() > 50, css


def test_the_matrix_is_compact_and_filters_by_target_backend_and_verdict(page: Any) -> None:
    """A row is one line of chips (the reason is each chip's tooltip), and the filter shows
    only the columns and rows asked for."""
    heights = js(
        page, "[...document.querySelectorAll('#matrix tbody tr')].map(r => r.offsetHeight)"
    )
    assert max(heights) < 40, heights
    shown = js(
        page,
        """(() => {
            const pick = (name, value) => {
                const s = document.querySelector(`#matrix-filter select[data-filter=${name}]`);
                s.value = value; s.dispatchEvent(new Event('change'));
            };
            pick('verdict', 'POOR QUANTIZATION');
            const rows = [...document.querySelectorAll('#matrix tbody tr')]
                .filter(r => !r.hidden).map(r => r.dataset.case);
            pick('target', 'host2');
            const columns = [...document.querySelectorAll('#matrix th.target')]
                .filter(t => !t.hidden).map(t => t.textContent);
            const rowsThere = [...document.querySelectorAll('#matrix tbody tr')]
                .filter(r => !r.hidden).length;
            pick('verdict', ''); pick('target', '');
            return {rows, columns, rowsThere,
                    all: document.querySelectorAll('#matrix tbody tr').length,
                    said: document.getElementById('matrix-shown').textContent};
        })()""",
    )
    assert sorted(shown["rows"]) == ["drift", "linear"]
    assert shown["columns"] == ["host2"] and shown["rowsThere"] == 0
    assert shown["said"] == f"{shown['all']} of {shown['all']} cases"
