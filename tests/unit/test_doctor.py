"""`hil doctor`: per device, what is here and what is missing with the fix; for FVP targets the
verdict is, word for word, the reason pytest skips with."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from fakes.fvp import install

from hil import cli
from hil.devices import DeviceRegistry, parse_device
from hil.doctor import MISSING, NOTE, OK, diagnose, render
from hil.errors import DeviceSpecError, TargetUnavailable
from hil.session import Session

REPO = Path(__file__).resolve().parent.parent.parent


@pytest.fixture
def no_fvp(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.delenv("HIL_FVP_DIR", raising=False)
    monkeypatch.delenv("EXECUTORCH_ROOT", raising=False)
    monkeypatch.setenv("HIL_FIRMWARE_DIR", str(tmp_path / "firmware"))


def by_what(diagnosis: Any) -> dict[str, Any]:
    return {f.what: f for f in diagnosis.findings}


def test_missing_fvp_verdict_is_the_skip_reason(
    no_fvp: None, repo_devices: DeviceRegistry, tmp_path: Path
) -> None:
    spec = repo_devices.get("fvp-u85")
    diagnosis = diagnose(spec)
    found = by_what(diagnosis)
    assert found["device file"].status == OK and "num_macs 256" in found["device file"].detail
    assert found["FVP binary"].status == MISSING
    assert "--i-agree-to-the-contained-eula" in (found["FVP binary"].fix or "")
    assert found["ExecuTorch for the CPU"].status == MISSING  # listed too, with its own fix
    assert found["runner (corstone-320)"].status == NOTE
    with (
        Session(devices=repo_devices, cache_dir=tmp_path / "c", results_dir=tmp_path) as s,
        pytest.raises(TargetUnavailable) as caught,
    ):
        s.target("fvp-u85")
    # the plugin skips with f"target {name} unavailable: {error}"; the doctor says the same
    assert (
        diagnosis.verdict()
        == f"skipped by pytest: target fvp-u85 unavailable: {caught.value.message}"
    )
    text = "\n".join(render([diagnosis]))
    assert "  missing  FVP binary" in text and "fix: install the Arm Corstone-320" in text
    assert text.endswith("0 of 1 targets ready on this machine")


def test_fvp_with_the_fake_binary_is_ready_with_its_version(
    no_fvp: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", f"{install(tmp_path / 'bin')}:/usr/bin:/bin")
    data = yaml.safe_load((REPO / "devices" / "fvp-u55.yaml").read_text())
    data["connection"]["engine"] = "echo"
    found = by_what(diagnose(parse_device(data, tmp_path / "fvp-u55.yaml")))
    assert found["FVP binary"].status == OK
    assert found["FVP binary"].detail.endswith("Fast Models 0.0.0 (hil fake FVP)")
    assert found["ExecuTorch for the CPU"].status == NOTE  # not needed by the echo engine
    assert all(f.blocking is None for f in found.values())


def test_macs_disagreement_is_refused_when_the_file_loads(tmp_path: Path) -> None:
    data = yaml.safe_load((REPO / "devices" / "fvp-u55.yaml").read_text())
    data["connection"]["num_macs"] = 256
    with pytest.raises(
        DeviceSpecError, match="num_macs is 256, but the device's npu ethos-u55-128 has 128 MACs"
    ):
        parse_device(data, tmp_path / "fvp-u55.yaml")


def test_cli_doctor_exit_code_is_strict_only_on_request(
    no_fvp: None, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["--devices", str(REPO / "devices"), "doctor", "--target", "fvp-u55"]) == 0
    out = capsys.readouterr().out
    assert "fvp-u55 (fvp)" in out and "=> skipped by pytest: target fvp-u55 unavailable" in out
    assert (
        cli.main(["--devices", str(REPO / "devices"), "doctor", "--target", "fvp-u55", "--strict"])
        == 1
    )
    assert (
        cli.main(["--devices", str(REPO / "devices"), "doctor", "--target", "host", "--strict"])
        == 0
    )


def test_without_an_sdk_doctor_prints_the_hil_sdk_build_line(
    no_fvp: None, repo_devices: DeviceRegistry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HIL_SDK_DIR", str(tmp_path / "sdk"))
    qemu = by_what(diagnose(repo_devices.get("qemu-m55")))["runner engine"]
    assert qemu.status == MISSING and "no ExecuTorch SDK is built" in qemu.detail
    assert qemu.fix == "hil sdk build --executorch <executorch checkout> --board qemu-m55"
    fvp = by_what(diagnose(repo_devices.get("fvp-u55")))["ExecuTorch for the CPU"]
    assert (
        fvp.fix is not None
        and (
            "hil sdk build --executorch <executorch checkout> "
            "--ethos-u-driver <ethos-u-core-driver> --cmsis <CMSIS> "
            "--board fvp-u55"
        )
        in fvp.fix
    )


def test_an_sdk_built_here_is_found_and_its_checkouts_fill_the_next_line(
    no_fvp: None, repo_devices: DeviceRegistry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    monkeypatch.setenv("HIL_SDK_DIR", str(tmp_path / "sdk"))
    prefix = tmp_path / "sdk" / "qemu-m55-0123"
    (prefix / "lib").mkdir(parents=True)
    (prefix / "sdk.json").write_text(
        json.dumps(
            {
                "board": {"name": "qemu-m55", "npu": None},
                "device": "qemu-m55",
                "built_at": 1.0,
                "sources": {"executorch": "/src/executorch", "cmsis_nn": "/src/cmsis-nn"},
            }
        )
    )
    qemu = by_what(diagnose(repo_devices.get("qemu-m55")))["runner engine"]
    assert qemu.status == OK and qemu.detail == f"ExecuTorch from the SDK {prefix} (hil sdk build)"
    fvp = by_what(diagnose(repo_devices.get("fvp-u85")))["ExecuTorch for the CPU"]
    assert (
        fvp.fix is not None
        and ("hil sdk build --executorch /src/executorch --cmsis-nn /src/cmsis-nn --ethos-u-driver")
        in fvp.fix
    )


def test_vgf_emu_doctor_names_the_sdk_the_device_and_the_layers(
    repo_devices: DeviceRegistry,
) -> None:
    found = by_what(diagnose(repo_devices.get("vgf-emu")))
    for distribution in (
        "ai-ml-sdk-model-converter",
        "ai-ml-sdk-scenario-runner",
        "ai-ml-emulation-layer-for-vulkan",
        "ai-ml-sdk-vgf-library",
    ):
        if found[distribution].status != OK:
            pytest.skip(f"{distribution} is not installed here: {found[distribution].fix}")
        assert found[distribution].detail == "0.11.0"  # the pinned version
    assert found["ML emulation layers"].status == OK
    assert (
        "VK_LAYER_ML_Graph_Emulation above VK_LAYER_ML_Tensor_Emulation"
        in found["ML emulation layers"].detail
    )
    if found["validation layer"].status == OK:
        assert found["validation layer"].detail.endswith("VkLayer_khronos_validation.json")
    device = found["Vulkan device"]
    assert device.status in (OK, NOTE)
    if device.status == OK:
        assert "Vulkan 1." in device.detail  # llvmpipe here: "llvmpipe (LLVM ...) (Vulkan 1.3.230)"


def test_a_missing_validation_layer_is_the_doctors_missing_line_with_the_fix(
    repo_devices: DeviceRegistry,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    from hil.vgf import environment

    monkeypatch.setattr(environment, "SYSTEM_LAYER_DIRS", (str(tmp_path),))
    diagnosis = diagnose(repo_devices.get("vgf-emu"))
    line = by_what(diagnosis)["validation layer"]
    assert line.status == MISSING and "vulkan-validationlayers" in (line.fix or "")
    assert diagnosis.verdict().startswith("skipped by pytest: target vgf-emu unavailable")
