"""The bare-metal runner with ExecuTorch on QEMU mps3-an547 (qemu-m55), and the Corstone
presets linked against the real Ethos-U driver booting there (QEMU has no NPU).

Needs an ExecuTorch built for the Cortex-M55: the SDKs `hil sdk build` made in this checkout's
.hil/sdk (HIL_SDK_DIR), found by the runner build itself, or an install EXECUTORCH_ROOT names
(firmware/README.md, "ExecuTorch for bare metal"). Without either every test here skips with
that reason; CI has neither (it cannot fetch ExecuTorch's sources)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
import yaml
from debug_builds import DEBUG_COMMANDS
from outer_env import OUTER_SDK_DIR
from torch import nn

from hil import Case, seeded
from hil.devices import DeviceRegistry, TimingPolicy
from hil.errors import HilError, MissingKernel, PoolsTooSmall, TargetCrash
from hil.runner import messages as m
from hil.sdk.boards import BOARDS
from hil.sdk.store import find_sdk
from hil.session import Session
from hil.targets.serial import SerialTarget, client_on, prepare_board

REPO = Path(__file__).resolve().parents[2]
ROOT = os.environ.get("EXECUTORCH_ROOT", "")
SDKS = OUTER_SDK_DIR
QEMU_SDK = find_sdk(BOARDS["qemu-m55"], "qemu-m55", SDKS)
MISSING = [tool for tool in ("qemu-system-arm", "arm-none-eabi-gcc") if shutil.which(tool) is None]
pytestmark = [
    pytest.mark.skipif(
        not ROOT and QEMU_SDK is None,
        reason="no ExecuTorch for the Cortex-M55: no qemu-m55 SDK in "
        f"{SDKS} and EXECUTORCH_ROOT is not set; fix: hil sdk build "
        "--executorch <checkout> --board qemu-m55 (docs/targets/qemu-m55.md)",
    ),
    pytest.mark.skipif(bool(MISSING), reason=f"{', '.join(MISSING)} not installed"),
]


@pytest.fixture(scope="module", autouse=True)
def the_sdks_of_this_checkout() -> Iterator[None]:
    """The runner builds find this checkout's SDKs (the test run hides them by default)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HIL_SDK_DIR", str(SDKS))
        yield


QUICK = TimingPolicy(warmup=0, min_runs=1, min_time_s=0.0, max_runs=1, max_time_s=1.0)


def small() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(8, 4),
    )


class Sine(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sin(x)


def wide() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(3, 64, 3, padding=1), nn.ReLU())


SMALL = Case("qemu_small_cnn", small, seeded((1, 3, 16, 16)), timing=QUICK)
SINE = Case("qemu_sine", Sine, seeded((1, 64)), timing=QUICK)
WIDE = Case("qemu_wide_activations", wide, seeded((1, 3, 32, 32)), timing=QUICK)


def variant(folder: Path, name: str, **connection: Any) -> None:
    """qemu-m55's device file under another name, with connection keys changed."""
    data = yaml.safe_load((REPO / "devices" / "qemu-m55.yaml").read_text())
    data["name"] = name
    firmware = data["connection"]["firmware"]
    for key, value in connection.pop("defines", {}).items():
        firmware["defines"][key] = value
    data["connection"].update(connection)
    (folder / f"{name}.yaml").write_text(yaml.safe_dump(data))


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Session]:
    devices = tmp_path_factory.mktemp("devices")
    (devices / "qemu-m55.yaml").write_text((REPO / "devices" / "qemu-m55.yaml").read_text())
    variant(devices, "qemu-m55-uart", model_load="link")
    variant(devices, "qemu-m55-faults", defines=DEBUG_COMMANDS)  # a test build: faults on request
    variant(devices, "qemu-m55-tight", defines={"HIL_POOL_PLANNED_SIZE": "0x4000"})
    with Session(
        devices=DeviceRegistry.from_dirs([devices]),
        cache_dir=tmp_path_factory.mktemp("cache"),
        results_dir=tmp_path_factory.mktemp("results"),
    ) as session:
        yield session


@pytest.mark.parametrize("recipe", ["portable", "cortex-m"])
def test_a_model_runs_on_the_emulated_m55(lab: Session, recipe: str) -> None:
    """A .pte from the executorch 1.5.1 wheel, loaded from the host's disk through
    semihosting, runs on the runner's ExecuTorch (the install's version) and passes."""
    result = lab.check(SMALL, "qemu-m55", recipe)
    assert result.passed, result
    assert result.deploy_bytes == 0  # LOAD_FILE: nothing crossed the UART
    assert result.counters["cpu_cycles"] > 0
    assert result.counters["qemu_instructions_median"] == pytest.approx(
        result.counters["cpu_cycles"] * 1e9 / result.counters["runner_clock_hz"]
    )
    assert result.counters["planned_pool_peak_bytes"] > 0
    assert result.counters["method_pool_peak_bytes"] > 0
    target = lab.target("qemu-m55")
    assert isinstance(target, SerialTarget)
    assert target.describe()["engine"] == "executorch"


def test_the_uart_path_gives_the_same_answer(lab: Session) -> None:
    result = lab.check(SMALL, "qemu-m55-uart", "portable")
    assert result.passed, result
    assert result.deploy_bytes == result.artifact.pte_path.stat().st_size


