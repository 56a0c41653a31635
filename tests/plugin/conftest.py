"""pytester runs the plugin in this process; its module snapshot drops modules first imported
inside a run, and torch cannot register its operator libraries twice. So the exporter's lazily
imported modules (every recipe's, not only the host's: a later test in the same process may
export for an Ethos-U or Cortex-M target) are imported once here, before any in-process run."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
import torch

from hil import Case, seeded
from hil.devices import DeviceRegistry
from hil.session import Session

# The Arm and Cortex-M backends the host warm-up does not reach; each registers torch operator
# libraries when first imported.
LAZY_BACKEND_MODULES = (
    "executorch.backends.arm.ethosu",
    "executorch.backends.arm.quantizer",
    "executorch.backends.arm.tosa.backend",
    "executorch.backends.cortex_m.passes",
    "executorch.backends.cortex_m.quantizer.quantizer",
    "executorch.kernels.quantized",
)


@pytest.fixture(scope="session", autouse=True)
def exporter_imported(
    repo_devices: DeviceRegistry, shared_cache: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    case = Case("warmup", lambda: torch.nn.Linear(4, 2), seeded((1, 4)))
    with Session(
        devices=repo_devices, cache_dir=shared_cache, results_dir=tmp_path_factory.mktemp("r")
    ) as s:
        for recipe in repo_devices.get("host").recipe_names:
            s.check(case, "host", recipe)
    for module in LAZY_BACKEND_MODULES:
        importlib.import_module(module)
