"""A difference with ExecuTorch's harness in its two figures: how far hil's measure went past
hil's limit, and how far the worst element's error stayed within their allclose bound (the
bench writes both for every difference; the docs' list is made from them)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from hil.executorch_ops.calls import PipelineCall
from hil.executorch_ops.runner import EXTRA
from hil.executorch_ops.summary import figures, hil_figure
from hil.executorch_ops.their_rule import TheirVerdict, their_verdict


def check(status: str, observed: dict[str, float], *limits: tuple[str, str, float]) -> Any:
    return {
        "status": status,
        "observed": observed,
        "limits": [{"metric": m, "relation": r, "value": v} for m, r, v in limits],
    }


def float_verdict(tmp_path: Path, **stored: np.ndarray[Any, Any]) -> TheirVerdict:
    """Their rule on a float row whose stored arrays are `stored` (output0, reference0, ...)."""
    arrays = tmp_path / "arrays.npz"
    np.savez(arrays, **stored)
    call = PipelineCall("TosaPipelineFP", None, (), {})
    artifact: Any = SimpleNamespace(output_scales=())
    return their_verdict(call, "fp", arrays, artifact)


def test_the_failed_limit_is_the_figure_with_the_share_of_it_used() -> None:
    record = {
        "checks": [
            check("pass", {"sqnr_db": 40.0}, ("sqnr_db", ">=", 20.0)),
            check(
                "fail",
                {"max_steps": 3.0, "mismatch_fraction": 0.1},
                ("max_steps", "<=", 2.0),
                ("mismatch_fraction", "<=", 0.5),
            ),
        ],
        EXTRA: {"their_rule_max_error": 0.0039, "their_rule_allowed": 0.0049},
    }
    figure = hil_figure(record)
    assert figure is not None
    assert (figure["metric"], figure["observed"], figure["limit"]) == ("max_steps", 3.0, 2.0)
    assert figure["share"] == pytest.approx(1.5)
    text = figures(record)
    assert "hil max_steps 3 against <= 2 (1.5 of the limit)" in text
    assert "their |error| 0.0039 against 0.0049 (0.796 of it)" in text


def test_a_passing_check_names_the_limit_it_came_nearest_to() -> None:
    record = {
        "checks": [
            check(
                "pass",
                {"max_abs": 0.5, "sqnr_db": 25.0},
                ("max_abs", "<=", 1.0),
                ("sqnr_db", ">=", 20.0),
            ),
        ]
    }
    figure = hil_figure(record)
    assert figure is not None and figure["metric"] == "sqnr_db"  # 20/25 = 0.8 > 0.5
    assert "their rule: no figure" in figures(record)


def test_their_rule_gives_the_worst_elements_error_and_its_allowance(tmp_path: Path) -> None:
    reference = np.array([1.0, 2.0, 4.0], dtype=np.float32)
    output = reference + np.array([0.0005, 0.003, 0.0], dtype=np.float32)
    verdict = float_verdict(tmp_path, output0=output, reference0=reference)
    assert verdict.passed is False  # 0.003 > 1e-3 + 1e-3 x 2
    assert verdict.max_error == pytest.approx(0.003, rel=1e-3)
    assert verdict.allowed == pytest.approx(0.001 + 0.001 * 2.0, rel=1e-6)


def test_a_pass_with_exact_elements_still_names_its_worst_element(tmp_path: Path) -> None:
    """Exact elements are close with their whole allowance left: the figure is the element that
    came nearest its bound, never an exact one (which read "0 against 0")."""
    reference = np.array([1.0, 2.0, 4.0], dtype=np.float32)
    output = reference + np.array([0.0, 0.0025, 0.0], dtype=np.float32)
    verdict = float_verdict(
        tmp_path, output0=output, reference0=reference, output1=reference, reference1=reference
    )
    assert verdict.passed is True
    assert verdict.max_error == pytest.approx(0.0025, rel=1e-3)
    assert verdict.allowed == pytest.approx(0.001 + 0.001 * 2.0, rel=1e-6)
    assert "output 0" in verdict.detail  # the exact second output does not take its place


def test_the_figure_is_the_element_that_used_most_of_its_allowance(tmp_path: Path) -> None:
    """allclose allows more where the reference is larger: 0.0026 at 4.0 (allowed 0.005) used
    more of its bound than 0.0005 at 0.0 (allowed 0.001), though it is further from its bound
    in absolute terms; an exact element uses none of it."""
    reference = np.array([0.0, 4.0, 0.0], dtype=np.float32)
    output = reference + np.array([0.0005, 0.0026, 0.0], dtype=np.float32)
    verdict = float_verdict(tmp_path, output0=output, reference0=reference)
    assert verdict.passed is True
    assert verdict.max_error == pytest.approx(0.0026, rel=1e-3)
    assert verdict.allowed == pytest.approx(0.001 + 0.001 * 4.0, rel=1e-6)
