"""The two questions about outputs, each output judged on its own."""

from __future__ import annotations

import numpy as np
import pytest

from hil.artifacts.parts import OutputSensitivity
from hil.verdict.checks import Question, Status
from hil.verdict.outputs import CaseRules, ProgramFacts, quantization_checks, target_checks
from hil.verdict.tolerances import (
    INT8_MIN_SQNR_DB,
    StepAllowance,
    ToleranceOverride,
)

ALLOWANCE = StepAllowance(1.0, 0.02, "one rounding flip (test)")
STEP = 0.05
RNG = np.random.default_rng(0)
EAGER = (RNG.normal(size=(1, 64)).astype(np.float32),)
QUANTIZED = (np.round(EAGER[0] / STEP) * STEP,)  # the quantized model: eager on its grid


def int8(
    quantized: tuple[np.ndarray, ...] | None = QUANTIZED,
    steps: tuple[float | None, ...] = (STEP,),
    sensitivity: tuple[OutputSensitivity | None, ...] = (),
) -> ProgramFacts:
    return ProgramFacts("int8", True, steps, quantized, sensitivity, ALLOWANCE)


def only(checks: list, question: Question = Question.TARGET):  # type: ignore[no-untyped-def,type-arg]
    found = [c for c in checks if c.question is question]
    assert len(found) == 1, found
    return found[0]


def test_a_quantized_target_is_held_to_the_quantized_model_in_its_steps() -> None:
    right = only(target_checks(EAGER, QUANTIZED, int8(), CaseRules()))
    assert right.status is Status.PASS and right.reference == "the quantized PyTorch model"
    one_flip = (QUANTIZED[0].copy(),)
    one_flip[0][0, 3] += STEP
    assert only(target_checks(EAGER, one_flip, int8(), CaseRules())).status is Status.PASS
    two_steps = (QUANTIZED[0] + np.where(np.arange(64) == 5, 2 * STEP, 0).astype(np.float32),)
    wrong = only(target_checks(EAGER, two_steps, int8(), CaseRules()))
    assert wrong.status is Status.FAIL
    assert [b.metric for b in wrong.breaches] == ["max_steps"]
    assert "backend allowance 1 step(s) (one rounding flip (test))" in wrong.basis


def test_a_zero_point_off_by_one_fails_by_the_share_of_elements_off() -> None:
    shifted = (QUANTIZED[0] + STEP,)  # every element one step up: within 1 step, but all off
    check = only(target_checks(EAGER, shifted, int8(), CaseRules()))
    assert check.status is Status.FAIL
    assert [b.metric for b in check.breaches] == ["off_fraction"]


def test_the_models_rounding_sensitivity_widens_the_limit() -> None:
    moved = (QUANTIZED[0] + np.where(np.arange(64) < 8, 4 * STEP, 0).astype(np.float32),)
    tight = only(target_checks(EAGER, moved, int8(), CaseRules()))
    assert tight.status is Status.FAIL
    sensitive = int8(sensitivity=(OutputSensitivity(max_steps=5.0, off_fraction=0.2, runs=8),))
    wide = only(target_checks(EAGER, moved, sensitive, CaseRules()))
    assert wide.status is Status.PASS, wide.describe()
    assert "rounding sensitivity 5 step(s), 20.0% of elements" in wide.basis


def test_allowance_and_sensitivity_are_not_summed() -> None:
    """A one-operator model moves one step when its ties break (sensitivity 1); the backend's
    one-step allowance is that same flip. A wrong element 2 steps off must fail (the sum,
    1 + 1.5 x 1 = 2.5 steps, let it pass: bench/mutants.py's `few` and `wild` at 1 %)."""
    one_operator = int8(sensitivity=(OutputSensitivity(max_steps=1.0, off_fraction=0.01, runs=8),))
    two_steps = (QUANTIZED[0] + np.where(np.arange(64) == 9, 2 * STEP, 0).astype(np.float32),)
    check = only(target_checks(EAGER, two_steps, one_operator, CaseRules()))
    assert check.status is Status.FAIL and [b.metric for b in check.breaches] == ["max_steps"]
    assert dict((limit.metric, limit.value) for limit in check.limits)["max_steps"] == 1.5
    assert "the larger of 1.5 x the model's rounding sensitivity 1 step(s)" in check.basis


