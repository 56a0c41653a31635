"""Under CI a skip for a component .ci/run installs turns the run red (tests/ci_skips.py)."""

from __future__ import annotations

import pytest

MISSING_COMPONENT = """
import pytest

def test_report_in_a_browser():
    pytest.skip("chromium is not installed: apt-get install chromium (make test does this)")

def test_on_qemu_m55():
    pytest.skip("no ExecuTorch for the Cortex-M55: no qemu-m55 SDK in .hil/sdk")
"""

MOVED_MODULE = """
import pytest
moved = pytest.importorskip("executorch.no_such_module_after_an_upgrade")

def test_uses_it():
    pass
"""


def test_under_ci_a_missing_component_fails_and_what_ci_cannot_have_skips(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_components=MISSING_COMPONENT)
    monkeypatch.setenv("CI", "true")
    result = pytester.runpytest_inprocess("-p", "no:labgrid", "-p", "ci_skips", "-rs")
    result.assert_outcomes(failed=1, skipped=1)
    result.stdout.fnmatch_lines(["*skipped under CI: chromium is not installed*"])


def test_under_ci_a_module_level_importorskip_fails(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_moved=MOVED_MODULE)
    monkeypatch.setenv("CI", "true")
    result = pytester.runpytest_inprocess("-p", "no:labgrid", "-p", "ci_skips")
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*skipped under CI*no_such_module_after_an_upgrade*"])


def test_outside_ci_the_same_skips_stay_skips(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_components=MISSING_COMPONENT)
    monkeypatch.delenv("CI", raising=False)
    result = pytester.runpytest_inprocess("-p", "no:labgrid", "-p", "ci_skips")
    result.assert_outcomes(skipped=2)
