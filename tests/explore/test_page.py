"""`hil explore` as a person uses it: the command serves the page, Chromium shows it.

The command runs for real (a subprocess, the viewer's own server); the page is loaded in
headless Chromium. Checked: the .pte graph with the partition overlay, a delegate's TOSA graph
with Vela's per-layer cycles and a hand-made per-node error file, the server listening on
127.0.0.1 only, and a clean stop. Screenshots are kept in .hil/test-artifacts/ for people.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from browser import ExplorerBrowser, Page
from explore_paths import ARTIFACTS
from explore_server import explore, with_graph

from hil.artifacts.tosa_graph import read_tosa
from hil.explore import server
from hil.explore.node_errors import FORMAT
from hil.explore.source import Source
from hil.explore.viewer import Viewer


@dataclass(frozen=True)
class Served:
    url: str
    port: int
    process: subprocess.Popen[str]
    label: str


def error_file(two_delegates: Source, folder: Path) -> Path:
    graph = read_tosa(two_delegates.folder / "delegates" / "delegate_1" / "out.tosa")  # type: ignore[operator]
    conv = next(op for op in graph.ops if op.op == "CONV2D")
    path = folder / "node-errors.json"
    path.write_text(
        json.dumps(
            {
                "format": FORMAT,
                "pte_sha256": two_delegates.sha256,
                "metrics": {"max_abs_steps": {"label": "max error (steps)", "limit": 1}},
                "nodes": [
                    {"delegate": "delegate_1", "op": conv.index, "errors": {"max_abs_steps": 5}},
                    {"delegate": "delegate_0", "op": 5, "errors": {"max_abs_steps": 0}},
                ],
                "first_divergent": {"delegate": "delegate_1", "op": conv.index},
            }
        )
    )
    return path


@pytest.fixture(scope="module")
def served(
    two_delegates: Source,
    viewer: Viewer,
    chromium: str,
    explore_cache: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Served]:
    work = tmp_path_factory.mktemp("explore-cli")
    with explore(
        "explore_models:TWO_DELEGATES",
        "u85-ref",
        cache=explore_cache,
        viewer_venv=viewer.venv,
        work=work,
        first_port=18600,
        extra=("--errors", str(error_file(two_delegates, work))),
    ) as running:
        yield Served(running.url, running.port, running.process, two_delegates.label)


@pytest.fixture(scope="module")
def browser(chromium: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ExplorerBrowser]:
    with ExplorerBrowser(chromium, tmp_path_factory.mktemp("profile")) as b:
        yield b


def shot(page: Page, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    time.sleep(2)  # the graph animates into place
    return page.screenshot(ARTIFACTS / name)


def test_the_page_shows_the_pte_graph_with_the_partition_overlay(
    served: Served, browser: ExplorerBrowser
) -> None:
    page = browser.page(with_graph(served.url, "forward", served.label))
    text = page.wait_for_text(
        "hil partition",
        "EthosUBackend",
        "aten::avg_pool3d",
        "CPU fallback, no CPU kernel",
        "NPU (delegate_1)",
    )
    assert served.label in text
    for overlay in (
        "Vela NPU cycles (estimated)",
        "hil error - max error (steps)",
        "hil first divergent operator",
    ):
        assert overlay in text
    assert shot(page, "explore-pte-graph.png").stat().st_size > 10_000


def test_the_page_shows_a_delegates_tosa_graph_with_hils_overlays(
    served: Served, browser: ExplorerBrowser
) -> None:
    """The URL hil prints opens where the error file's first divergent operator is."""
    graph = f"{served.label}.pte::forward_0_5"
    page = browser.page(served.url)
    text = page.wait_for_text(graph, "CONV2D", "RESCALE", "first divergent", "NODE INFO")
    assert "op name\nCONV2D" in text.replace("\t", "").replace("\n\n", "\n")
    assert "aten::avg_pool3d" not in text  # the TOSA graph, not the .pte's
    shot(page, "explore-delegate-first-divergent.png")
    # switch the colouring to Vela's cycles: click that overlay's row
    clicked = page.evaluate("""(() => {
        const row = [...document.querySelectorAll('*')].find(e => e.children.length === 0 &&
            e.textContent.trim() === 'Vela NPU cycles (estimated).json');
        if (!row) return false; row.click(); return true; })()""")
    assert clicked
    text = page.wait_for_text("Vela NPU cycles (estimated).json")
    shot(page, "explore-delegate-vela-cycles.png")


def listeners(port: int) -> list[str]:
    """Local addresses (as /proc/net/tcp spells them) listening on `port`."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            address, hex_port = local.rsplit(":", 1)
            if state == "0A" and int(hex_port, 16) == port:  # LISTEN
                found.append(address)
    return found


def test_the_server_listens_on_loopback_only(served: Served) -> None:
    assert listeners(served.port) == ["0100007F"]  # 127.0.0.1, nothing else


def test_the_command_stops_the_server_on_sigterm(served: Served) -> None:
    served.process.send_signal(signal.SIGTERM)
    assert served.process.wait(timeout=30) == 0
    deadline = time.monotonic() + 10
    while listeners(served.port):
        assert time.monotonic() < deadline, "the viewer outlived hil explore"
        time.sleep(0.2)
    assert server.port_free(served.port)
