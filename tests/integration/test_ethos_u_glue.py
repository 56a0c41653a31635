"""The runner's Ethos-U glue (firmware/src/platform/cortex_m/ethos_u/) without Arm's driver or
an NPU: these machines have no ethos-u-core-driver and no Corstone FVP. tests/fakes/ethosu_api
declares the documented driver API the glue uses and stubs it. Against it the glue is compiled
for the Cortex-M55, linked into the corstone-300 runner and booted under QEMU (which models no
NPU), and its callbacks run on this CPU so the PMU line is checked with hil/fvp/pmu.py. That it
drives Arm's driver and the FVP's NPU correctly is not shown here."""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from hil.devices import DeviceRegistry, DeviceSpec
from hil.fvp import pmu
from hil.sdk import firmware
from hil.targets.serial import client_on, prepare_board

REPO = Path(__file__).resolve().parents[2]
FAKE_DRIVER = REPO / "tests" / "fakes" / "ethosu_api"
SOURCE = firmware.source_dir() / "src"
GLUE = SOURCE / "platform" / "cortex_m" / "ethos_u"
ARM_GCC = shutil.which("arm-none-eabi-gcc")
ARM_CPU = ["-mcpu=cortex-m55", "-mthumb", "-mfloat-abi=hard"]
WARNINGS = ["-Wall", "-Wextra", "-Werror", "-Wmissing-prototypes", "-Wstrict-prototypes"]

# board, the NPU's macro for the driver's headers, fast-memory bytes, PMU event names
NPUS = {
    "u55": (
        "CORSTONE_300",
        "ETHOSU55",
        0,
        ["npu_active", "axi0_rd_beats", "axi0_wr_beats", "axi1_rd_beats"],
    ),
    "u85": (
        "CORSTONE_320",
        "ETHOSU85",
        393216,
        ["npu_active", "sram_rd_beats", "sram_wr_beats", "ext_rd_beats"],
    ),
}


def defines(npu: str) -> list[str]:
    board, macro, fast, _ = NPUS[npu]
    return [
        f"-DHIL_BOARD_{board}=1",
        f"-D{macro}=1",
        f"-DHIL_NPU_FAST_MEMORY_SIZE={fast}",
        "-DHIL_ETHOS_U=1",
        f"-I{FAKE_DRIVER / 'include'}",
        f"-I{SOURCE}",
    ]


def symbols(path: Path) -> dict[str, tuple[int, str]]:
    out = subprocess.run(
        ["arm-none-eabi-nm", str(path)], capture_output=True, text=True, check=True
    ).stdout
    return {
        m[3]: (int(m[1], 16), m[2]) for m in re.finditer(r"^([0-9a-f]+) (\w) (\S+)$", out, re.M)
    }


