"""Fingerprints change with code, configuration and weights, and only with them."""

from __future__ import annotations

import torch
from torch import nn

from hil.fingerprint import digest_of, model_fingerprint, tool_versions


def conv(stride: int = 1, seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Conv2d(3, 4, 3, stride=stride)


class Lambda(nn.Module):
    def __init__(self, fn):  # type: ignore[no-untyped-def]
        super().__init__()
        self.fn = fn

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fn(x)


def test_same_model_same_fingerprint() -> None:
    assert model_fingerprint(conv()) == model_fingerprint(conv())


def test_weights_change_the_fingerprint() -> None:
    assert model_fingerprint(conv(seed=0)) != model_fingerprint(conv(seed=1))


def test_configuration_without_weights_changes_the_fingerprint() -> None:
    # stride lives in no tensor: only the configuration tells these two apart
    assert model_fingerprint(conv(stride=1)) != model_fingerprint(conv(stride=2))


def test_held_functions_are_part_of_the_code() -> None:
    a = Lambda(lambda x: torch.clamp(x, -1, 1))
    b = Lambda(lambda x: torch.clamp(x, -2, 2))
    c = Lambda(lambda x: torch.clamp(x, -1, 1))
    assert model_fingerprint(a) != model_fingerprint(b)
    assert model_fingerprint(a) == model_fingerprint(c)


def test_buffers_count() -> None:
    bn = nn.BatchNorm2d(4).eval()
    before = model_fingerprint(bn)
    bn.running_mean += 1
    assert model_fingerprint(bn) != before


def test_digest_is_canonical_and_versions_are_recorded() -> None:
    assert digest_of({"a": 1, "b": [1, 2]}) == digest_of({"b": [1, 2], "a": 1})
    assert {"torch", "executorch", "ethos-u-vela"} <= set(tool_versions())


def test_builtins_held_by_a_module_are_told_apart() -> None:
    assert model_fingerprint(Lambda(torch.add)) != model_fingerprint(Lambda(torch.mul))
    assert model_fingerprint(Lambda(torch.add)) == model_fingerprint(Lambda(torch.add))
    ops = torch.ops.aten
    assert model_fingerprint(Lambda(ops.add.Tensor)) != model_fingerprint(Lambda(ops.mul.Tensor))


def test_dicts_partials_and_nested_containers_are_configuration() -> None:
    import functools

    a, b = Lambda(None), Lambda(None)
    a.opts, b.opts = {"dim": 1, "scales": [1, 2]}, {"dim": 1, "scales": [1, 3]}
    assert model_fingerprint(a) != model_fingerprint(b)
    p1 = Lambda(functools.partial(torch.clamp, min=-1.0))
    p2 = Lambda(functools.partial(torch.clamp, min=-2.0))
    assert model_fingerprint(p1) != model_fingerprint(p2)


SCALE = 2.0


def test_module_constants_a_function_reads_are_part_of_its_code() -> None:
    global SCALE
    before = model_fingerprint(Lambda(lambda x: x * SCALE))
    SCALE = 3.0
    try:
        assert model_fingerprint(Lambda(lambda x: x * SCALE)) != before
    finally:
        SCALE = 2.0
