"""A reference target deploys the host program from its pickled module, which runs exactly what
the .pt2 runs; a missing, damaged or mismatched pickle falls back to the .pt2.

Real exports (u85-ref: Vela and the TOSA reference model; cortex-m55-ref: ExecuTorch's cortex_m
reference operators) of tiny models, one with a CPU operator after its delegate.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

import hil
from hil.devices import DeviceRegistry
from hil.recipes import host_module
from hil.recipes.host_module import HOST_MODULE
from hil.recipes.host_program import HOST_PROGRAM, HOST_PROGRAM_META, load_host_program
from hil.session import Session
from tests.integration.test_npu_ref import lrn, tiny

FRESH_SEED = 11  # inputs no export saw: only running the program answers them


def _run(
    devices: DeviceRegistry, cache: Path, case: hil.Case, target: str
) -> list[np.ndarray[Any, Any]]:
    """The target's outputs on fresh inputs, from a new session (nothing loaded before)."""
    with Session(devices=devices, cache_dir=cache) as session:
        artifact = session.check(case, target).artifact
        device = session.target(target)
        shape = tuple(case.inputs()[0].shape)
        fresh = (torch.randn(shape, generator=torch.Generator().manual_seed(FRESH_SEED)),)
        run = device.run(device.deploy(artifact), fresh, devices.get(target).latency.policy)
    return [np.asarray(o) for o in run.outputs]


def _is_pickled(module: torch.nn.Module) -> bool:
    """torch.export's unlifted module is of its stateful subclass; the pickled one is not."""
    return not any(c.__name__ == "_StatefulGraphModule" for c in type(module).__mro__)


@pytest.mark.parametrize("make_case", [tiny, lrn], ids=["all-npu", "cpu-fallback"])
def test_the_pickled_module_runs_bit_for_bit_what_the_pt2_runs(
    repo_devices: DeviceRegistry, tmp_path: Path, make_case: Callable[[], hil.Case]
) -> None:
    case, target = make_case(), "u85-ref"
    cache = tmp_path / "cache"
    fast = _run(repo_devices, cache, case, target)
    with Session(devices=repo_devices, cache_dir=cache) as session:
        folder = session.check(case, target).artifact.folder
    assert json.loads((folder / HOST_PROGRAM_META).read_text())["module_sha256"]
    assert _is_pickled(load_host_program(folder))

    (folder / HOST_MODULE).unlink()
    assert not _is_pickled(load_host_program(folder))
    from_pt2 = _run(repo_devices, cache, case, target)
    assert len(fast) == len(from_pt2)
    assert all(np.array_equal(a, b) for a, b in zip(fast, from_pt2, strict=True))


def test_a_program_tracing_cannot_remake_loads_from_the_pt2(
    repo_devices: DeviceRegistry, tmp_path: Path
) -> None:
    """cortex-m's scratch buffer (aten.zeros with no tensor input) would become a constant
    when the pickled code is traced again: the calls differ, so no pickle is written."""
    with Session(devices=repo_devices, cache_dir=tmp_path / "cache") as session:
        result = session.check(tiny(fully_delegated=True), "cortex-m55-ref")
    result.raise_for_failures()
    folder = result.artifact.folder
    assert json.loads((folder / HOST_PROGRAM_META).read_text())["module_sha256"] is None
    assert not (folder / HOST_MODULE).exists()
    assert not _is_pickled(load_host_program(folder))


def test_a_damaged_pickle_is_never_run(repo_devices: DeviceRegistry, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    expected = _run(repo_devices, cache, tiny(), "u85-ref")
    with Session(devices=repo_devices, cache_dir=cache) as session:
        folder = session.check(tiny(), "u85-ref").artifact.folder
    blob = bytearray((folder / HOST_MODULE).read_bytes())
    blob[len(blob) // 2] ^= 0x01  # one bit: still a pickle, perhaps of another constant
    (folder / HOST_MODULE).write_bytes(bytes(blob))
    assert not _is_pickled(load_host_program(folder))
    again = _run(repo_devices, cache, tiny(), "u85-ref")
    assert all(np.array_equal(a, b) for a, b in zip(expected, again, strict=True))


def _saved_program(session: Session) -> tuple[Path, torch.export.ExportedProgram]:
    folder = session.check(tiny(), "u85-ref").artifact.folder
    load_host_program(folder)  # registers the program's operator libraries
    return folder, torch.export.load(folder / HOST_PROGRAM)


def test_a_module_that_does_not_load_back_the_same_is_not_written(
    session: Session, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, program = _saved_program(session)
    assert host_module.write_host_module(program, tmp_path) is not None
    (tmp_path / HOST_MODULE).unlink()
    answers = iter([["what tracing again made"], ["what the program calls"]])
    monkeypatch.setattr(host_module, "calls", lambda module: next(answers))
    assert host_module.write_host_module(program, tmp_path) is None
    assert not (tmp_path / HOST_MODULE).exists()


def test_calls_match_across_the_pickle_and_tell_a_changed_constant_apart(
    session: Session,
) -> None:
    folder, program = _saved_program(session)
    loaded, unlifted = load_host_program(folder), program.module()
    assert _is_pickled(loaded)
    assert host_module.calls(loaded) == host_module.calls(unlifted)
    changed = program.module()  # a graph of its own
    quantize = next(n for n in changed.graph.nodes if "quantize_per_tensor" in str(n.target))
    quantize.args = (quantize.args[0], float(quantize.args[1]) * 2, *quantize.args[2:])
    assert host_module.calls(changed) != host_module.calls(unlifted)


class Branchy(torch.nn.Module):
    """torch.cond: its branches live in submodules of their own, with their own operators."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cond(x.sum() > 0, lambda t: torch.sin(t) * 2, lambda t: t - 1, (x,))


def test_a_control_flow_body_runs_as_aten_in_the_host_program(session: Session) -> None:
    """The branches' edge operators become ATen operators too: the host program of an
    Ethos-U export with torch.cond left on the CPU was refused by torch.export's verifier."""
    x = torch.rand(2, 3) + 0.1
    case = hil.case_from_module("branchy", Branchy(), (x,))
    result = session.check(case, "u85-ref")  # raised ExportError before
    assert result.verdict in ("PASS", "MISMATCH", "POOR QUANTIZATION"), result.failure_message()
    assert load_host_program(result.artifact.folder) is not None