def test_each_output_is_judged_in_its_own_steps() -> None:
    eager = (EAGER[0], EAGER[0] * 100)
    quantized = (QUANTIZED[0], np.round(eager[1] / 5.0) * 5.0)
    off = (
        quantized[0] + np.where(np.arange(64) == 0, 3 * STEP, 0).astype(np.float32),
        quantized[1],
    )
    checks = target_checks(eager, off, int8(quantized, (STEP, 5.0)), CaseRules())
    assert [c.status for c in checks] == [Status.FAIL, Status.PASS]  # not the worst scale


def test_without_the_quantized_models_outputs_nothing_is_judged() -> None:
    check = only(target_checks(EAGER, QUANTIZED, int8(quantized=None), CaseRules()))
    assert check.status is Status.NOT_JUDGED
    assert "no outputs of the quantized PyTorch model" in check.cause


def test_an_output_the_quantizer_left_in_float_counts_range_derived_steps() -> None:
    check = only(target_checks(EAGER, QUANTIZED, int8(steps=(None,)), CaseRules()))
    assert check.status is Status.PASS and "range-derived step" in check.basis


def test_a16w8_is_judged_in_its_own_16_bit_steps() -> None:
    step16 = 2.0**-12
    quantized = (np.round(EAGER[0] / step16) * step16,)
    facts = ProgramFacts("a16w8", True, (step16,), quantized, (), ALLOWANCE)
    off = (quantized[0] + np.where(np.arange(64) == 1, 3 * step16, 0).astype(np.float32),)
    check = only(target_checks(EAGER, off, facts, CaseRules()))
    assert check.status is Status.FAIL  # 3 of its own steps, far below one int8 step
    assert check.observed["max_steps"] == pytest.approx(3.0)


def test_a_float_program_is_held_tightly_to_eager() -> None:
    facts = ProgramFacts("fp32", False)
    close = (EAGER[0] + 1e-7,)
    assert only(target_checks(EAGER, close, facts, CaseRules())).status is Status.PASS
    off = (EAGER[0] * 1.01,)  # a 1 % gain error
    check = only(target_checks(EAGER, off, facts, CaseRules()))
    assert check.status is Status.FAIL and check.reference == "eager PyTorch"


def test_a_bfloat16_output_is_judged_in_bfloat16_ulps_and_no_looser() -> None:
    """numpy holds eager's bf16 outputs as float32; the reference names them, and each is held
    to 4 bf16 ulps at its peak: one ulp passes, a 3 % gain error (over 4 ulps at the peak)
    fails, and the same one-ulp output is a failure when judged as float32."""
    import torch

    facts = ProgramFacts("fp32", False)
    eager = torch.from_numpy(EAGER[0]).bfloat16()
    as_float = (eager.float().numpy(),)
    one_ulp = ((eager.float() + eager.float().abs() * 2**-7).bfloat16().float().numpy(),)
    passed = only(target_checks(as_float, one_ulp, facts, CaseRules(), frozenset({0})))
    assert passed.status is Status.PASS and passed.basis.startswith("bf16: 4 ulps")
    assert only(target_checks(as_float, one_ulp, facts, CaseRules())).status is Status.FAIL
    gain = ((eager.float() * 1.03).bfloat16().float().numpy(),)
    assert (
        only(target_checks(as_float, gain, facts, CaseRules(), frozenset({0}))).status
        is Status.FAIL
    )


def test_an_int8_recipe_that_quantized_nothing_is_judged_as_float() -> None:
    facts = ProgramFacts("int8", False, (None,), None)
    check = only(target_checks(EAGER, (EAGER[0] * 1.001,), facts, CaseRules()))
    assert check.status is Status.FAIL and check.reference == "eager PyTorch"


def test_structure_problems_fail_the_target() -> None:
    check = only(target_checks(EAGER, (EAGER[0].reshape(64, 1),), int8(), CaseRules()))
    assert check.status is Status.FAIL and "shape (64, 1)" in check.cause


