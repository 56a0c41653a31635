"""The load speed-up answers the deserializer's type-hint question from a table, and a loaded
program is the one torch loads without it."""

from __future__ import annotations

import typing
from pathlib import Path

import torch
from torch._export.serde import schema, serialize

from hil.speedups import load_speedup


def test_schema_hints_are_typings_own_and_worked_out_once() -> None:
    hinted = load_speedup.TypingWithSchemaHints(vars(schema))
    first = hinted.get_type_hints(schema.Node, globalns=vars(schema))
    assert first == typing.get_type_hints(schema.Node, globalns=vars(schema))
    assert hinted.get_type_hints(schema.Node, globalns=vars(schema)) is first
    # another question is typing's: asked afresh every time
    other = hinted.get_type_hints(schema.Node, globalns=dict(vars(schema)))
    assert other == first and other is not first
    assert hinted.get_origin is typing.get_origin


def _program_text(path: Path) -> tuple[str, dict[str, torch.Tensor]]:
    program = torch.export.load(path)
    return program.graph_module.print_readable(print_output=False), program.state_dict


def test_a_program_loads_the_same_with_it(tmp_path: Path) -> None:
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU(), torch.nn.Flatten())
    path = tmp_path / "program.pt2"
    torch.export.save(torch.export.export(model, (torch.randn(1, 3, 8, 8),)), path)
    saved = serialize.typing
    serialize.typing = typing  # torch's own, whatever an earlier test installed
    try:
        plain_code, plain_state = _program_text(path)
        assert load_speedup.applies()
        load_speedup.PATCH.apply()
        assert isinstance(serialize.typing, load_speedup.TypingWithSchemaHints)
        fast_code, fast_state = _program_text(path)
    finally:
        serialize.typing = saved
    assert fast_code == plain_code
    assert plain_state.keys() == fast_state.keys()
    assert all(torch.equal(plain_state[k], fast_state[k]) for k in plain_state)
