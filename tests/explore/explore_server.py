"""`hil explore` started for real, as a person starts it: the command in a subprocess, its
URL read from its output, a stop with SIGTERM when the test is done."""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, unquote

from explore_paths import HERE, REPO

from hil.explore import server


@dataclass(frozen=True)
class Explore:
    url: str
    port: int
    process: subprocess.Popen[str]


@contextlib.contextmanager
def explore(
    model: str,
    target: str,
    *,
    cache: Path,
    viewer_venv: Path,
    work: Path,
    first_port: int,
    extra: Sequence[str] = (),
) -> Iterator[Explore]:
    """`hil explore MODEL --target TARGET` serving on a free port from `first_port`."""
    port = server.free_port(first_port)
    assert port is not None
    command = [
        *(sys.executable, "-m", "hil.cli", "explore", model, "--target", target),
        *("--suites", str(HERE), "--hil-cache-dir", str(cache)),
        *("--viewer-venv", str(viewer_venv), "--no-browser", "--port", str(port), *extra),
    ]
    env = {**os.environ, "HIL_EXPLORE_DIR": str(work), "PYTHONPATH": str(REPO)}
    process = subprocess.Popen(
        command, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        yield Explore(read_url(process, timeout=240), port, process)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=30)


def read_url(process: subprocess.Popen[str], timeout: float) -> str:
    assert process.stdout is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([process.stdout], [], [], 1.0)
        if ready:
            line = process.stdout.readline()
            if line.startswith("http://"):
                return line.strip()
        if process.poll() is not None:
            break
    process.kill()
    _, err = process.communicate()
    raise AssertionError(f"hil explore printed no URL (exit {process.returncode}):\n{err}")


def with_graph(url: str, graph: str, collection: str) -> str:
    """The page's URL with another graph of another collection selected."""
    base, data = url.split("?data=")
    state = json.loads(unquote(data))
    pane = state["uiState"]["paneStates"][0]
    pane["selectedGraphId"], pane["selectedCollectionLabel"] = graph, collection
    pane["selectedNodeId"] = ""
    return f"{base}?data={quote(json.dumps(state))}"
