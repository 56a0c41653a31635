"""The pytest glue, exercised through pytester against the real host target and exporter."""

from __future__ import annotations

from pathlib import Path

import pytest
from unreachable_boards import GHOST_PORT, board_file, refused_port

HOST = """
name: {name}
kind: host
recipes: [portable, xnnpack-fp32]
latency: {{warmup: 1, min_runs: 3, min_time_s: 0.01, max_runs: 20}}
"""

SUITE = """
import pytest, torch
import hil

def linear():
    torch.manual_seed(0)
    return torch.nn.Linear(8, 4)

CASES = [
    hil.Case("relu", torch.nn.ReLU, hil.seeded((1, 8))),
    hil.Case("linear", linear, hil.seeded((2, 8)), recipes=frozenset({"portable"})),
]

@pytest.mark.hil_cases(CASES)
def test_case(hil_check):
    hil_check()
"""


@pytest.fixture
def project(pytester: pytest.Pytester, shared_cache: Path) -> pytest.Pytester:
    devices = pytester.mkdir("devices")
    for name in ("host", "host2"):
        (devices / f"{name}.yaml").write_text(HOST.format(name=name))
    (devices / "ghost.yaml").write_text(board_file("ghost", GHOST_PORT, "[portable, xnnpack-fp32]"))
    (devices / "flaky.yaml").write_text(
        board_file("flaky", refused_port(), "[portable, xnnpack-fp32]")
    )
    pytester.makepyfile(test_suite=SUITE)
    pytester.makeini(
        f"[pytest]\naddopts = --hil-cache-dir={shared_cache} -p no:cacheprovider -p no:labgrid -W ignore::pytest.PytestAssertRewriteWarning\n"
    )
    return pytester


def test_unknown_target_is_a_usage_error_listing_valid_names(project: pytest.Pytester) -> None:
    result = project.runpytest("--target=hots")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*unknown target 'hots'; valid targets: *flaky, fvp-u55, fvp-u85, ghost, host, host2, *vboard, vgf-emu"
        ]
    )


def test_each_target_and_recipe_is_a_parametrize_axis(project: pytest.Pytester) -> None:
    result = project.runpytest("--target=host", "--target=host2", "--collect-only", "-q")
    collected = {line.split("::")[1] for line in result.stdout.lines if "::" in line}
    assert collected == {
        "test_case[relu-host-portable]",
        "test_case[relu-host-xnnpack-fp32]",
        "test_case[linear-host-portable]",  # restricted to portable by the case
        "test_case[relu-host2-portable]",
        "test_case[relu-host2-xnnpack-fp32]",
        "test_case[linear-host2-portable]",
    }


def test_run_passes_and_prints_one_table_per_target(project: pytest.Pytester) -> None:
    result = project.runpytest("--target=host", "--target=host2")
    result.assert_outcomes(passed=6)
    result.stdout.fnmatch_lines(
        [
            "*hil summary*",
            "target host: 3/3 passed",
            "case*backend*target check*quantization*SQNR vs eager*verdict*median*p90*budget",
            "relu*portable*PASS*",
            "target host: median latency by backend",
            "case*eager (1 thread)*portable*xnnpack-fp32",
            "target host2: 3/3 passed",
        ]
    )


def test_unavailable_target_is_skipped_with_reason_and_fix(project: pytest.Pytester) -> None:
    result = project.runpytest("--target=ghost", "-rs")
    result.assert_outcomes(skipped=3)
    result.stdout.fnmatch_lines(
        [
            f"*target ghost unavailable: ghost: no board at {GHOST_PORT} (the port does not exist*",
            "*fix: plug the board in*",
        ]
    )


def test_require_option_turns_the_skip_into_a_failure(project: pytest.Pytester) -> None:
    result = project.runpytest("--target=ghost", "--hil-require")
    result.assert_outcomes(errors=3)
    result.stdout.fnmatch_lines(["*target ghost is required but unavailable*"])


def test_broken_target_errors_once_then_skips_with_the_first_cause(
    project: pytest.Pytester,
) -> None:
    result = project.runpytest("--target=flaky", "--target=host", "-rs")
    result.assert_outcomes(errors=1, skipped=2, passed=3)
    result.stdout.fnmatch_lines(
        ["*out of service since an earlier failure: cannot open serial port socket://127.0.0.1:*"]
    )


