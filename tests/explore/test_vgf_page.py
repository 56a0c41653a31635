"""`hil explore` on a VGF artifact (vgf-emu): the delegate shown expanded, in Chromium.

The viewer's PTE adapter expands a VGF delegate from the .pte's own payload through Arm's VGF
adapter; hil pairs the call with the delegate it kept (by the payload's sha256) and marks the
expanded graph's nodes in its partition overlay. The command runs for real and the page is
loaded in headless Chromium; the screenshot is kept in .hil/test-artifacts/ for people.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from browser import ExplorerBrowser
from explore_paths import HERE
from explore_server import explore, with_graph
from test_page import shot

from hil.artifacts.pte_program import read_program
from hil.devices import DeviceRegistry
from hil.errors import TargetUnavailable
from hil.explore.delegates import VGF_BACKEND
from hil.explore.source import from_case
from hil.explore.viewer import Viewer
from hil.targets import make_target

TARGET = "vgf-emu"


@pytest.fixture(scope="module")
def vgf_small(repo_devices: DeviceRegistry, explore_cache: Path) -> tuple[str, str]:
    """The small model exported by the vgf recipe: (label, the VGF call's node id)."""
    target = make_target(repo_devices.get(TARGET))
    try:
        target.provision()  # the ML SDK's converter is what the export needs too
    except TargetUnavailable as e:
        pytest.skip(f"{TARGET} unavailable: {e.message} (fix: {e.fix})")
    finally:
        target.teardown()
    source = from_case(
        "explore_models:SMALL",
        TARGET,
        "vgf",
        registry=repo_devices,
        cache_dir=explore_cache,
        suites_root=HERE,
        allow_export=True,
        progress=print,
    )
    (call,) = read_program(source.pte).calls_to(VGF_BACKEND)
    return source.label, call.instruction.node_id


@pytest.fixture(scope="module")
def served_vgf(
    vgf_small: tuple[str, str],
    viewer: Viewer,
    chromium: str,
    explore_cache: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[str]:
    with explore(
        "explore_models:SMALL",
        TARGET,
        cache=explore_cache,
        viewer_venv=viewer.venv,
        work=tmp_path_factory.mktemp("explore-vgf"),
        first_port=18700,
        extra=("--recipe", "vgf"),
    ) as running:
        yield running.url


def test_the_pte_graph_marks_the_vgf_delegate_call(
    served_vgf: str,
    vgf_small: tuple[str, str],
    chromium: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    label, _ = vgf_small
    with ExplorerBrowser(chromium, tmp_path_factory.mktemp("profile")) as browser:
        page = browser.page(with_graph(served_vgf, "forward", label))
        page.wait_for_text("hil partition", VGF_BACKEND, "GPU, VGF (delegate_0)")


def test_the_vgf_delegate_is_shown_expanded(
    served_vgf: str,
    vgf_small: tuple[str, str],
    chromium: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    label, node = vgf_small
    with ExplorerBrowser(chromium, tmp_path_factory.mktemp("profile")) as browser:
        page = browser.page(with_graph(served_vgf, f"{label}.pte::{node}", label))
        text = page.wait_for_text(f"{label}.pte::{node}", "CONV2D", "RESCALE")
        assert "VgfBackend" not in text.split(f"{label}.pte::{node}", 1)[-1][:40]
        assert shot(page, "explore-vgf-delegate.png").stat().st_size > 10_000
