"""VGF on the ML SDK's emulation layer (vgf-emu), end to end through hil.Session: ExecuTorch's
real VGF backend and the ML SDK's real model-converter, scenario runner, emulation layer and
Khronos validation layer, over Mesa's lavapipe. Nothing here is mocked but the machine's
state where a test says it takes something away (a driver, a layer)."""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

import hil
from hil.case import BuiltCase, case_from_module
from hil.devices import DeviceRegistry
from hil.errors import TargetCrash, TargetUnavailable
from hil.recipes import RECIPES, ExportProduct
from hil.recipes.vgf import VgfRecipe
from hil.session import Session
from hil.targets import make_target
from hil.targets.vgf_emu import VGF_ALLOWANCE, VgfEmuTarget
from hil.verdict.checks import Question
from hil.vgf import client, environment

TARGET = "vgf-emu"


class ConvAddSigmoid(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.conv = nn.Conv2d(3, 4, 3)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self.conv(x) + y)


def case(name: str = "conv_add_sigmoid") -> hil.Case:
    generator = torch.Generator().manual_seed(3)
    inputs = (
        torch.randn(1, 3, 8, 8, generator=generator),
        torch.randn(1, 4, 6, 6, generator=generator),
    )
    return case_from_module(name, ConvAddSigmoid(), inputs)


@pytest.fixture(scope="module")
def vgf_ready(repo_devices: DeviceRegistry) -> Iterator[None]:
    """vgf-emu provisions here, or every test is skipped with the reason and the fix."""
    target = make_target(repo_devices.get(TARGET))
    try:
        target.provision()
    except TargetUnavailable as e:
        pytest.skip(f"{TARGET} unavailable: {e.message} (fix: {e.fix})")
    finally:
        target.teardown()
    yield


@pytest.mark.parametrize("recipe", ["vgf", "vgf-fp"])
def test_a_model_runs_as_vgf_on_the_emulation_layer_and_passes(
    vgf_ready: None, session: Session, recipe: str
) -> None:
    result = session.check(case(), TARGET, recipe)
    result.raise_for_failures()
    assert result.verdict == "PASS"
    assert "on the ML emulation layer for Vulkan" in result.log
    assert "vgf-vs-tosa: delegate_0" in result.log
    delegate = result.artifact.details["delegates"][0]
    folder = result.artifact.folder / delegate["folder"]
    vgf = (folder / "out.vgf").read_bytes()
    assert vgf.startswith(b"VGF1")
    assert hashlib.sha256(vgf).hexdigest() == delegate["vgf_sha256"]
    assert hashlib.sha256((folder / "out.tosa").read_bytes()).hexdigest() == delegate["tosa_sha256"]
    assert result.to_record()["partition"]["delegates"] == 1
    # the device question: the VGF on the emulation layer against the TOSA graph's reference
    (device,) = result.of(Question.DEVICE)
    assert device.basis.startswith("0 step(s)") and "measured on the ML SDK" in device.basis
    assert result.of(Question.LOWERING) and not result.of(Question.TARGET)
    if recipe == "vgf":  # int8: the emulation layer computes the TOSA graph's integers exactly
        assert "delegate_0 identical" in result.log
        assert result.counters["vgf_tosa_max_abs"] == 0.0
        assert device.observed["max_steps"] == 0.0
    else:
        assert device.observed["max_ulps"] <= VGF_ALLOWANCE.float_ulps


def _one_weight_changed(vgf: bytes) -> bytes:
    """The VGF with one byte of its largest constant (the convolution's weights, found with
    the VGF library's own decoder) changed, as a converter that wrote one weight wrong would
    leave it."""
    import vgfpy  # type: ignore[import-not-found]

    (offset,) = struct.unpack_from("<Q", vgf, vgfpy.HEADER_CONSTANT_SECTION_OFFSET_OFFSET)
    (size,) = struct.unpack_from("<Q", vgf, vgfpy.HEADER_CONSTANT_SECTION_SIZE_OFFSET)
    section = vgf[offset : offset + size]
    decoder = vgfpy.CreateConstantDecoder(section, size)
    weights = max((decoder.getConstant(i).tobytes() for i in range(decoder.size())), key=len)
    at = offset + section.index(weights) + len(weights) // 2
    data = bytearray(vgf)
    data[at] ^= 0x40
    return bytes(data)


class WrongWeightVgfRecipe(VgfRecipe):
    """ExecuTorch's VGF lowering, then one weight byte changed in the delegate's VGF (in the
    .pte and beside it, the record updated): the TOSA graph stays right."""

    name = "vgf-wrong-weight"

    def export(self, built: BuiltCase, workdir: Path) -> ExportProduct:
        from executorch.exir._serialize._program import (
            deserialize_pte_binary,
            serialize_pte_binary,
        )

        product = super().export(built, workdir)
        pte = deserialize_pte_binary(product.pte)
        plan = pte.program.execution_plan[0]
        data = pte.program.backend_delegate_data[plan.delegates[0].processed.index]
        data.data = _one_weight_changed(bytes(data.data))
        (workdir / "delegates" / "delegate_0" / "out.vgf").write_bytes(data.data)
        details: dict[str, Any] = dict(product.details)
        details["delegates"] = [
            {**details["delegates"][0], "vgf_sha256": hashlib.sha256(data.data).hexdigest()}
        ]
        return ExportProduct(
            bytes(serialize_pte_binary(pte)),
            product.output_scales,
            product.quantized_reference,
            product.quantized_ops,
            product.sensitivity,
            details,
        )


