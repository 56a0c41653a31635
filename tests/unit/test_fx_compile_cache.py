"""fx's generated code compiled once per source: the same code, under each module's own name."""

from __future__ import annotations

import linecache
import types

import pytest
import torch
from torch.fx import graph_module

from hil.speedups import fx_compile_cache


@pytest.fixture(scope="module", autouse=True)
def installed() -> None:
    assert fx_compile_cache.install(), "torch.fx compiles generated code otherwise"


class Block(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x).reshape(2, -1)


def _fields(code: types.CodeType) -> tuple[object, ...]:
    """Everything a code object carries, its nested functions' too."""
    consts = tuple(_fields(c) if isinstance(c, types.CodeType) else c for c in code.co_consts)
    return (
        code.co_filename,
        code.co_name,
        code.co_qualname,
        code.co_code,
        code.co_names,
        code.co_varnames,
        code.co_firstlineno,
        code.co_linetable,
        code.co_flags,
        consts,
    )


def test_a_source_compiled_again_is_python_compiling_it_under_the_new_name() -> None:
    source = "def forward(self, x):\n    def inner(y):\n        return y + 1\n    return inner(x)\n"
    first = fx_compile_cache._code_for(source, "<eval_with_key>.first")
    again = fx_compile_cache._code_for(source, "<eval_with_key>.again")
    fresh = compile(source, "<eval_with_key>.again", "exec", dont_inherit=True)
    assert _fields(again) == _fields(fresh)
    assert first.co_filename == "<eval_with_key>.first"


def test_modules_of_one_graph_each_run_and_read_as_their_own() -> None:
    traced = [torch.fx.symbolic_trace(Block()) for _ in range(2)]
    names = [gm.forward.__code__.co_filename for gm in traced]
    assert names[0] != names[1]  # each module its own linecache entry, as torch makes them
    for gm in traced:
        listed = "".join(linecache.getlines(gm.forward.__code__.co_filename))
        assert listed.strip() == gm.code.strip()
        assert torch.equal(gm(-torch.ones(3, 4)), torch.zeros(2, 6))


def test_the_kept_sources_are_bounded() -> None:
    for i in range(fx_compile_cache.KEPT + 10):
        fx_compile_cache._code_for(f"value = {i}\n", f"<bounded>.{i}")
    assert len(fx_compile_cache._compiled) == fx_compile_cache.KEPT


def test_torch_fx_uses_it() -> None:
    assert graph_module._exec_with_source is fx_compile_cache._exec_compiled_once