def test_an_operator_the_build_lacks_is_a_typed_error_naming_it(lab: Session) -> None:
    with pytest.raises(MissingKernel) as caught:
        lab.check(SINE, "qemu-m55", "portable")
    assert caught.value.operator == "aten::sin.out"
    # an SDK's kernel list refuses it before deploy, naming the rebuild; a hand-built
    # install leaves it to the runner's load, naming the CMake option
    expected = "EXECUTORCH_SELECT_OPS_LIST" if ROOT else "--ops-from suites"
    assert caught.value.fix is not None and expected in caught.value.fix
    assert lab.check(SMALL, "qemu-m55", "portable").passed  # the runner is fine afterwards


def test_a_model_too_big_for_the_pools_is_refused_before_deploy(lab: Session) -> None:
    with pytest.raises(PoolsTooSmall) as caught:
        lab.check(WIDE, "qemu-m55-tight", "portable")
    (short,) = caught.value.shortfalls
    assert short.pool == "planned" and short.available == 0x4000 and short.needed > 0x4000
    assert f"has {0x4000}" in caught.value.message
    target = lab.target("qemu-m55-tight")
    assert isinstance(target, SerialTarget)
    assert not target.client.info or not target.client.info.holds_model  # nothing was sent


def test_a_fault_in_a_run_is_a_crash_with_registers_and_the_next_case_boots_fresh(
    lab: Session,
) -> None:
    assert lab.check(SMALL, "qemu-m55-faults", "portable").passed
    target = lab.target("qemu-m55-faults")
    assert isinstance(target, SerialTarget)
    target.client.debug(m.DEBUG_FAULT, during_next_run=True)
    with pytest.raises(TargetCrash) as caught:
        lab.check(SMALL, "qemu-m55-faults", "portable")
    assert "cortex-m fault" in str(caught.value) and "cfsr=" in str(caught.value)
    assert lab.check(SMALL, "qemu-m55-faults", "portable").passed


def test_the_sdk_built_runner_is_a_release_build(lab: Session) -> None:
    """What `hil sdk build` links for qemu-m55 refuses DEBUG, and the record says so."""
    result = lab.check(SMALL, "qemu-m55", "portable")
    assert result.target_info["debug_commands"] == "refused" and not result.altered
    target = lab.target("qemu-m55")
    assert isinstance(target, SerialTarget)
    with pytest.raises(HilError, match="built without debug commands"):
        target.client.debug(m.DEBUG_FAULT, during_next_run=True)


DRIVER = Path(os.environ.get("ETHOSU_DRIVER_ROOT", ""))


@pytest.mark.parametrize("preset", ["corstone-300", "corstone-320"])
def test_a_corstone_runner_with_the_real_driver_boots_and_reports_the_npu_missing(
    tmp_path: Path,
    preset: str,
) -> None:
    """ExecuTorch with the Ethos-U delegate and Arm's driver, started on QEMU, which models no
    NPU: the start fails (refused, or faulted and not retried), the runner says so and serves.
    The Corstone-320 build is moved onto QEMU's SSE-300 map (QEMU boots from ITCM and has no
    BRAM at 0x12000000 or UART at 0x58203000): four defines, named here."""
    defines: dict[str, str] = {}
    board_sdk = find_sdk(BOARDS[preset], None, SDKS)
    if not ROOT and board_sdk is None:
        pytest.skip(f"no {preset} SDK in {SDKS}: hil sdk build ... --board {preset}")
    if preset == "corstone-320":
        defines = {
            "HIL_VECTOR_REGION": "ITCM",
            "HIL_DATA_REGION": "SRAM",
            "HIL_UART0_BASE": "0x49303000",
        }
        if ROOT:  # one hand-built install: its driver library is the U55's
            if not (DRIVER / "CMakeLists.txt").exists():
                pytest.skip(
                    "the U85 needs the driver built from source: set "
                    "ETHOSU_DRIVER_ROOT to ethos-u-core-driver"
                )
            defines["ETHOSU_DRIVER_ROOT"] = str(DRIVER)
    (tmp_path / f"qemu-{preset}.yaml").write_text(
        yaml.safe_dump(
            {
                "name": f"qemu-{preset}",
                "kind": "serial",
                "description": f"{preset} on QEMU",
                "recipes": ["portable"],
                "latency": {"timing": "emulated"},
                "memory": {},
                "connection": {
                    "virtual": "qemu-mps3-an547",
                    "reply_timeout_s": 10.0,
                    "firmware": {"preset": preset, "defines": defines},
                },
            }
        )
    )
    spec = DeviceRegistry.from_dirs([tmp_path]).get(f"qemu-{preset}")
    _, board = prepare_board(spec)
    url = board.start()
    try:
        link, client = client_on(spec, url)
        try:
            info = client.hello()
            info = client.hello()  # after a faulted start the runner has reset once
        finally:
            link.close()
        log = board.log_tail(40)
    finally:
        board.stop()
    assert info.engine_name == "executorch" and info.platform.endswith(preset)
    assert "ethos-u" in log and ("refused the NPU" in log or "faulted" in log), log