def test_markers_restrict_targets_and_recipes(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_marked="""
        import pytest, torch, hil
        @pytest.mark.hil_targets("host2")
        @pytest.mark.hil_recipes("xnnpack-fp32")
        @pytest.mark.hil_cases([hil.Case("relu", torch.nn.ReLU, hil.seeded((1, 8)))])
        def test_only(hil_check):
            hil_check()
    """
    )
    result = project.runpytest(
        "test_marked.py", "--target=host", "--target=host2", "--collect-only", "-q"
    )
    result.stdout.fnmatch_lines(["*test_only[[]relu-host2-xnnpack-fp32[]]", "*1 test collected*"])


def test_the_artifact_fixture_gives_the_program_the_check_runs(project: pytest.Pytester) -> None:
    """hil_artifact resolves the variant's recipe as the check does: the .pte a test inspects
    is the one its check judged."""
    project.makepyfile(
        test_artifact="""
        import pytest, torch, hil
        @pytest.mark.hil_recipes("xnnpack-fp32")
        @pytest.mark.hil_cases([hil.Case("relu", torch.nn.ReLU, hil.seeded((1, 8)))])
        def test_same_program(hil_artifact, hil_check):
            result = hil_check()
            assert result.artifact.sha256 == hil_artifact.sha256
    """
    )
    project.runpytest("test_artifact.py", "--target=host").assert_outcomes(passed=1)


def test_failure_names_metric_tolerance_and_arrays(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_wrong="""
        import pytest, torch, hil
        class Nudged(torch.nn.Module):
            def forward(self, x):
                return x + (0.0 if torch.compiler.is_exporting() else 0.5)
        @pytest.mark.hil_cases([hil.Case("nudged", Nudged, hil.seeded((1, 8)))])
        def test_wrong(hil_check):
            hil_check()
    """
    )
    result = project.runpytest("test_wrong.py", "--target=host")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            "*OutputMismatch: nudged on host [[]portable[]]: the target's outputs are wrong "
            "(is the target right?)*",
            "*output 0 vs eager PyTorch: max_abs = 0.5, limit <= *",
            "*full arrays (inputs, eager, quantized model, target): *nudged--host--portable.npz*",
        ]
    )


def test_export_failure_fails_that_case_and_the_others_run(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_export="""
        import pytest, torch, hil
        class Branchy(torch.nn.Module):
            def forward(self, x):
                return x * 2 if x.sum() > 0 else x
        CASES = [hil.Case("branchy", Branchy, hil.seeded((4,))), hil.Case("relu", torch.nn.ReLU, hil.seeded((4,)))]
        @pytest.mark.hil_cases(CASES)
        def test_export(hil_check):
            hil_check()
    """
    )
    result = project.runpytest("test_export.py", "--target=host")
    result.assert_outcomes(failed=2, passed=2)
    result.stdout.fnmatch_lines(
        ["*ExportError: case 'branchy': torch.export failed*", "branchy*EXPORT FAILED*"]
    )


def test_case_xfail_is_strict(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_xfail="""
        import pytest, torch, hil
        class Nudged(torch.nn.Module):
            def forward(self, x):
                return x + (0.0 if torch.compiler.is_exporting() else 0.5)
        CASES = [
            hil.Case("nudged", Nudged, hil.seeded((1, 8)), xfail={"portable": "known eager drift"}),
            hil.Case("relu", torch.nn.ReLU, hil.seeded((1, 8)), xfail={"portable": "wrongly expected"}),
        ]
        @pytest.mark.hil_cases(CASES)
        @pytest.mark.hil_recipes("portable")
        def test_x(hil_check):
            hil_check()
    """
    )
    result = project.runpytest("test_xfail.py", "--target=host")
    result.assert_outcomes(xfailed=1, failed=1)  # the relu XPASS is strict: a failure


def test_opt_in_tags_are_deselected_unless_asked(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_tags="""
        import pytest, torch, hil
        CASES = [hil.Case("big", torch.nn.ReLU, hil.seeded((1, 8)), tags=frozenset({"large"})),
                 hil.Case("more", torch.nn.ReLU, hil.seeded((1, 8)), tags=frozenset({"full"}))]
        @pytest.mark.hil_cases(CASES)
        @pytest.mark.hil_recipes("portable")
        def test_t(hil_check):
            hil_check()
    """
    )
    project.runpytest("test_tags.py", "--target=host").assert_outcomes(deselected=2)
    project.runpytest("test_tags.py", "--target=host", "--hil-full").assert_outcomes(
        passed=1, deselected=1
    )
    project.runpytest("test_tags.py", "--target=host", "--hil-large", "--hil-full").assert_outcomes(
        passed=2
    )


