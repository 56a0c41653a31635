"""pytester runs the plugin in this process; its module snapshot drops modules first imported
inside a run, and torch cannot register its operator libraries twice. So the exporter's lazily
imported modules are imported once here, before any in-process run."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from hil import Case, seeded
from hil.devices import DeviceRegistry
from hil.session import Session


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
