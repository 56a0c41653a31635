"""The first divergent operator inside Ethos-U delegates (hil.explain.tosa), for real.

Real exports (tiny models), the real TOSA reference model, seeded faults written with the TOSA
serializer: each fault breaks one constant of one operator, and the explainer must name that
operator as the first over its tolerance, while the untouched graph has none over.
"""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest
import torch
from torch import nn
from tosa_faults import negate_weights, plant, scale_conv_rescale, scale_rescale_multiplier

import hil
from hil.artifacts.store import Artifact, ArtifactCache
from hil.case import BuiltCase
from hil.devices import DeviceRegistry
from hil.errors import ExplainError, OutputMismatch
from hil.explain import Divergence
from hil.explain.tosa import explain_delegates, isolated_and_chained
from hil.recipes import make_recipe
from hil.session import Session
from tests.models import TinyCnn, seeded

TARGET = "u85-ref"


class ConvLrnConv(nn.Module):
    """The LRN's avg_pool3d stays on the CPU (ExecuTorch 1.5.1): two NPU delegates around it."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1)
        self.norm = nn.LocalResponseNorm(3)
        self.head = nn.Conv2d(8, 4, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.norm(torch.relu(self.stem(x))))


class DeepStack(nn.Module):
    """A MobileNetV2-like stack: 14 convolutions (expand, depthwise, project), three residual
    adds, pooling and a linear head, deep enough for rounding to drift along the chain."""

    def __init__(self) -> None:
        from suites.models.mobilenet_v2 import InvertedResidual, conv_bn

        super().__init__()
        self.features = nn.Sequential(
            conv_bn(3, 16, 3),
            InvertedResidual(16, 16, 1, 2),
            InvertedResidual(16, 24, 2, 2),
            InvertedResidual(24, 24, 1, 2),
            InvertedResidual(24, 24, 1, 2),
            conv_bn(24, 32, 1),
        )
        self.head = nn.Linear(32, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x).mean((2, 3)))


def deep_stack() -> nn.Module:
    from suites.models.mobilenet_v2_cases import trained_like

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        return trained_like(DeepStack(), resolution=16)


def tiny_cnn() -> hil.Case:
    return hil.Case("explain_tiny_cnn", lambda: seeded(TinyCnn), hil.seeded((1, 3, 8, 8)))


def deep_case() -> hil.Case:
    return hil.Case("explain_deep_stack", deep_stack, hil.seeded((1, 3, 16, 16)))


def conv_lrn_conv() -> hil.Case:
    return hil.Case(
        "explain_conv_lrn_conv",
        lambda: seeded(ConvLrnConv),
        hil.seeded((1, 3, 8, 8)),
        expected_fallback=frozenset({"avg_pool3d"}),
        missing_kernels={"avg_pool3d": "ExecuTorch 1.5.1 has no avg_pool3d.out CPU kernel"},
    )


def exported(
    session: Session, repo_devices: DeviceRegistry, case: hil.Case
) -> tuple[BuiltCase, Artifact]:
    """The case exported with u85-ref's own recipe options (no shared quantized store)."""
    options = repo_devices.get(TARGET).recipes[0].options
    built = session.built(case)
    return built, session.artifact(built, make_recipe("ethos-u", options))


def faulty_copy(
    artifact: Artifact, root: Path, delegate: str, change: object
) -> tuple[Artifact, int]:
    """The artifact copied into a cache of its own, with one delegate's graph broken."""
    folder = root / "artifacts" / artifact.key
    shutil.copytree(artifact.folder, folder)
    index = plant(folder, delegate, change)  # type: ignore[arg-type]
    copy, problem = ArtifactCache(root).lookup(artifact.key)
    assert copy is not None, problem
    return copy, index


def assert_healthy(divergence: Divergence | None) -> Divergence:
    assert divergence is not None
    assert divergence.first is None, divergence.message()
    assert all(not n.over for n in divergence.nodes)
    return divergence


