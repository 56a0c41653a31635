"""Fixtures for the `hil explore` tests: the viewer, Chromium, and small exported artifacts.

The viewer is Model Explorer in its tool venv; `make setup` installs it (`python -m hil.explore
install-viewer`, about 20 s and 690 MB from PyPI). Tests that need it, or Chromium, skip with
the reason and the fix when they are missing.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from hil.devices import DeviceRegistry
from hil.explore.command import Exploration, prepare
from hil.explore.source import Source, from_case
from hil.explore.viewer import DEFAULT_VENV, Viewer

sys.path.insert(0, str(Path(__file__).resolve().parent))  # explore_models, browser, paths

from explore_paths import HERE, REPO


def quiet(message: str) -> None:
    print(message)


@pytest.fixture(scope="session")
def viewer() -> Viewer:
    venv = Path(os.environ.get("HIL_EXPLORER_VENV", REPO / DEFAULT_VENV))
    found = Viewer(venv)
    if not found.installed():
        pytest.skip(
            f"Model Explorer is not installed in {venv}: run `make setup` (or "
            f"`.venv/bin/python -m hil.explore install-viewer --venv {venv}`)"
        )
    return found


@pytest.fixture(scope="session")
def chromium() -> str:
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    if binary is None:
        pytest.skip("chromium is not installed: apt-get install chromium (make test does this)")
    return binary


@pytest.fixture(scope="session")
def explore_cache(shared_cache: Path) -> Path:
    return shared_cache


def export(
    case: str, target: str, recipe: str | None, registry: DeviceRegistry, cache: Path
) -> Source:
    return from_case(
        f"explore_models:{case}",
        target,
        recipe,
        registry=registry,
        cache_dir=cache,
        suites_root=HERE,
        allow_export=True,
        progress=quiet,
    )


@pytest.fixture(scope="session")
def two_delegates(repo_devices: DeviceRegistry, explore_cache: Path) -> Source:
    """The two-delegate model on u85-ref (Ethos-U85-256), exported once per test run."""
    return export("TWO_DELEGATES", "u85-ref", None, repo_devices, explore_cache)


@pytest.fixture(scope="session")
def small_portable(repo_devices: DeviceRegistry, explore_cache: Path) -> Source:
    """A model without delegates: the portable recipe on host."""
    return export("SMALL", "host", "portable", repo_devices, explore_cache)


@pytest.fixture(scope="session")
def small_cortex_m(repo_devices: DeviceRegistry, explore_cache: Path) -> Source:
    """CMSIS-NN kernels instead of delegates: the cortex-m recipe."""
    return export("SMALL", "cortex-m55-ref", None, repo_devices, explore_cache)


@pytest.fixture(scope="session")
def explored(
    two_delegates: Source, viewer: Viewer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Exploration]:
    yield prepare(two_delegates, viewer, tmp_path_factory.mktemp("explore"), quiet)
