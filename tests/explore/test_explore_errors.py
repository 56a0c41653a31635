"""Bad input to `hil explore`: each a typed HilError that says what to do.

The viewer's failures are made real, not mocked: a tool venv whose commands fail the way a
broken install fails, and a package index that cannot be reached.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import stat
from pathlib import Path

import pytest
from explore_paths import HERE

from hil.artifacts.pte_program import read_program
from hil.cli import main
from hil.devices import DeviceRegistry
from hil.errors import (
    ArtifactMissing,
    PortInUse,
    ProgramUnreadable,
    UsageError,
    ViewerFailed,
    ViewerMissing,
)
from hil.explore import server
from hil.explore.command import prepare
from hil.explore.source import Source, from_case, from_path
from hil.explore.viewer import REQUIREMENTS, STAMP, Viewer


def case_source(
    spec: str,
    target: str,
    recipe: str | None,
    registry: DeviceRegistry,
    cache: Path,
    allow_export: bool = True,
) -> Source:
    return from_case(
        spec,
        target,
        recipe,
        registry=registry,
        cache_dir=cache,
        suites_root=HERE,
        allow_export=allow_export,
        progress=print,
    )


def test_a_case_never_exported_is_refused_with_how_to_export_it(
    repo_devices: DeviceRegistry, tmp_path: Path
) -> None:
    with pytest.raises(ArtifactMissing) as raised:
        case_source("explore_models:SMALL", "host", "portable", repo_devices, tmp_path, False)
    error = raised.value
    assert "has never been exported for host with portable" in error.message
    assert "run without --no-export" in (error.fix or "")
    assert "pytest suites -k explore_small --target=host" in (error.fix or "")
    assert not (tmp_path / "artifacts").exists() or not any((tmp_path / "artifacts").iterdir())


def test_the_command_line_says_no_export_and_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(HERE.parents[1])  # devices/ of the repo
    status = main(
        [
            "explore",
            "explore_models:SMALL",
            "--target",
            "host",
            "--recipe",
            "portable",
            "--no-export",
            "--suites",
            str(HERE),
            "--hil-cache-dir",
            str(tmp_path),
            "--viewer-venv",
            str(tmp_path / "no-viewer"),
        ]
    )
    err = capsys.readouterr().err
    assert status == 2
    assert "has never been exported" in err and "fix: run without --no-export" in err


def test_unknown_cases_targets_and_recipes_are_usage_errors(
    repo_devices: DeviceRegistry, tmp_path: Path
) -> None:
    with pytest.raises(UsageError, match=r"not a hil\.Case"):
        case_source("explore_models:TwoDelegates", "u85-ref", None, repo_devices, tmp_path)
    with pytest.raises(UsageError, match="unknown target 'u99-ref'"):
        case_source("explore_models:SMALL", "u99-ref", None, repo_devices, tmp_path)
    with pytest.raises(UsageError, match="has no recipe 'ethos-u'"):
        case_source("explore_models:SMALL", "host", "ethos-u", repo_devices, tmp_path)
    with pytest.raises(UsageError, match="does not run on host") as raised:
        case_source("explore_models:TWO_DELEGATES", "host", None, repo_devices, tmp_path)
    assert raised.value.fix


def test_a_misspelt_suite_case_gets_suggestions(
    repo_devices: DeviceRegistry, tmp_path: Path
) -> None:
    with pytest.raises(UsageError, match="no suite case is called") as raised:
        from_case(
            "mobilenet_v2_lr",
            "u85-ref",
            None,
            registry=repo_devices,
            cache_dir=tmp_path,
            suites_root=HERE.parents[1],
            allow_export=False,
            progress=print,
        )
    assert "mobilenet_v2_lrn" in (raised.value.fix or "")


def test_a_case_needs_a_target(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explore", "mobilenet_v2_lrn"]) == 2
    assert "--target u85-ref" in capsys.readouterr().err


def test_a_file_that_is_not_a_pte_is_refused(tmp_path: Path) -> None:
    junk = tmp_path / "notes.pte"
    junk.write_bytes(b"this is not a flatbuffer at all")
    with pytest.raises(ProgramUnreadable, match="not an ExecuTorch program") as raised:
        read_program(junk)
    assert ".pte" in (raised.value.fix or "")
    truncated = tmp_path / "cut.pte"
    truncated.write_bytes(b"\x1c\x00\x00\x00ET12" + b"\x00" * 8)
    with pytest.raises(ProgramUnreadable, match="ExecuTorch cannot read it"):
        read_program(truncated)


def test_a_pte_without_delegates_opens_as_a_cpu_graph(
    small_portable: Source, viewer: Viewer, tmp_path: Path
) -> None:
    shown = prepare(small_portable, viewer, tmp_path, print)
    assert shown.notes == ("no delegates: every operator runs on the CPU",)
    graphs = json.loads(shown.graphs.read_text())["graphs"]
    assert [g["id"] for g in graphs] == ["forward"]
    labels = {n["label"] for n in graphs[0]["nodes"]}
    assert any("convolution" in label for label in labels), labels


def test_an_ethos_u_pte_outside_its_artifact_opens_unexpanded(
    two_delegates: Source, viewer: Viewer, tmp_path: Path
) -> None:
    alone = tmp_path / "alone.pte"
    shutil.copy(two_delegates.pte, alone)
    shown = prepare(from_path(alone), viewer, tmp_path / "work", print)
    assert "shown unexpanded" in shown.notes[0]
    graphs = json.loads(shown.graphs.read_text())["graphs"]
    delegate_graphs = [g for g in graphs if "::" in g["id"]]
    assert len(delegate_graphs) == 2 and all(not g["nodes"] for g in delegate_graphs)
    assert [p.stem for p in shown.overlays] == []  # no artifact.json: no partition report


def test_a_port_in_use_is_refused_before_anything_starts(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind((server.HOST, 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(PortInUse, match=f"port {port} on 127.0.0.1 is in use") as raised:
            server.start(Viewer(tmp_path / "unused"), port, tmp_path / "log", print)
    assert "--port" in (raised.value.fix or "")
    assert not (tmp_path / "log").exists()


def test_a_missing_viewer_is_refused_with_the_install_command(tmp_path: Path) -> None:
    with pytest.raises(ViewerMissing, match="not installed") as raised:
        Viewer(tmp_path / "venv").ensure(print, allow_install=False)
    fix = raised.value.fix or ""
    assert "make setup" in fix and "pip install" in fix and REQUIREMENTS[0] in fix


def test_the_command_line_reports_a_missing_viewer(
    two_delegates: Source, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status = main(
        [
            "explore",
            str(two_delegates.pte),
            "--no-install",
            "--no-browser",
            "--viewer-venv",
            str(tmp_path / "none"),
        ]
    )
    assert status == 2
    assert "Model Explorer is not installed in" in capsys.readouterr().err


def test_an_unreachable_package_index_fails_the_install_with_pips_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in {
        "PIP_INDEX_URL": "http://127.0.0.1:9/simple",
        "PIP_RETRIES": "0",
        "PIP_TIMEOUT": "2",
        "PIP_CONFIG_FILE": os.devnull,
    }.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("PIP_FIND_LINKS", raising=False)
    said: list[str] = []
    with pytest.raises(ViewerMissing, match="pip install for the viewer failed") as raised:
        Viewer(tmp_path / "venv").ensure(said.append)
    assert "PyPI is reachable" in (raised.value.fix or "")
    assert said[0].startswith("installing Model Explorer into")
    assert not Viewer(tmp_path / "venv").installed()


def broken_viewer(folder: Path, server_script: str, python_script: str = "exit 1") -> Viewer:
    """A tool venv that claims the pinned packages but whose commands fail."""
    (folder / "bin").mkdir(parents=True)
    for name, body in (("model-explorer", server_script), ("python", python_script)):
        path = folder / "bin" / name
        path.write_text(f"#!/bin/sh\n{body}\n")
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    (folder / STAMP).write_text(json.dumps({"requirements": list(REQUIREMENTS)}))
    viewer = Viewer(folder)
    assert viewer.installed()
    return viewer


def test_a_viewer_that_dies_at_start_is_reported_with_its_last_words(tmp_path: Path) -> None:
    viewer = broken_viewer(
        tmp_path / "venv", 'echo "ModuleNotFoundError: No module named flask"; exit 1'
    )
    port = server.free_port(18900)
    assert port is not None
    with pytest.raises(ViewerFailed, match="exited with status 1") as raised:
        server.start(viewer, port, tmp_path / "viewer.log", print)
    assert "No module named flask" in str(raised.value)
    assert "reinstalls the viewer" in (raised.value.fix or "")


def test_a_viewer_that_never_answers_is_stopped_after_the_wait(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    viewer = broken_viewer(tmp_path / "venv", "echo starting; exec sleep 60")
    monkeypatch.setattr(server, "START_TIMEOUT_S", 1.5)
    port = server.free_port(18920)
    assert port is not None
    with pytest.raises(ViewerFailed, match="did not answer") as raised:
        server.start(viewer, port, tmp_path / "viewer.log", print)
    assert "starting" in raised.value.log_tail


def test_a_conversion_that_fails_is_reported(two_delegates: Source, tmp_path: Path) -> None:
    viewer = broken_viewer(
        tmp_path / "venv", "exit 0", 'echo "ValueError: bad delegate" >&2; exit 1'
    )
    with pytest.raises(ViewerFailed, match="could not convert") as raised:
        viewer.convert(two_delegates.pte, [], "x", tmp_path / "out.json")
    assert "bad delegate" in raised.value.log_tail
