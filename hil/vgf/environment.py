"""What running VGF here needs, found without running anything, and the Vulkan loader setup.

The ML SDK comes as Python wheels (pinned in pyproject.toml): the model-converter (TOSA -> VGF,
used by ExecuTorch's VGF lowering), the scenario runner (its `scenario_runner_py` module runs a
scenario in-process), the ML emulation layer (two Vulkan layers, Graph and Tensor) and the VGF
library (`vgf_dump` writes a VGF file's scenario template). The Vulkan loader, a Vulkan device
(Mesa's lavapipe does) and Khronos' validation layer come from Debian packages.

The layer stack, top (the application) to bottom (the driver):

    VK_LAYER_ML_Graph_Emulation    VK_ARM_data_graph: runs a graph pipeline as compute work
    VK_LAYER_ML_Tensor_Emulation   VK_ARM_tensors: tensors as buffers and images
    VK_LAYER_KHRONOS_validation    every call that reaches the device, checked

Two measured pitfalls decide that order and how it is set up:
* Debian 12's loader (1.3.239) stacks layers in the order it finds their manifests, not the order
  of VK_INSTANCE_LAYERS; with both ML manifests in one folder the Tensor layer lands above the
  Graph layer and every device creation fails (ErrorFeatureNotPresent). So each manifest gets a
  folder of its own, listed in stack order in VK_LAYER_PATH. The copies carry absolute library
  paths, so no LD_LIBRARY_PATH is needed.
* Debian 12's validation layer (1.3.239) predates VK_ARM_tensors: above the ML layers it
  rejects their structures (VUID-VkDeviceCreateInfo-pNext-pNext, "unknown VkStructureType") and
  device creation fails. Below them it checks every Vulkan call the emulation makes on the
  device, which is where a real misuse would corrupt results. ExecuTorch's CI, with a newer
  Vulkan SDK, puts it on top (pytorch/executorch#22841).
"""

from __future__ import annotations

import importlib.util
import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from hil.errors import TargetUnavailable

GRAPH_LAYER = "VK_LAYER_ML_Graph_Emulation"
TENSOR_LAYER = "VK_LAYER_ML_Tensor_Emulation"
VALIDATION_LAYER = "VK_LAYER_KHRONOS_validation"
VALIDATION_MANIFEST = "VkLayer_khronos_validation.json"
SYSTEM_LAYER_DIRS = (
    "/usr/share/vulkan/explicit_layer.d",
    "/usr/local/share/vulkan/explicit_layer.d",
    "/etc/vulkan/explicit_layer.d",
)
SYSTEM_ICD_DIRS = ("/usr/share/vulkan/icd.d", "/usr/local/share/vulkan/icd.d", "/etc/vulkan/icd.d")
LOADER_NAMES = ("libvulkan.so.1", "libvulkan.so")
ML_SDK_FIX = (
    "install the ML SDK for Vulkan wheels into hil's venv (make setup does: "
    "ai-ml-sdk-model-converter, ai-ml-sdk-scenario-runner, ai-ml-emulation-layer-for-vulkan, "
    "ai-ml-sdk-vgf-library, pinned in pyproject.toml's [vgf] extra)"
)
DEBIAN_FIX = (
    "install a Vulkan loader, a device and the validation layer: sudo apt-get install "
    "libvulkan1 mesa-vulkan-drivers vulkan-validationlayers (make setup does, as root)"
)


def _package_dir(module: str, what: str) -> Path:
    spec = importlib.util.find_spec(module)
    if spec is None or (not spec.submodule_search_locations and not spec.origin):
        raise TargetUnavailable(
            f"{what} is not installed (no Python module {module!r})", fix=ML_SDK_FIX
        )
    if spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations)))
    return Path(str(spec.origin)).parent


def model_converter() -> Path:
    """The ML SDK's model-converter binary (ExecuTorch's VGF lowering runs it)."""
    path = _package_dir("model_converter", "the ML SDK model-converter") / "binaries/bin"
    return _executable(path / "model-converter", "the ML SDK model-converter")


def vgf_dump() -> Path:
    """The VGF library's vgf_dump binary (it writes a VGF file's scenario template)."""
    path = _package_dir("vgf_lib", "the ML SDK VGF library") / "binaries/bin"
    return _executable(path / "vgf_dump", "the ML SDK VGF library's vgf_dump")


def _executable(path: Path, what: str) -> Path:
    if not path.is_file():
        raise TargetUnavailable(f"{what} is missing: {path} does not exist", fix=ML_SDK_FIX)
    return path


