"""Fingerprints change with code, configuration and weights, and only with them."""

from __future__ import annotations

import sys

import numpy as np
import pytest
import torch
from torch import nn

from hil.artifacts.fingerprint import model_fingerprint
from hil.artifacts.keys import digest_of, tool_versions


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


# -- what the key used to skip: each test changes one thing and checks the key --------------


class Scaled(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self._scale = 2.0  # an underscore attribute is configuration too

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self._scale


def test_underscore_attributes_are_configuration() -> None:
    a, b = Scaled(), Scaled()
    b._scale = 3.0
    assert model_fingerprint(a) != model_fingerprint(b)


def test_plain_tensor_and_numpy_attributes_count_by_their_bytes() -> None:
    import numpy as np

    a, b = Lambda(None), Lambda(None)
    a.table, b.table = torch.zeros(4), torch.zeros(4)  # neither a parameter nor a buffer
    assert model_fingerprint(a) == model_fingerprint(b)
    b.table[2] = 1.0
    assert model_fingerprint(a) != model_fingerprint(b)
    a.lut, b.lut = np.arange(4), np.arange(4)
    b.table = a.table
    assert model_fingerprint(a) == model_fingerprint(b)
    b.lut = np.arange(1, 5)
    assert model_fingerprint(a) != model_fingerprint(b)


class Config:  # a plain config object, as transformers' OPTConfig is
    def __init__(self, heads: int) -> None:
        self.heads = heads
        self.nested = {"act": "relu", "dims": (4, heads)}


def test_config_objects_and_dataclasses_are_walked() -> None:
    import dataclasses

    @dataclasses.dataclass
    class Options:
        eps: float

    a, b = Lambda(None), Lambda(None)
    a.config, b.config = Config(4), Config(4)
    assert model_fingerprint(a) == model_fingerprint(b)
    b.config = Config(8)
    assert model_fingerprint(a) != model_fingerprint(b)
    a.options, b.options = Options(1e-5), Options(1e-6)
    b.config = a.config
    assert model_fingerprint(a) != model_fingerprint(b)


def _helper(x: torch.Tensor) -> torch.Tensor:
    return x + 1


def _other_helper(x: torch.Tensor) -> torch.Tensor:
    return x - 1


class UsesHelper(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _helper(x)


def test_module_level_helpers_forward_calls_are_part_of_the_code() -> None:
    global _helper
    before = model_fingerprint(UsesHelper())
    original = _helper
    _helper = _other_helper  # the same name, another body: a user edited the helper
    try:
        assert model_fingerprint(UsesHelper()) != before
    finally:
        _helper = original
    assert model_fingerprint(UsesHelper()) == before


def test_forward_hooks_are_part_of_the_model() -> None:
    a, b = conv(), conv()
    b.register_forward_hook(lambda module, args, out: out * 2)
    assert model_fingerprint(a) != model_fingerprint(b)


def test_library_code_counts_by_version_and_project_code_by_content() -> None:
    from hil.artifacts.libraries import library_of

    assert library_of("torch.nn.modules.conv") == f"torch=={torch.__version__}"
    assert library_of("hil.case") is None  # this checkout (an editable install): its content
    assert library_of(__name__) is None


def test_libraries_are_named_as_a_scan_of_every_distribution_names_them() -> None:
    import importlib.metadata

    import executorch
    import yaml

    from hil.artifacts.libraries import library_of

    scan = importlib.metadata.packages_distributions()
    for module in (torch, np, yaml, pytest):
        dist = scan[module.__name__][0]
        assert library_of(module.__name__) == f"{dist}=={importlib.metadata.version(dist)}"
    # a namespace package has no __file__: still the library, not the standard library
    assert getattr(executorch, "__file__", None) is None
    assert (
        library_of("executorch.exir") == f"executorch=={importlib.metadata.version('executorch')}"
    )
    assert library_of("json") == f"python=={sys.version.split()[0]}"


def test_docstrings_comments_and_layout_are_not_code() -> None:
    from hil.artifacts.source_digest import source_digest

    plain = "def f(x):\n    return x + 1\n"
    documented = (
        'def f(x):\n    """Adds one."""\n    # a comment\n    return (x +\n            1)\n'
    )
    assert source_digest(plain) == source_digest(documented)
    assert source_digest(plain) != source_digest("def f(x):\n    return x + 2\n")


def test_a_recipe_module_docstring_or_comment_edit_keeps_its_key(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import importlib.util
    import os
    import sys

    from hil.artifacts.source_digest import module_source_digest

    path = tmp_path / "hil_probe_recipe.py"

    def load(text: str, stamp: int) -> str:
        path.write_text(text)
        os.utime(path, ns=(stamp, stamp))  # a later edit, as an editor would save it
        spec = importlib.util.spec_from_file_location("hil_probe_recipe", path)
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        sys.modules["hil_probe_recipe"] = module
        spec.loader.exec_module(module)
        return module_source_digest("hil_probe_recipe")

    try:
        first = load('"""A recipe."""\nSTEP = 1\n', 1_000_000_000)
        edited = load(
            '"""A recipe, documented better."""\n# why STEP is 1\nSTEP = 1\n', 2_000_000_000
        )
        changed = load('"""A recipe."""\nSTEP = 2\n', 3_000_000_000)
    finally:
        sys.modules.pop("hil_probe_recipe", None)
    assert first == edited
    assert first != changed


def test_a_library_lambda_counts_by_what_it_closes_over() -> None:
    """ExecuTorch's upsample tests hold `lambda x: interpolate(x, size=size, ...)`, one per row:
    the lambda's code is the installed library's (named by version), its closure the row's."""
    from executorch.backends.arm.test.ops.test_upsample_nearest2d import Interpolate

    same = model_fingerprint(Interpolate((1, 1), None))
    assert same == model_fingerprint(Interpolate((1, 1), None))
    assert same != model_fingerprint(Interpolate((2, 2), None))
    assert same != model_fingerprint(Interpolate(None, 2.0))


def test_library_classes_of_one_name_in_two_modules_are_told_apart() -> None:
    """test_upsample_nearest2d and test_upsample_bilinear2d both define Interpolate."""
    from executorch.backends.arm.test.ops import test_upsample_bilinear2d, test_upsample_nearest2d

    nearest = model_fingerprint(test_upsample_nearest2d.Interpolate((4, 4), None))
    bilinear = model_fingerprint(test_upsample_bilinear2d.Interpolate((4, 4), None))
    assert nearest != bilinear


def test_factory_made_library_classes_count_by_the_function_they_close_over() -> None:
    """ExecuTorch's nn_functional and torch_functions model tests make one `ModuleWrapper` per
    row with `module_factory(fn)`: an installed library's class, named alike for every row,
    whose forward calls the `fn` of its closure. Named by version alone, the 11 rows shared one
    key and were served each other's .pte."""
    from executorch.backends.arm.test.models import test_nn_functional, test_torch_functions

    functional = {model_fingerprint(m) for m, _ in test_nn_functional.module_tests.values()}
    assert len(functional) == len(test_nn_functional.module_tests) == 11
    torch_functions = {model_fingerprint(row[1]) for row in test_torch_functions.module_tests}
    assert len(torch_functions) == len(test_torch_functions.module_tests)
    again = {model_fingerprint(m) for m, _ in test_nn_functional.module_tests.values()}
    assert again == functional


def wrapper_class(function, module: str = "torch.nn.modules.linear"):  # type: ignore[no-untyped-def]
    """A class made by type() under a library's module and a name another class holds there."""
    return type(
        "Linear", (nn.Module,), {"__module__": module, "forward": lambda self, x: function(x)}
    )


def test_a_class_made_by_type_under_a_library_name_is_walked() -> None:
    assert model_fingerprint(wrapper_class(torch.relu)()) == model_fingerprint(
        wrapper_class(torch.relu)()
    )
    assert model_fingerprint(wrapper_class(torch.relu)()) != model_fingerprint(
        wrapper_class(torch.tanh)()
    )


def test_what_a_run_sets_on_a_library_class_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    before = model_fingerprint(nn.ReLU())
    monkeypatch.setattr(nn.ReLU, "hil_probe_flag", 1, raising=False)
    flagged = model_fingerprint(nn.ReLU())
    assert flagged != before
    monkeypatch.setattr(nn.ReLU, "forward", lambda self, x: x * 2)
    assert model_fingerprint(nn.ReLU()) not in (before, flagged)
    monkeypatch.undo()
    assert model_fingerprint(nn.ReLU()) == before


_settings = type(sys)("hil_probe_settings")
_settings.SCALE = 2.0  # type: ignore[attr-defined]


class ReadsAModuleAttribute(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * _settings.SCALE  # type: ignore[attr-defined, no-any-return]


def test_a_module_attribute_a_forward_reads_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    before = model_fingerprint(ReadsAModuleAttribute())
    monkeypatch.setattr(_settings, "SCALE", 3.0)
    assert model_fingerprint(ReadsAModuleAttribute()) != before


def test_a_partial_of_a_local_function_counts_by_its_code_and_arguments() -> None:
    import functools

    def scaled(factor: float, x: torch.Tensor) -> torch.Tensor:
        return x * factor

    def shifted(factor: float, x: torch.Tensor) -> torch.Tensor:
        return x + factor

    keys = {
        model_fingerprint(Lambda(functools.partial(f, k)))
        for f in (scaled, shifted)
        for k in (2, 3)
    }
    assert len(keys) == 4