def test_interrupt_keeps_results_and_prints_the_summary(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_interrupt="""
        import pytest, torch, hil
        CASES = [hil.Case("first", torch.nn.ReLU, hil.seeded((1, 8))), hil.Case("second", torch.nn.Tanh, hil.seeded((1, 8)))]
        @pytest.mark.hil_cases(CASES)
        @pytest.mark.hil_recipes("portable")
        def test_i(hil_check, hil_case):
            if hil_case.name == "second":
                raise KeyboardInterrupt
            hil_check()
    """
    )
    result = project.runpytest_inprocess(
        "test_interrupt.py", "--target=host", no_reraise_ctrlc=True
    )
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(
        ["*hil summary*", "target host: 1/1 passed", "first*portable*PASS*"]
    )
    records = (project.path / ".hil" / "results" / "records.jsonl").read_text().splitlines()
    assert len(records) == 1 and '"case": "first"' in records[0]


def test_hil_fixtures_without_cases_marker_are_a_usage_error(project: pytest.Pytester) -> None:
    project.makepyfile(test_bare="def test_bare(hil_check):\n    hil_check()\n")
    result = project.runpytest("test_bare.py")
    assert result.ret == pytest.ExitCode.INTERRUPTED or result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(["*without @pytest.mark.hil_cases*"])


# -- nothing unjudged is a PASS ------------------------------------------------------------


UNJUDGED = """
import pytest, torch, hil
CASES = [hil.Case("cycles", torch.nn.ReLU, hil.seeded((1, 8)),
                  counter_budgets={"npu_cycles": {"*": 1000}})]  # host reports no NPU cycles
@pytest.mark.hil_cases(CASES)
@pytest.mark.hil_recipes("portable")
def test_unjudged(hil_check):
    hil_check()
"""


def test_a_budget_the_target_cannot_judge_is_not_judged_never_a_pass(
    project: pytest.Pytester,
) -> None:
    project.makepyfile(test_unjudged=UNJUDGED)
    result = project.runpytest("test_unjudged.py", "--target=host", "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(
        [
            "cycles*NOT JUDGED*",
            "*SKIPPED*cycles on host [[]portable[]]: NOT JUDGED: npu_cycles: the target does not "
            "report this counter*",
        ]
    )
    required = project.runpytest("test_unjudged.py", "--target=host", "--hil-require")
    required.assert_outcomes(failed=1)
    required.stdout.fnmatch_lines(["*--hil-require: cycles on host*NOT JUDGED*"])


def test_a_hil_cases_test_that_never_checks_fails(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_lazy="""
        import pytest, torch, hil
        @pytest.mark.hil_cases([hil.Case("relu", torch.nn.ReLU, hil.seeded((1, 8)))])
        @pytest.mark.hil_recipes("portable")
        def test_lazy(hil_target):
            assert hil_target is not None  # provisioned, but nothing was judged
    """
    )
    result = project.runpytest("test_lazy.py", "--target=host")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*never called hil_check(): nothing was judged*"])


def test_xfail_covers_test_failures_never_a_lost_link(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_expected="""
        import pytest, torch, hil
        CASES = [hil.Case("relu", torch.nn.ReLU, hil.seeded((1, 8)), xfail={"portable": "known"})]
        @pytest.mark.hil_cases(CASES)
        @pytest.mark.hil_recipes("portable")
        def test_wrong(hil_check):
            hil_check()
            assert False, "a test failure: what the xfail is for"
        @pytest.mark.hil_cases(CASES)
        @pytest.mark.hil_recipes("portable")
        def test_lost(hil_check):
            hil_check()
            raise hil.errors.LinkTimeout("the board stopped answering")
    """
    )
    result = project.runpytest("test_expected.py", "--target=host")
    result.assert_outcomes(xfailed=1, failed=1)
    result.stdout.fnmatch_lines(["FAILED test_expected.py::test_lost*hil.errors.LinkTimeo*"])


def test_a_module_whose_cases_do_not_apply_is_deselected_not_skipped(
    project: pytest.Pytester,
) -> None:
    project.makepyfile(
        test_npu_only="""
        import pytest, torch, hil
        @pytest.mark.hil_cases([hil.Case("npu", torch.nn.ReLU, hil.seeded((1, 8)),
                                         recipes=frozenset({"ethos-u"}))])
        def test_npu(hil_check):
            hil_check()
    """
    )
    result = project.runpytest("test_npu_only.py", "--target=host")
    result.assert_outcomes(deselected=1)  # no "got empty parameter set" skip


