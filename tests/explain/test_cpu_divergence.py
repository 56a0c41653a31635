"""hil.explain.cpu on the real ExecuTorch runtime: a fault put into one node of a program is
named as the first divergent operator, a healthy program has none over its tolerance, and bad
input is an ExplainError that says what to do."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from torch import nn

from hil import Case, seeded
from hil.artifacts.store import Artifact
from hil.devices import DeviceRegistry
from hil.errors import ExplainError, HilError
from hil.explain import Divergence
from hil.explain.cpu import explain_program
from hil.recipes import Recipe, make_recipe
from hil.session import Session

FAULT = 0.25  # added to one weight: small next to the weights, far above rounding


def two_convs() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(3, 8, 3),
        nn.ReLU(),
        nn.Conv2d(8, 8, 3, stride=2),
        nn.ReLU(),
        nn.Flatten(),
        nn.Linear(8 * 6 * 6, 10),
    )


CASE = Case("explain_two_convs", two_convs, seeded((1, 3, 16, 16)))


@pytest.fixture(scope="module")
def module_session(
    repo_devices: DeviceRegistry, shared_cache: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Session]:
    results = tmp_path_factory.mktemp("explain-results")
    with Session(devices=repo_devices, cache_dir=shared_cache, results_dir=results) as s:
        yield s


def recipe_of(session: Session, name: str) -> Recipe:
    """The recipe as Session.check makes it: sharing the cache's quantized models."""
    return make_recipe(name, shared_dir=session.cache.root / "shared")


def artifact_of(session: Session, recipe: str) -> Artifact:
    return session.artifact(session.built(CASE), recipe_of(session, recipe))


def explain(
    session: Session, artifact: Artifact, workdir: Path, target: str = "host"
) -> Divergence:
    recipe = recipe_of(session, artifact.recipe)
    divergence = explain_program(session.built(CASE), artifact, recipe, workdir, target=target)
    assert divergence is not None
    return divergence


def with_weight_fault(artifact: Artifact, weight: torch.Tensor, folder: Path) -> Artifact:
    """The artifact with one element of `weight` changed in the .pte's stored bytes, the way a
    wrong constant (or a kernel misreading it) would change that one node."""
    data = artifact.pte_path.read_bytes()
    stored = weight.detach().contiguous().numpy().tobytes()
    assert data.count(stored) == 1, "the weight is not stored verbatim once in the .pte"
    changed = weight.detach().clone().contiguous()
    changed.view(-1)[5] += FAULT
    folder.mkdir(parents=True, exist_ok=True)
    (folder / artifact.pte_path.name).write_bytes(data.replace(stored, changed.numpy().tobytes()))
    return dataclasses.replace(artifact, folder=folder)


@pytest.fixture(scope="module")
def portable(module_session: Session) -> Artifact:
    return artifact_of(module_session, "portable")


def test_a_healthy_portable_program_has_no_node_over_its_tolerance(
    module_session: Session, portable: Artifact, tmp_path: Path
) -> None:
    divergence = explain(module_session, portable, tmp_path)
    assert divergence.first is None, divergence.message()
    assert [n.address["instruction"] for n in divergence.nodes] == [0, 1, 2, 3, 5]
    assert "no operator left its tolerance" in divergence.message()


def test_a_weight_changed_at_one_node_is_named_as_the_first_divergent(
    module_session: Session, portable: Artifact, tmp_path: Path
) -> None:
    second_conv = module_session.built(CASE).module[2].weight
    faulty = with_weight_fault(portable, second_conv, tmp_path / "faulty")
    divergence = explain(module_session, faulty, tmp_path / "work")
    first = divergence.first
    assert first is not None
    assert first.address == {"chain": 0, "instruction": 2}
    assert first.operator == "aten::convolution.out" and first.name == "conv2d_1"
    assert first.max_abs > 100 * (first.limit or 0.0)
    before = [n for n in divergence.nodes if n.address["instruction"] < 2]
    assert before and not any(n.over for n in before)  # upstream of the fault: untouched
    assert "first divergent operator: aten::convolution.out" in divergence.message()
    document = divergence.to_node_errors(faulty.sha256)
    assert document["first_divergent"] == {"chain": 0, "instruction": 2}


def test_an_xnnpack_delegate_is_one_instruction_and_one_answer(
    module_session: Session, tmp_path: Path
) -> None:
    artifact = artifact_of(module_session, "xnnpack-fp32")
    healthy = explain(module_session, artifact, tmp_path / "healthy")
    assert healthy.first is None, healthy.message()
    assert len(healthy.nodes) == 1
    bias = module_session.built(CASE).module[5].bias  # a weight could meet a zero activation
    faulty = with_weight_fault(artifact, bias, tmp_path / "faulty")
    first = explain(module_session, faulty, tmp_path / "work").first
    assert first is not None and first.address == {"chain": 0, "instruction": 0}
    assert first.operator == "XnnpackBackend delegate call"


def test_a_healthy_int8_program_is_within_steps_of_the_quantized_model(
    module_session: Session, tmp_path: Path
) -> None:
    artifact = artifact_of(module_session, "xnnpack-int8")
    divergence = explain(module_session, artifact, tmp_path)
    assert divergence.first is None, divergence.message()
    (node,) = divergence.nodes
    assert node.unit == "output steps" and node.max_abs_steps is not None
    assert "quantized PyTorch model" in divergence.reference


def test_another_target_is_explained_on_the_hosts_runtime_and_says_so(
    module_session: Session, portable: Artifact, tmp_path: Path
) -> None:
    message = explain(module_session, portable, tmp_path, target="vboard").message()
    assert "host's ExecuTorch runtime" in message and "not a bug in vboard's kernels" in message


def test_no_program_file_is_an_explain_error_with_a_fix(
    module_session: Session, portable: Artifact, tmp_path: Path
) -> None:
    missing = dataclasses.replace(portable, folder=tmp_path / "nowhere")
    with pytest.raises(ExplainError) as error:
        explain(module_session, missing, tmp_path / "work")
    assert "does not exist" in str(error.value) and error.value.fix
    assert isinstance(error.value, HilError)


def test_a_damaged_program_is_an_explain_error_with_a_fix(
    module_session: Session, portable: Artifact, tmp_path: Path
) -> None:
    damaged = tmp_path / "damaged"
    damaged.mkdir()
    data = portable.pte_path.read_bytes()
    (damaged / portable.pte_path.name).write_bytes(data[: len(data) // 3])
    with pytest.raises(ExplainError) as error:
        explain(module_session, dataclasses.replace(portable, folder=damaged), tmp_path / "work")
    assert error.value.fix and "re-export" in error.value.fix
