"""Agreement with the quantized model, counter budgets and device memory limits."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hil.budgets import judge_counters
from hil.compare import quantized_agreement
from hil.devices import parse_device


def test_agreement_statements() -> None:
    ref = [np.array([0.0, 0.5, 1.0], dtype=np.float32)]
    assert quantized_agreement(ref, ref, [0.5]).statement == "bit-exact"  # type: ignore[union-attr]
    one = [ref[0] + np.array([0.0, 0.5, 0.0], dtype=np.float32)]
    assert quantized_agreement(ref, one, [0.5]).statement == "within 1 step"  # type: ignore[union-attr]
    three = [ref[0] + np.array([1.5, 0.0, 0.0], dtype=np.float32)]
    agreement = quantized_agreement(ref, three, [0.5])
    assert agreement is not None and agreement.steps == pytest.approx(3.0)
    assert agreement.statement == "3.0 steps"
    unknown = quantized_agreement(ref, three, [None])
    assert unknown is not None and unknown.steps is None and "unknown" in unknown.statement
    assert quantized_agreement(ref, [np.zeros(2)], [0.5]) is None  # shapes differ


def npu_device() -> object:
    return parse_device(
        {
            "name": "u55-ref",
            "kind": "ethos_u_ref",
            "npu": "ethos-u55-128",
            "recipes": [{"name": "ethos-u", "options": {"accelerator_config": "ethos-u55-128"}}],
            "memory": {"sram_max_bytes": 1000, "flash_max_bytes": 5000},
        },
        Path("u55-ref.yaml"),
    )


def test_counter_budgets_take_the_first_matching_key() -> None:
    spec = npu_device()
    counters = {"npu_cycles": 30_000.0, "sram_bytes": 900.0, "flash_bytes": 4000.0}
    budgets = {"npu_cycles": {"u55-ref": 20_000.0, "*": 50_000.0}}
    breaches = judge_counters(counters, budgets, spec, "ethos-u")  # type: ignore[arg-type]
    assert [b.what for b in breaches] == ["npu_cycles"]
    assert "u55-ref" in breaches[0].source and breaches[0].unit == "cycles"
    assert judge_counters(counters, {"npu_cycles": {"u85-ref": 1.0}}, spec, "ethos-u") == []  # type: ignore[arg-type]


def test_a_counter_the_target_does_not_report_is_not_judged() -> None:
    assert judge_counters({}, {"npu_cycles": {"*": 1.0}}, npu_device(), "ethos-u") == []  # type: ignore[arg-type]


def test_device_sram_and_flash_limits() -> None:
    counters = {"sram_bytes": 1500.0, "flash_bytes": 6000.0}
    breaches = judge_counters(counters, {}, npu_device(), "ethos-u")  # type: ignore[arg-type]
    assert sorted(b.what for b in breaches) == ["flash_bytes", "sram_bytes"]
    assert all("u55-ref.yaml" in b.source for b in breaches)


def test_a16w8_is_judged_in_int8_steps_of_the_range() -> None:
    from hil.compare import tolerance_for

    reference = [np.linspace(-1.0, 1.0, 11, dtype=np.float32)]
    a16 = tolerance_for("a16w8", reference, [2.0**-12])  # the 16-bit output step is ignored
    assert a16.max_abs == pytest.approx(8 * 2.0 / 255)
    assert "a16w8" in a16.basis and "range-derived" in a16.basis
    int8 = tolerance_for("int8", reference, [2.0**-7])
    assert int8.max_abs == pytest.approx(8 * 2.0**-7)


def test_ethos_u_numerics_follow_the_a16w8_option() -> None:
    from hil.recipes import make_recipe

    assert make_recipe("ethos-u", {"a16w8": True}).numerics == "a16w8"
    assert make_recipe("ethos-u").numerics == "int8"