def test_a_wrong_weight_in_the_vgf_is_a_mismatch_that_names_the_delegate(
    vgf_ready: None,
    session: Session,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.setitem(RECIPES, WrongWeightVgfRecipe.name, WrongWeightVgfRecipe)
    monkeypatch.setattr(VgfEmuTarget, "recipe_names", (WrongWeightVgfRecipe.name, "vgf-fp"))
    devices = DeviceRegistry.from_dirs([_device_with(tmp_path, WrongWeightVgfRecipe.name)])
    with Session(
        devices=devices, cache_dir=tmp_path / "cache", results_dir=tmp_path / "results"
    ) as own:
        result = own.check(case("wrong_weight"), TARGET, WrongWeightVgfRecipe.name)
    # the TOSA graph (the lowering) is right: the VGF the device runs is what is wrong
    assert result.verdict == "DEVICE MISMATCH"
    assert all(c.judged and not c.failed for c in result.of(Question.LOWERING))
    message = result.failure_message() or ""
    assert "the device is at fault, not the lowering" in message
    assert "vs the lowered program's reference" in message
    assert "delegate_0 differs from its TOSA graph" in message, message


def _device_with(folder: Path, recipe: str) -> Path:
    source = (Path(__file__).resolve().parents[2] / "devices" / f"{TARGET}.yaml").read_text()
    devices = folder / "devices"
    devices.mkdir()
    (devices / f"{TARGET}.yaml").write_text(source.replace("- name: vgf ", f"- name: {recipe} "))
    return devices


def test_a_validation_error_fails_the_run_quoting_the_layers_words(
    vgf_ready: None,
    session: Session,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The one report hil allows by name (the emulation layer's own pipelines, at every
    scenario build) taken off the allowed list: the same real run is then refused, quoting
    the validation layer, as any other report would be."""
    monkeypatch.setattr(client, "KNOWN_REPORTS", {})
    with pytest.raises(TargetCrash) as caught:
        session.check(case("validation_quoted"), TARGET, "vgf-fp")
    assert "Vulkan validation layer reported an error" in caught.value.message
    assert "VUID-VkComputePipelineCreateInfo-layout-00703" in caught.value.message


def test_without_a_vulkan_driver_the_target_is_unavailable_with_the_fix(
    vgf_ready: None,
    repo_devices: DeviceRegistry,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.setattr(environment, "SYSTEM_ICD_DIRS", (str(tmp_path / "no-icd"),))
    target = make_target(repo_devices.get(TARGET))
    with pytest.raises(TargetUnavailable) as caught:
        target.provision()
    assert "no Vulkan device driver" in caught.value.message
    assert "mesa-vulkan-drivers" in (caught.value.fix or "")


def test_without_the_validation_layer_the_target_is_unavailable_with_the_fix(
    vgf_ready: None,
    repo_devices: DeviceRegistry,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.setattr(environment, "SYSTEM_LAYER_DIRS", (str(tmp_path / "no-layers"),))
    target = make_target(repo_devices.get(TARGET))
    with pytest.raises(TargetUnavailable) as caught:
        target.provision()
    assert "validation layer is not installed" in caught.value.message
    assert "vulkan-validationlayers" in (caught.value.fix or "")


def test_a_layer_the_loader_cannot_load_is_found_at_provision(
    vgf_ready: None,
    repo_devices: DeviceRegistry,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The Tensor layer's library gone (its manifest pointing nowhere): the probe at provision
    fails to create the device, and the target is unavailable, naming the loader's error."""
    real = environment.prepare_stack

    def broken(layers: environment.LayerManifests, folder: Path) -> environment.Stack:
        stack = real(layers, folder)
        manifest = next(folder.glob("2-*/*.json"))
        manifest.write_text(manifest.read_text().replace("libVkLayer_Tensor.so", "missing.so"))
        return stack

    monkeypatch.setattr(environment, "prepare_stack", broken)
    target = make_target(repo_devices.get(TARGET))
    with pytest.raises(TargetUnavailable) as caught:
        target.provision()
    assert "not usable here" in caught.value.message


def test_the_worker_holds_only_the_most_recent_programs_and_a_released_one_runs_again(
    vgf_ready: None, session: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Held without bound, a session over ExecuTorch's operator folder grew the worker past
    16 GB until the kernel killed it. At most HELD_PROGRAMS (2 here) stay built; one let go is
    built again when a case asks for it."""
    from hil.targets import tosa_ref

    monkeypatch.setattr(tosa_ref, "HELD_PROGRAMS", 2)
    names = [f"held_{n}" for n in range(4)]
    for seed, name in enumerate(names):  # four programs: each its own weights
        session.check(seeded_conv(name, seed), TARGET, "vgf-fp").raise_for_failures()
    target = session.target(TARGET)
    assert isinstance(target, VgfEmuTarget) and target._worker is not None
    assert target._worker.request("counting", "held") == 2
    assert len(target._programs) == 2
    again = session.check(seeded_conv(names[0], 0), TARGET, "vgf-fp")
    assert again.verdict == "PASS" and target._worker.request("counting", "held") == 2


def seeded_conv(name: str, seed: int) -> hil.Case:
    torch.manual_seed(seed)
    return case_from_module(
        name, nn.Sequential(nn.Conv2d(3, 4, 3), nn.Sigmoid()), torch.randn(1, 3, 8, 8)
    )