def test_quantization_is_judged_against_eager_by_sqnr_and_cosine() -> None:
    good = only(quantization_checks(EAGER, int8(), CaseRules()), Question.QUANTIZATION)
    assert good.status is Status.PASS and good.reference == "eager PyTorch"
    assert f"SQNR >= {INT8_MIN_SQNR_DB:g} dB" in good.basis
    noisy = (EAGER[0] + RNG.normal(scale=0.2, size=(1, 64)).astype(np.float32),)
    poor = only(quantization_checks(EAGER, int8(noisy), CaseRules()), Question.QUANTIZATION)
    assert poor.status is Status.FAIL and "sqnr_db" in [b.metric for b in poor.breaches]
    override = ToleranceOverride(reason="untrained deep model", min_sqnr_db=5.0, min_cosine=0.9)
    allowed = only(
        quantization_checks(EAGER, int8(noisy), CaseRules(override)), Question.QUANTIZATION
    )
    assert allowed.status is Status.PASS and "case override: untrained deep model" in allowed.basis


def test_a_case_that_waives_the_quantization_question_is_not_judged_on_it() -> None:
    noisy = (EAGER[0] + RNG.normal(scale=2.0, size=(1, 64)).astype(np.float32),)
    cosine_only = ToleranceOverride(reason="unbounded outputs", waived=("sqnr_db",))
    held = only(
        quantization_checks(EAGER, int8(noisy), CaseRules(cosine_only)), Question.QUANTIZATION
    )
    assert [limit.metric for limit in held.limits] == ["cosine"]
    waived = ToleranceOverride(reason="unbounded outputs", waived=("sqnr_db", "cosine"))
    check = only(quantization_checks(EAGER, int8(noisy), CaseRules(waived)), Question.QUANTIZATION)
    assert check.status is Status.NOT_JUDGED and "unbounded outputs" in check.cause
    with pytest.raises(ValueError, match="waived"):
        ToleranceOverride(reason="typo", waived=("snr",))


def test_classifiers_judge_top1_in_both_questions() -> None:
    logits = np.array([[0.0, 1.0, 0.2, 0.1, -0.3, 0.4, -0.1, 0.05, -0.2, 0.3]], np.float32)
    eager = (logits,)
    wrong_class = (logits[:, [0, 2, 1, 3, 4, 5, 6, 7, 8, 9]],)  # the top two exchanged
    rules = CaseRules(classifier=True)
    facts = int8(quantized=wrong_class, steps=(0.01,))
    check = only(quantization_checks(eager, facts, rules), Question.QUANTIZATION)
    assert check.observed["top1_agreement"] == 0.0 and check.status is Status.FAIL
    target = only(target_checks(eager, wrong_class, facts, rules))
    assert target.observed["top1_agreement"] == 1.0  # the target agrees with its reference


def test_labelled_accuracy_of_the_quantized_model_is_a_quantization_check() -> None:
    eager = (np.eye(4, dtype=np.float32),)
    quantized = (np.eye(4, dtype=np.float32)[[0, 1, 3, 2]],)  # two of four classes swapped
    rules = CaseRules(labels=np.arange(4), max_accuracy_drop=0.25)
    checks = quantization_checks(eager, int8(quantized, (0.01,)), rules)
    accuracy = next(c for c in checks if c.subject == "accuracy")
    assert accuracy.status is Status.FAIL and accuracy.observed["accuracy_drop"] == 0.5


def test_the_old_int8_steps_override_is_refused_with_the_new_words() -> None:
    with pytest.raises(ValueError, match="quantized_steps"):
        ToleranceOverride(reason="old suite", int8_steps=16)
    with pytest.raises(ValueError, match="needs a reason"):
        ToleranceOverride(reason=" ")


def test_a_near_tie_decided_by_ordinary_quantization_noise_is_no_top1_failure() -> None:
    rng = np.random.default_rng(1)
    eager = rng.normal(size=(450, 10)).astype(np.float32)
    quantized = (eager + rng.normal(scale=0.02, size=eager.shape)).astype(np.float32)
    eager[7, :2] = (1.0, 1.001)  # one row's top two differ by far less than the noise
    quantized[7, :2] = (1.01, 1.0)
    rules, facts = CaseRules(classifier=True), int8(quantized=(quantized,), steps=(0.01,))
    check = only(quantization_checks((eager,), facts, rules), Question.QUANTIZATION)
    assert check.observed["top1_agreement"] == 1.0


