"""vgf-emu: the ML SDK for Vulkan wheels, the Vulkan loader and device, and the three layers."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator

from hil.devices import DeviceSpec
from hil.doctor import NOTE, OK, Finding, finding_from
from hil.doctor.checks import package
from hil.vgf import environment

SDK_PACKAGES = (
    ("model_converter", "ai-ml-sdk-model-converter"),
    ("scenario_runner_py", "ai-ml-sdk-scenario-runner"),
    ("emulation_layer", "ai-ml-emulation-layer-for-vulkan"),
    ("vgf_lib", "ai-ml-sdk-vgf-library"),
)


def check_vgf(spec: DeviceSpec) -> Iterator[Finding]:
    for module, distribution in SDK_PACKAGES:
        yield package(module, distribution, environment.ML_SDK_FIX)
    yield finding_from("Vulkan loader and drivers", _drivers)
    yield _device()
    yield finding_from("ML emulation layers", _emulation_layers)
    yield finding_from("validation layer", lambda: str(environment.find_layers().validation))


def _drivers() -> str:
    icds = environment.check_loader_and_device()
    return "drivers: " + ", ".join(p.name.removesuffix(".json") for p in icds)


def _emulation_layers() -> str:
    layers = environment.find_layers()
    return (
        f"{environment.GRAPH_LAYER} above {environment.TENSOR_LAYER} "
        f"(stacked from {layers.graph.parent}; one folder each at run time)"
    )


def _device() -> Finding:
    """The device the loader offers, by vulkaninfo (Debian's vulkan-tools) when it is there."""
    vulkaninfo = shutil.which("vulkaninfo")
    if vulkaninfo is None:
        return Finding(
            "Vulkan device",
            NOTE,
            "not probed (no vulkaninfo): the first run names it",
            "apt-get install vulkan-tools, to see it here",
        )
    try:
        done = subprocess.run(
            [vulkaninfo, "--summary"], capture_output=True, text=True, timeout=30, check=False
        )
    except subprocess.TimeoutExpired:
        return Finding("Vulkan device", NOTE, "vulkaninfo did not answer in 30 s")
    names = [
        line.split("=", 1)[1].strip()
        for line in done.stdout.splitlines()
        if line.strip().startswith("deviceName")
    ]
    api = next(
        (
            line.split("=", 1)[1].strip()
            for line in done.stdout.splitlines()
            if line.strip().startswith("apiVersion")
        ),
        "",
    )
    if not names:
        return Finding(
            "Vulkan device",
            NOTE,
            "vulkaninfo lists no device: "
            + (done.stderr.strip().splitlines() or ["(no message)"])[-1],
            environment.DEBIAN_FIX,
        )
    return Finding("Vulkan device", OK, ", ".join(names) + (f" (Vulkan {api})" if api else ""))
