"""Shared fixtures for hil's own tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from hil.devices import DeviceRegistry
from hil.session import Session

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def repo_devices() -> DeviceRegistry:
    return DeviceRegistry.from_dirs([REPO / "devices"])


@pytest.fixture(scope="session")
def shared_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One artifact cache for the whole test run, so tiny models export once."""
    return tmp_path_factory.mktemp("hil-cache")


@pytest.fixture
def session(repo_devices: DeviceRegistry, shared_cache: Path, tmp_path: Path) -> Session:
    with Session(
        devices=repo_devices, cache_dir=shared_cache, results_dir=tmp_path / "results"
    ) as s:
        yield s