def test_an_output_within_one_step_of_zero_is_judged_by_that_step_not_by_sqnr() -> None:
    """acos(1) = 0 (ExecuTorch's test_acos 'ones'): eager's output is rounding noise below one
    output step. SQNR of noise against zero says nothing; the quantized model must be within
    the step, and one that is a step further off still fails."""
    eager = (np.tile(np.float32([1e-7, -2e-7]), (1, 4)),)
    right = only(
        quantization_checks(eager, int8((np.zeros((1, 8), np.float32),)), CaseRules()),
        Question.QUANTIZATION,
    )
    assert right.status is Status.PASS and "within one output step" in right.basis
    off = only(
        quantization_checks(eager, int8((np.full((1, 8), 2 * STEP, np.float32),)), CaseRules()),
        Question.QUANTIZATION,
    )
    assert off.status is Status.FAIL and [b.metric for b in off.breaches] == ["max_abs"]


def test_a_float_output_within_the_absolute_floor_is_not_judged_by_sqnr() -> None:
    """Group norm of one-element groups: eager gives rounding noise (8e-6), the target exact
    zeros. Both lie within fp32's absolute floor (1e-5): judged by max_abs alone."""
    eager = (np.full((4, 6), 8e-6, dtype=np.float32),)
    target = (np.zeros((4, 6), dtype=np.float32),)
    check = only(target_checks(eager, target, ProgramFacts("fp32", False), CaseRules()))
    assert check.status is Status.PASS and "SQNR not a measure here" in check.basis
    far = (np.full((4, 6), 5e-5, dtype=np.float32),)
    assert (
        only(target_checks(eager, far, ProgramFacts("fp32", False), CaseRules())).status
        is Status.FAIL
    )


def test_eager_infinities_a_quantized_output_cannot_hold_are_left_out_and_said() -> None:
    """atanh(1) = inf (ExecuTorch's test_atanh 'ramp', 'on_bounds'): an int8 output gives its
    largest value there. Those elements are left out of the quantization question, saying so;
    the rest is judged as ever, and a quantized model wrong elsewhere still fails."""
    eager = (EAGER[0].copy(),)
    eager[0][0, :2] = (np.inf, -np.inf)
    saturated = QUANTIZED[0].copy()
    saturated[0, :2] = (127 * STEP, -128 * STEP)
    good = only(quantization_checks(eager, int8((saturated,)), CaseRules()), Question.QUANTIZATION)
    assert good.status is Status.PASS
    assert "eager's 2 non-finite element(s) (as atanh(1) = inf) left out" in good.basis
    noisy = saturated + RNG.normal(scale=0.2, size=(1, 64)).astype(np.float32)
    poor = only(quantization_checks(eager, int8((noisy,)), CaseRules()), Question.QUANTIZATION)
    assert poor.status is Status.FAIL and "sqnr_db" in [b.metric for b in poor.breaches]
    nothing = (np.full((1, 4), np.inf, np.float32),)
    unjudged = only(
        quantization_checks(nothing, int8((np.ones((1, 4), np.float32),)), CaseRules()),
        Question.QUANTIZATION,
    )
    assert unjudged.status is Status.NOT_JUDGED and "non-finite everywhere" in unjudged.cause


def test_an_integer_output_in_another_type_is_a_mismatch_that_says_whether_the_values_agree() -> (
    None
):
    """The Arm backends narrow int64 to int32 (ExecuTorch's test_clamp int64 rows): the program
    hands its caller another type, whatever the values."""
    eager = (np.arange(6, dtype=np.int64),)
    same = target_checks(eager, (np.arange(6, dtype=np.int32),), int8(), CaseRules())
    assert same[0].status is Status.FAIL
    assert "output 0 has dtype int32, eager PyTorch int64 (the values agree" in same[0].cause
    other = target_checks(eager, (np.zeros(6, dtype=np.int32),), int8(), CaseRules())
    assert "(the values differ too)" in other[0].cause