def scenario_runner_module() -> Path:
    """Where the scenario runner's Python module (`scenario_runner_py`) is."""
    spec = importlib.util.find_spec("scenario_runner_py")
    if spec is None or spec.origin is None:
        raise TargetUnavailable(
            "the ML SDK scenario runner's Python module (scenario_runner_py) is not installed",
            fix=ML_SDK_FIX,
        )
    return Path(spec.origin)


@dataclass(frozen=True)
class LayerManifests:
    """The three layer manifests hil stacks, as found (not yet copied)."""

    graph: Path
    tensor: Path
    emulation_libs: Path  # the folder of libVkLayer_Graph.so and libVkLayer_Tensor.so
    validation: Path


def find_layers() -> LayerManifests:
    deploy = _package_dir("emulation_layer", "the ML emulation layer for Vulkan") / "deploy"
    manifests = deploy / "share" / "vulkan" / "explicit_layer.d"
    graph, tensor = manifests / "VkLayer_Graph.json", manifests / "VkLayer_Tensor.json"
    for manifest in (graph, tensor):
        if not manifest.is_file():
            raise TargetUnavailable(
                f"the ML emulation layer's manifest {manifest} is missing", fix=ML_SDK_FIX
            )
    validation = next(
        (
            Path(d) / VALIDATION_MANIFEST
            for d in SYSTEM_LAYER_DIRS
            if (Path(d) / VALIDATION_MANIFEST).is_file()
        ),
        None,
    )
    if validation is None:
        raise TargetUnavailable(
            f"Khronos' Vulkan validation layer is not installed (no {VALIDATION_MANIFEST} in "
            f"{', '.join(SYSTEM_LAYER_DIRS)}): vgf-emu runs only with validation on",
            fix=DEBIAN_FIX,
        )
    return LayerManifests(graph, tensor, deploy / "lib", validation)


def check_loader_and_device() -> list[Path]:
    """The Vulkan loader must exist and at least one device driver (ICD) be registered; which
    device runs is the loader's choice, reported by the worker once it starts."""
    import ctypes.util

    if ctypes.util.find_library("vulkan") is None and not any(
        Path(d, n).exists()
        for d in ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib")
        for n in LOADER_NAMES
    ):
        raise TargetUnavailable("no Vulkan loader (libvulkan.so.1) on this machine", fix=DEBIAN_FIX)
    icds = sorted(p for d in SYSTEM_ICD_DIRS if Path(d).is_dir() for p in Path(d).glob("*.json"))
    if not icds:
        raise TargetUnavailable(
            f"no Vulkan device driver is registered (no ICD manifest in "
            f"{', '.join(SYSTEM_ICD_DIRS)}); a software device does",
            fix=DEBIAN_FIX,
        )
    return icds


@dataclass(frozen=True)
class Stack:
    """A prepared layer stack: the environment a Vulkan process needs, and the file where the
    validation layer writes what it reports."""

    env: dict[str, str]
    validation_log: Path


def prepare_stack(layers: LayerManifests, folder: Path) -> Stack:
    """Write one folder per layer manifest (in stack order) and the validation layer's settings
    into `folder`; the result's `env` goes to the process that creates the Vulkan instance."""
    folder = folder.resolve()
    folders = []
    for rank, (manifest, library) in enumerate(
        (
            (layers.graph, layers.emulation_libs),
            (layers.tensor, layers.emulation_libs),
            (layers.validation, None),
        ),
        start=1,
    ):
        target = folder / f"{rank}-{manifest.stem}"
        target.mkdir(parents=True, exist_ok=True)
        data = json.loads(manifest.read_text())
        if library is not None:  # absolute, so the loader needs no LD_LIBRARY_PATH
            data["layer"]["library_path"] = str(library / Path(data["layer"]["library_path"]).name)
            (target / manifest.name).write_text(json.dumps(data, indent=1))
        else:
            shutil.copy(manifest, target / manifest.name)
        folders.append(str(target))
    log = folder / "validation.log"
    settings = folder / "settings"
    settings.mkdir(exist_ok=True)
    (settings / "vk_layer_settings.txt").write_text(
        "khronos_validation.report_flags = error\n"
        "khronos_validation.debug_action = VK_DBG_LAYER_ACTION_LOG_MSG\n"
        f"khronos_validation.log_filename = {log}\n"
    )
    env = {
        "VK_LAYER_PATH": ":".join(folders),
        "VK_INSTANCE_LAYERS": ":".join((GRAPH_LAYER, TENSOR_LAYER, VALIDATION_LAYER)),
        "VK_LAYER_SETTINGS_PATH": str(settings),
    }
    return Stack(env, log)
