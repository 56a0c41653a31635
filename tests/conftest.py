"""Shared fixtures for hil's own tests."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import outer_env  # noqa: F401  (first: it reads the environment before fixtures change it)
import pytest

from hil.devices import DeviceRegistry
from hil.session import Session

REPO = Path(__file__).resolve().parent.parent

pytest_plugins = ["ci_skips"]  # under CI, a skip for a component CI installs fails


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """This run of hil's own tests gets a results folder of its own. Importing hil's library
    starts hil in it, and a run holds its results folder to the end (hil.results.lock): in
    the checkout's .hil/results, two runs of these tests at once would refuse each other, and
    each would move a `pytest suites` run's results into earlier/. Nothing here is kept."""
    if config.getoption("hil_results_dir", None) or os.environ.get("HIL_RESULTS_DIR"):
        return
    folder = tempfile.mkdtemp(prefix="hil-own-tests-results-")
    config.option.hil_results_dir = Path(folder)
    config.add_cleanup(lambda: shutil.rmtree(folder, ignore_errors=True))


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


@pytest.fixture(scope="session", autouse=True)
def no_sdk_of_this_checkout(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Tests see no SDK unless they make one: an SDK a developer built into .hil/sdk would
    otherwise turn every echo build of a bare-metal runner into an ExecuTorch one."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HIL_SDK_DIR", str(tmp_path_factory.getbasetemp() / "no-sdk"))
        yield