def test_the_quantization_of_an_all_zero_output_is_not_judged() -> None:
    """acos of ones: eager is all zero, so SQNR and cosine are 0/0 and the step calibrated on
    zeros is the quantizer's floor; the question cannot be asked (the old verdict, POOR
    QUANTIZATION, rested on an SQNR of minus infinity). A constant non-zero output (relu of
    ones) is still judged: SQNR is defined on it and its step is a real one."""
    eager = (np.zeros((1, 8), dtype=np.float32),)
    quantized = int8((np.full((1, 8), 256 * STEP, np.float32),))
    check = only(quantization_checks(eager, quantized, CaseRules()), Question.QUANTIZATION)
    assert check.status is Status.NOT_JUDGED and "all zero" in check.cause
    ones = (np.ones((1, 8), dtype=np.float32),)
    right = only(quantization_checks(ones, int8((ones[0],)), CaseRules()), Question.QUANTIZATION)
    assert right.status is Status.PASS
    far = int8((np.full((1, 8), 0.5, np.float32),))
    assert only(quantization_checks(ones, far, CaseRules()), Question.QUANTIZATION).failed


def test_no_verdict_rests_on_a_metric_the_signal_leaves_undefined() -> None:
    """An all-zero reference: SQNR and cosine are 0/0, so only max_abs judges; a target that is
    far off still fails on it, and the record holds no infinite SQNR."""
    eager = (np.zeros((2, 8), dtype=np.float32),)
    wrong = (np.full((2, 8), 15.0, dtype=np.float32),)
    check = only(target_checks(eager, wrong, ProgramFacts("fp32", False), CaseRules()))
    assert check.status is Status.FAIL and [b.metric for b in check.breaches] == ["max_abs"]
    assert "sqnr_db" not in check.observed and "cosine" not in check.observed
    right = only(target_checks(eager, eager, ProgramFacts("fp32", False), CaseRules()))
    assert right.status is Status.PASS
    asks_sqnr = CaseRules(override=ToleranceOverride(reason="test", min_sqnr_db=20.0))
    sqnr_asked = only(target_checks(eager, eager, ProgramFacts("fp32", False), asks_sqnr))
    assert sqnr_asked.status is Status.PASS  # by max_abs alone, and the basis says why
    assert "sqnr_db undefined (0/0) where the reference is all zero" in sqnr_asked.basis


def test_when_quantization_changes_the_outputs_shape_the_target_is_judged_against_its_model() -> (
    None
):
    """nonzero of int8 values: 4 of eager's 1,536 nonzeros round to zero, so the quantized model
    returns 1,532 index rows, and a right target returns the same. The target is right against
    the model it was compiled from; the change is the quantization's, and that question fails."""
    eager = (np.arange(1536 * 4, dtype=np.int64).reshape(1536, 4),)
    quantized = (eager[0][:1532],)
    facts = ProgramFacts("int8", True, (None,), quantized, (), ALLOWANCE)
    right = only(target_checks(eager, quantized, facts, CaseRules()))
    assert right.status is Status.PASS and right.reference == "the quantized PyTorch model"
    wrong = only(target_checks(eager, (quantized[0] + 1,), facts, CaseRules()))
    assert wrong.status is Status.FAIL
    shaped_otherwise = only(target_checks(eager, (eager[0][:1000],), facts, CaseRules()))
    assert shaped_otherwise.status is Status.FAIL and "(1000, 4)" in shaped_otherwise.cause
    changed = only(quantization_checks(eager, facts, CaseRules()), Question.QUANTIZATION)
    assert changed.status is Status.FAIL
    assert changed.cause == "output 0 has shape (1532, 4), eager PyTorch (1536, 4)"


def test_the_same_values_in_another_shape_are_the_targets_mismatch_not_the_quantizations() -> None:
    """x.var() of everything: eager gives a 0-d result, the Arm quantizer's decomposition (and
    so the program) a (1,) one. Nothing was rounded away: the program does not keep the model's
    interface, and the target question says so against eager's shape."""
    eager = (np.array(0.5, dtype=np.float32),)
    quantized = (np.array([0.5], dtype=np.float32),)
    facts = int8(quantized=quantized)
    target = only(target_checks(eager, quantized, facts, CaseRules()))
    assert target.status is Status.FAIL and "shape (1,), eager PyTorch ()" in target.cause
    kept = only(quantization_checks(eager, facts, CaseRules()), Question.QUANTIZATION)
    assert kept.status is Status.NOT_JUDGED