def test_hil_explain_explains_passing_checks_into_records_and_node_error_files(
    project: pytest.Pytester,
) -> None:
    """--hil-explain: every check gets its first-divergent search (none over, when healthy),
    its record says so, and the per-node errors land where `hil explore` reads them."""
    import json

    result = project.runpytest("--target=host", "--hil-explain", "-k", "linear")
    result.assert_outcomes(passed=1)
    results = project.path / ".hil" / "results"
    (record,) = [json.loads(line) for line in (results / "records.jsonl").read_text().splitlines()]
    assert "no operator left its tolerance" in record["first_divergent"]
    assert record["explore"] == "hil explore linear --target host --recipe portable"
    errors = json.loads((results / "node-errors" / "linear--host--portable.json").read_text())
    assert errors["format"] == "hil-node-errors/1" and errors["nodes"]
    assert "first_divergent" not in errors


def test_a_cold_run_exports_ahead_in_workers_and_keeps_its_output_in_order(
    project: pytest.Pytester, tmp_path: Path
) -> None:
    cold = [f"--hil-cache-dir={tmp_path / 'cache'}", "--target=host", "--target=host2", "-v"]
    result = project.runpytest(*cold, "--hil-export-workers=2")
    result.assert_outcomes(passed=6)
    # relu x 2 recipes and linear x 1: host2 shares host's .pte files
    result.stdout.fnmatch_lines(["hil: exporting ahead: 3 artifact(s) in 2 worker process(es)*"])
    result.stdout.fnmatch_lines(
        [
            "*test_case?relu-host-portable? PASSED*",
            "*test_case?relu-host-xnnpack-fp32? PASSED*",
            "*test_case?relu-host2-portable? PASSED*",
            "*test_case?relu-host2-xnnpack-fp32? PASSED*",
            "*test_case?linear-host-portable? PASSED*",
            "*test_case?linear-host2-portable? PASSED*",
        ]
    )
    warm = project.runpytest(*cold)
    warm.assert_outcomes(passed=6)
    assert "exporting ahead" not in warm.stdout.str()  # a warm run forks nothing
    off = project.runpytest(
        f"--hil-cache-dir={tmp_path / 'other'}", "--target=host", "--hil-export-workers=0"
    )
    off.assert_outcomes(passed=3)
    assert "exporting ahead" not in off.stdout.str()
    bad = project.runpytest("--hil-export-workers=many")
    bad.stderr.fnmatch_lines(["*--hil-export-workers takes a whole number >= 0, got 'many'*"])


def test_runner_targets_profile_each_check_unless_asked_not_to(project: pytest.Pytester) -> None:
    """vboard's records carry the device's per-operator profile and the summary prints it;
    --hil-no-profile leaves it out (an FVP's extra runs are slow)."""
    import json

    records = project.path / ".hil" / "results" / "records.jsonl"
    result = project.runpytest("--target=vboard", "-k", "linear")
    result.assert_outcomes(passed=1)
    (record,) = [json.loads(line) for line in records.read_text().splitlines()]
    assert record["profile"]["operators"] and "the device's ETDump" in record["profile_line"]
    result.stdout.fnmatch_lines(["*target vboard: where the time goes, per operator*"])
    quiet = project.runpytest("--target=vboard", "-k", "linear", "--hil-no-profile")
    quiet.assert_outcomes(passed=1)
    (record,) = [json.loads(line) for line in records.read_text().splitlines()]
    assert record["profile"] is None and not record["profile_line"]


def test_an_unsupported_executorch_is_one_sentence_before_any_work(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hil.compat import versions

    old = versions.Installed("2.13.0", "1.2.0", None, None)
    monkeypatch.setattr(versions, "installed", lambda: old)
    monkeypatch.delenv(versions.ALLOW_UNTESTED, raising=False)
    result = project.runpytest("--target=host")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*ExecuTorch 1.2.0 is outside the ExecuTorch hil is tested with*"])
    assert "Traceback" not in result.stderr.str() and "AttributeError" not in result.stdout.str()


def test_the_header_names_torch_executorch_and_the_range(project: pytest.Pytester) -> None:
    result = project.runpytest("--target=host", "--collect-only")
    result.stdout.fnmatch_lines(
        ["hil: torch *, ExecuTorch *: a release hil is tested with (1.4.x or 1.5.x)"]
    )