@pytest.mark.skipif(ARM_GCC is None, reason="needs gcc-arm-none-eabi (make setup installs it)")
@pytest.mark.parametrize("npu", sorted(NPUS))
def test_ethos_u_glue_compiles_against_the_documented_driver_api(npu: str, tmp_path: Path) -> None:
    """The glue and the platform files it changes, for the M55 as the corstone presets build
    them, against declarations of exactly the driver API the glue uses: a wrong name, type
    or callback signature fails here."""
    sources = [
        GLUE / "npu_start.c",
        GLUE / "npu_pmu.c",
        SOURCE / "platform" / "cortex_m" / "startup.c",
        SOURCE / "platform" / "cortex_m" / "platform_cortex_m.c",
    ]
    found: dict[str, tuple[int, str]] = {}
    for source in sources:
        obj = tmp_path / f"{source.stem}.o"
        done = subprocess.run(
            [
                "arm-none-eabi-gcc",
                *ARM_CPU,
                "-std=gnu11",
                "-O2",
                *WARNINGS,
                *defines(npu),
                "-c",
                str(source),
                "-o",
                str(obj),
            ],
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, f"{source.name}:\n{done.stderr}"
        found.update(symbols(obj))
    for name in (
        "hil_npu_start",
        "hil_npu_irq_handler",
        "EthosUBackend_execute_begin",
        "ethosu_inference_begin",
        "ethosu_inference_end",
    ):
        assert found[name][1] == "T", name
    assert found["ethosu_fast_scratch"][1] in "BD"  # what the delegate passes as region 2
    assert ("fast_memory" in found) == (NPUS[npu][2] > 0)  # the U85's arena (Dedicated_Sram)


def ethos_u_spec(tmp_path: Path) -> DeviceSpec:
    """qemu-m55 running the corstone-300 runner, echo engine, with the glue and stub driver."""
    (tmp_path / "qemu-corstone-ethos-u.yaml").write_text(f"""
name: qemu-corstone-ethos-u
kind: serial
description: corstone-300 runner with the Ethos-U glue and stub driver, on QEMU mps3-an547
recipes: [portable]
latency: {{timing: emulated}}
memory: {{}}
connection:
  virtual: qemu-mps3-an547
  firmware:
    preset: corstone-300
    defines: {{HIL_ENGINE_EXECUTORCH: "OFF", HIL_ETHOS_U: "ON", ETHOSU_DRIVER_ROOT: "{FAKE_DRIVER}"}}
  reply_timeout_s: 5.0
  bytes_per_s: 10000
""")
    return DeviceRegistry.from_dirs([tmp_path]).get("qemu-corstone-ethos-u")


@pytest.mark.skipif(
    ARM_GCC is None or shutil.which("qemu-system-arm") is None,
    reason="needs gcc-arm-none-eabi and qemu-system-arm (make setup installs them)",
)
def test_the_corstone_runner_with_the_glue_links_wires_the_npu_interrupt_and_boots(
    tmp_path: Path,
) -> None:
    """The CMake wiring (HIL_ETHOS_U, ETHOSU_DRIVER_ROOT built as the driver library) links a
    runner whose vector 16 + 56 is the NPU's handler; under QEMU it starts the (stub) driver,
    says so on its log console, and then serves the link as before."""
    spec = ethos_u_spec(tmp_path)
    runner, board = prepare_board(spec)
    assert runner is not None
    image = runner.binary
    table = symbols(image)
    vectors = tmp_path / "vectors.bin"
    subprocess.run(
        ["arm-none-eabi-objcopy", "-O", "binary", "-j", ".vectors", str(image), str(vectors)],
        check=True,
    )
    assert table["hil_vectors"][0] == 0x10000000  # the Corstone-300 boots from ITCM
    (vector,) = struct.unpack_from("<I", vectors.read_bytes(), 4 * (16 + 56))
    assert vector == table["hil_npu_irq_handler"][0] | 1  # a Thumb entry

    url = board.start()
    try:
        link, client = client_on(spec, url)
        try:
            info = client.hello()
        finally:
            link.close()
        log = board.log_tail(40)
    finally:
        board.stop()
    assert info.platform == "cortex-m55/corstone-300" and info.engine_name == "echo"
    assert "ethos-u: NPU at 0x48102000 started, interrupt 56, fast memory 0 bytes" in log, log


@pytest.fixture(scope="module", params=sorted(NPUS))
def harness(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[str, Path]:
    """tests/fakes/ethosu_api/harness.c with the glue and the stub driver, for this CPU."""
    compiler = shutil.which("cc")
    if compiler is None:
        pytest.skip("needs a C compiler for this machine (cc)")
    npu = str(request.param)
    binary = tmp_path_factory.mktemp(f"harness-{npu}") / "harness"
    done = subprocess.run(
        [
            compiler,
            "-std=c11",
            *WARNINGS,
            *defines(npu),
            str(FAKE_DRIVER / "harness.c"),
            str(FAKE_DRIVER / "stubs.c"),
            str(GLUE / "npu_start.c"),
            str(GLUE / "npu_pmu.c"),
            "-o",
            str(binary),
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    return npu, binary


def run(binary: Path, what: str) -> list[str]:
    done = subprocess.run([str(binary), what], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_the_pmu_line_is_what_hil_fvp_pmu_parses(harness: tuple[str, Path]) -> None:
    """Around one inference: the PMU is enabled with the cycle counter and four event counters,
    the cycle counter gated from NPU active to NPU idle; afterwards one LOG line (info) that
    hil/fvp/pmu.py reads back exactly, 64-bit cycle count included; then the PMU is off."""
    npu, binary = harness
    begin, line, end = run(binary, "pmu")
    events = {
        "u55": "NPU_ACTIVE AXI0_RD_DATA_BEAT_RECEIVED AXI0_WR_DATA_BEAT_WRITTEN "
        "AXI1_RD_DATA_BEAT_RECEIVED",
        "u85": "NPU_ACTIVE SRAM_RD_DATA_BEAT_RECEIVED SRAM_WR_DATA_BEAT_WRITTEN "
        "EXT_RD_DATA_BEAT_RECEIVED",
    }[npu]
    assert begin == (
        f"begin: enabled 1 counters 0x8000000f cycles from NPU_ACTIVE to NPU_IDLE events {events}"
    )
    counts = {name: 1000 * (i + 1) for i, name in enumerate(NPUS[npu][3])}
    assert line == "log 1: ethos-u pmu: cycles=12345678901 " + " ".join(  # 1: HIL_LOG_INFO
        f"{name}={count}" for name, count in counts.items()
    )
    invocation = pmu.parse_line(line.removeprefix("log 1: "))
    assert invocation is not None
    assert dict(invocation.counts) == {"cycles": 12345678901, **counts}
    assert end == "end: enabled 0"


def test_a_failed_npu_start_is_logged_and_an_npu_delegate_faults_instead_of_waiting(
    harness: tuple[str, Path],
) -> None:
    """ethosu_init refusing the NPU is an error line at boot; the runner goes on, and when an
    NPU delegate then runs it gets a second error line and a fault (which the runner reports
    to the host as a crash) instead of waiting forever for a driver."""
    _, binary = harness
    lines = run(binary, "failed-start")
    assert lines[0].startswith("log 3: ethos-u: ethosu_init refused the NPU at 0x")
    assert "(error -3)" in lines[0]
    assert lines[1] == "start: -3"
    assert lines[2].startswith(
        "log 3: ethos-u: an NPU delegate was asked to run, but the NPU "
        "did not start at boot (error -3)"
    )
    assert lines[3:] == ["fault"]


def test_a_start_that_faulted_is_not_tried_again_after_the_reset(
    harness: tuple[str, Path],
) -> None:
    """A start that faults (a wrong NPU address is a bus fault; the handler resets) leaves a
    mark in memory a reset keeps: the next boot logs why and skips the start, instead of
    faulting and resetting forever."""
    _, binary = harness
    lines = run(binary, "faulted-start")
    assert lines[0] == "fault"
    assert lines[1].startswith("log 3: ethos-u: the last start of the NPU at 0x")
    assert "faulted" in lines[1] and "not starting it again" in lines[1]
    assert lines[2] == "start after the reset: -1"
