"""The served-program guard's comparison: float noise agrees, another model does not."""

from __future__ import annotations

import numpy as np
import torch

from hil.artifacts.probe import (
    Probe,
    difference,
    difference_key,
    read_probe,
    served_collision,
    write_probe,
)


def outputs(seed: int = 0) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((4, 8)).astype(np.float32), np.arange(6, dtype=np.int64))


def test_float_noise_agrees_and_another_signal_does_not() -> None:
    was = outputs()
    noisy = (was[0] * (1 + np.float32(1e-6)), was[1].copy())
    assert difference(was, noisy) is None
    other = (np.tanh(was[0]), was[1])
    assert "max |difference|" in (difference(was, other) or "")


def test_shapes_dtypes_counts_and_integers_must_match_exactly() -> None:
    was = outputs()
    assert "outputs" in (difference(was, was[:1]) or "")
    assert "float64" in (difference(was, (was[0].astype(np.float64), was[1])) or "")
    assert "1 values differ" in (difference(was, (was[0], was[1] + (np.arange(6) == 3))) or "")
    with_nan = (np.array([np.nan, 1.0], dtype=np.float32),)
    assert difference(with_nan, with_nan) is None


def test_the_collision_key_holds_under_float_noise_and_parts_models() -> None:
    was = outputs()
    noisy = (was[0] + np.float32(1e-7), was[1])
    assert difference_key("k", was) == difference_key("k", noisy)
    assert difference_key("k", was) != difference_key("k", outputs(seed=1))
    assert difference_key("k", was) != difference_key("other", was)


def test_a_probe_round_trips_every_dtype(tmp_path) -> None:  # type: ignore[no-untyped-def]
    inputs = (torch.randn(2, 3).bfloat16(), torch.arange(4))
    write_probe(tmp_path, "row", inputs, outputs())
    probe = read_probe(tmp_path)
    assert probe is not None and probe.case == "row"
    assert all(torch.equal(a, b) for a, b in zip(probe.inputs, inputs, strict=True))
    assert difference(probe.outputs, outputs()) is None
    scalar = (np.array(2.5, dtype=np.float32),)  # torch.norm's 0-d output stays 0-d
    write_probe(tmp_path, "norm", inputs, scalar)
    kept = read_probe(tmp_path)
    assert (
        kept is not None
        and kept.outputs[0].shape == ()
        and difference(kept.outputs, scalar) is None
    )
    (tmp_path / "probe.pt").write_bytes(b"garbled")
    assert read_probe(tmp_path) is None  # an unproven entry, not a broken run


def test_the_guard_names_the_maker_and_stands_down_for_a_random_model() -> None:
    inputs = (torch.randn(4, 8),)
    probe = Probe("relu_row", inputs, (torch.relu(inputs[0]).numpy(),))

    def tanh(given: tuple[torch.Tensor, ...]) -> tuple[np.ndarray, ...]:
        return (torch.tanh(given[0]).numpy(),)

    def relu(given: tuple[torch.Tensor, ...]) -> tuple[np.ndarray, ...]:
        return (torch.relu(given[0]).numpy(),)

    def random(given: tuple[torch.Tensor, ...]) -> tuple[np.ndarray, ...]:
        return (torch.rand_like(given[0]).numpy(),)

    def raises(given: tuple[torch.Tensor, ...]) -> tuple[np.ndarray, ...]:
        raise RuntimeError("data-dependent")

    assert "made by case 'relu_row'" in (served_collision(probe, tanh) or "")
    assert served_collision(probe, relu) is None
    assert served_collision(probe, random) is None  # it disagrees with itself: no verdict
    assert "raises RuntimeError" in (served_collision(probe, raises) or "")