def test_an_untouched_graph_has_no_operator_over_its_tolerance(
    session: Session, repo_devices: DeviceRegistry, tmp_path: Path
) -> None:
    built, artifact = exported(session, repo_devices, tiny_cnn())
    divergence = assert_healthy(explain_delegates(built, artifact, tmp_path / "work"))
    compared = {(n.operator, n.address["op"]) for n in divergence.nodes}
    # both layers' convolutions (the linear layer is a 1x1 CONV2D), their rescales, reshapes
    assert [op for op, _ in sorted(compared, key=lambda c: c[1])].count("CONV2D") == 2
    assert [op for op, _ in compared].count("RESCALE") == 2
    assert all(n.address["delegate"] == "delegate_0" for n in divergence.nodes)
    assert [n.address["op"] for n in divergence.nodes] == sorted(
        n.address["op"] for n in divergence.nodes
    )
    assert "no operator left its tolerance" in divergence.message()
    document = divergence.to_node_errors(artifact.sha256)
    assert document["format"] == "hil-node-errors/1" and "first_divergent" not in document


@pytest.mark.parametrize("nth", [0, 1], ids=["conv", "linear"])
def test_a_wrong_rescale_multiplier_is_the_first_divergent_operator(
    session: Session, repo_devices: DeviceRegistry, tmp_path: Path, nth: int
) -> None:
    built, artifact = exported(session, repo_devices, tiny_cnn())
    faulty, index = faulty_copy(
        artifact, tmp_path / "cache", "delegate_0", scale_rescale_multiplier(nth)
    )
    divergence = explain_delegates(built, faulty, tmp_path / "work")
    assert divergence is not None and divergence.first is not None
    assert dict(divergence.first.address) == {"delegate": "delegate_0", "op": index}
    assert divergence.first.operator == "RESCALE"
    # the convolution in front of it is still right: the fault is the requantization
    before = [n for n in divergence.nodes if n.address["op"] < index]
    assert before and not any(n.over for n in before)
    assert f"operator {index} of" in divergence.message()


def test_a_wrong_weight_is_the_first_divergent_operator(
    session: Session, repo_devices: DeviceRegistry, tmp_path: Path
) -> None:
    built, artifact = exported(session, repo_devices, tiny_cnn())
    faulty, index = faulty_copy(artifact, tmp_path / "cache", "delegate_0", negate_weights(0))
    divergence = explain_delegates(built, faulty, tmp_path / "work")
    assert divergence is not None and divergence.first is not None
    assert dict(divergence.first.address) == {"delegate": "delegate_0", "op": index}
    assert divergence.first.operator == "CONV2D"
    assert divergence.to_node_errors(faulty.sha256)["first_divergent"] == {
        "delegate": "delegate_0",
        "op": index,
    }


def test_a_deep_healthy_stack_has_no_operator_over_and_a_deep_fault_is_named(
    session: Session, repo_devices: DeviceRegistry, tmp_path: Path
) -> None:
    """Each operator is judged on the reference's inputs, so the rounding that adds up along
    a deep chain flags nothing, and a fault at the tenth convolution is still the first."""
    result = session.check(deep_case(), TARGET)
    result.raise_for_failures()
    built, artifact = session.built(deep_case()), result.artifact
    store = session.cache.root / "shared" / "quantized"
    healthy = assert_healthy(explain_delegates(built, artifact, tmp_path / "ok", store=store))
    operators = [n.operator for n in healthy.nodes]
    assert operators.count("CONV2D") + operators.count("DEPTHWISE_CONV2D") == 15
    faulty, index = faulty_copy(artifact, tmp_path / "cache", "delegate_0", scale_conv_rescale(9))
    divergence, chained = isolated_and_chained(built, faulty, tmp_path / "bad", store=store)
    assert divergence is not None and divergence.first is not None
    assert dict(divergence.first.address) == {"delegate": "delegate_0", "op": index}
    assert divergence.first.operator == "RESCALE"
    # judged alone, the operators after it get the reference's values: none is over, while
    # on the delegate's own values the fault reaches (some of) the rest of the network
    assert [n.address["op"] for n in divergence.nodes if n.over] == [index]
    assert chained is not None
    assert next(n.address["op"] for n in chained.nodes if n.over) == index
    assert sum(n.over for n in chained.nodes) > 1


def test_two_delegates_around_a_cpu_fallback_keep_their_names(
    session: Session, tmp_path: Path
) -> None:
    result = session.check(conv_lrn_conv(), TARGET)
    result.raise_for_failures()
    built, artifact = session.built(conv_lrn_conv()), result.artifact
    store = session.cache.root / "shared" / "quantized"
    healthy = assert_healthy(explain_delegates(built, artifact, tmp_path / "ok", store=store))
    assert {n.address["delegate"] for n in healthy.nodes} == {"delegate_0", "delegate_1"}
    # delegate_1's CONV2D is the head: break it, and the explainer must point into delegate_1
    faulty, index = faulty_copy(artifact, tmp_path / "cache", "delegate_1", negate_weights(0))
    divergence = explain_delegates(built, faulty, tmp_path / "bad", store=store)
    assert divergence is not None and divergence.first is not None
    assert dict(divergence.first.address) == {"delegate": "delegate_1", "op": index}
    assert not any(n.over for n in divergence.nodes if n.address["delegate"] == "delegate_0")


def test_the_target_runs_a_faulty_graph_the_check_fails_and_the_op_is_named(
    repo_devices: DeviceRegistry, tmp_path: Path
) -> None:
    """End to end: the u85-ref target itself runs the broken graph from its cache."""
    case = tiny_cnn()
    with Session(devices=repo_devices, cache_dir=tmp_path / "cache") as first:
        artifact = first.check(case, TARGET).artifact
    index = plant(artifact.folder, "delegate_0", scale_rescale_multiplier(0))
    with Session(devices=repo_devices, cache_dir=tmp_path / "cache") as again:
        result = again.check(case, TARGET)
        assert not result.artifact.exported_now and result.verdict != "PASS"
        with pytest.raises(OutputMismatch):
            result.raise_for_failures()
        divergence = explain_delegates(
            again.built(case),
            result.artifact,
            tmp_path / "work",
            store=again.cache.root / "shared" / "quantized",
        )
    assert divergence is not None and divergence.first is not None
    assert dict(divergence.first.address) == {"delegate": "delegate_0", "op": index}
    assert f"RESCALE (tosa_rescale_default; delegate_0, operator {index} of" in (
        divergence.message()
    )


def test_bad_input_is_a_clear_explain_error(
    session: Session, repo_devices: DeviceRegistry, tmp_path: Path
) -> None:
    built, artifact = exported(session, repo_devices, tiny_cnn())
    no_npu = dataclasses.replace(artifact, details={})
    with pytest.raises(ExplainError, match="not made by the ethos-u recipe"):
        explain_delegates(built, no_npu, tmp_path / "a")
    no_delegates = dataclasses.replace(artifact, details={**artifact.details, "delegates": []})
    with pytest.raises(ExplainError, match="no NPU delegates") as raised:
        explain_delegates(built, no_delegates, tmp_path / "b")
    assert raised.value.fix

    root = tmp_path / "cache"
    shutil.copytree(artifact.folder, root / "artifacts" / artifact.key)
    copy, _ = ArtifactCache(root).lookup(artifact.key)
    assert copy is not None
    graph = copy.folder / "delegates" / "delegate_0" / "out.tosa"
    graph.write_bytes(graph.read_bytes()[:64])
    with pytest.raises(ExplainError, match="sha256"):
        explain_delegates(built, copy, tmp_path / "c")
    graph.unlink()
    with pytest.raises(ExplainError, match="cannot be read") as missing:
        explain_delegates(built, copy, tmp_path / "d")
    assert "re-export" in str(missing.value)
    # damaged, yet with its sha256 recorded: the serializer refuses it, named as such
    plant_garbage = b"NOT A TOSA GRAPH" * 64
    graph.write_bytes(plant_garbage)
    garbage = dataclasses.replace(copy, details=_with_sha(copy, plant_garbage))
    with pytest.raises(ExplainError, match="not a TOSA flatbuffer"):
        explain_delegates(built, garbage, tmp_path / "e")


def _with_sha(artifact: Artifact, graph: bytes) -> dict[str, object]:
    import hashlib

    delegates = [dict(d) for d in artifact.details["delegates"]]
    delegates[0]["tosa_sha256"] = hashlib.sha256(graph).hexdigest()
    return {**artifact.details, "delegates": delegates}
