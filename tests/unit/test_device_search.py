"""Where device files are found (hil.device_search) and which are read at all (hil.trust),
on real folders: the project's own devices/ and never a parent's, named folders added before
the bundled files, an unrelated folder of YAML ignored, files others could write refused."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hil import cli
from hil.bundled import devices_dir
from hil.device_search import find_devices, project_root
from hil.devices import DeviceRegistry
from hil.errors import DeviceSpecError, UsageError

HOST = "name: {name}\nkind: host\nrecipes: [{recipes}]\n"
DEPLOYMENT = """apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec: {replicas: 2}
"""


def device(folder: Path, name: str, recipes: str = "portable") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.yaml"
    path.write_text(HOST.format(name=name, recipes=recipes))
    return path


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project (pyproject.toml) two levels down, the working directory a folder inside it."""
    root = tmp_path / "shared" / "project"
    (root / "src").mkdir(parents=True)
    (root / "pyproject.toml").write_text("[project]\nname = 'mine'\n")
    monkeypatch.chdir(root / "src")
    monkeypatch.delenv("HIL_DEVICES", raising=False)
    return root


def test_the_project_is_the_nearest_folder_with_a_marker(project: Path) -> None:
    assert project_root() == project
    (project / "src" / ".git").mkdir()
    assert project_root() == project / "src"


def test_a_devices_folder_beyond_the_project_is_never_read(project: Path) -> None:
    device(project.parent / "devices", "stray")  # what another user left in the shared folder
    found = find_devices()
    assert "stray" not in found.registry
    assert "host" in found.registry  # the bundled files
    assert found.folders == (devices_dir().resolve(),)


def test_without_a_marker_only_the_working_directory_is_the_project(tmp_path: Path) -> None:
    here = tmp_path / "a" / "b"
    here.mkdir(parents=True)
    device(tmp_path / "a" / "devices", "stray")
    root = project_root(here)
    assert root == here or here.is_relative_to(root)  # a marker above tmp_path, if any
    assert "stray" not in find_devices(here).registry


def test_the_projects_file_overrides_a_bundled_one_of_the_same_name(project: Path) -> None:
    path = device(project / "devices", "host", recipes="portable")
    found = find_devices()
    assert found.registry.get("host").source == path
    assert found.registry.get("host").recipe_names == ("portable",)
    assert "vboard" in found.registry  # the other bundled files stay


def test_named_folders_add_to_the_bundled_files_in_order(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    given, environment = tmp_path / "given", tmp_path / "environment"
    device(given, "mine")
    device(given, "host", recipes="xnnpack-fp32")
    device(environment, "host", recipes="portable")
    device(environment, "theirs")
    monkeypatch.setenv("HIL_DEVICES", str(environment))
    found = find_devices(given=[given])
    assert {"mine", "theirs", "vboard"} <= set(found.registry.names)
    assert found.registry.get("host").source == given / "host.yaml"  # --devices before $HIL_
    assert found.folders == (given, environment, devices_dir().resolve())
    device(project / "devices", "host")  # the project's own before both
    assert find_devices(given=[given]).registry.get("host").source == project / "devices/host.yaml"


def test_a_named_folder_that_is_missing_is_a_usage_error(project: Path, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"--hil-devices names .*nowhere, which is not a folder"):
        find_devices(given=[tmp_path / "nowhere"], option="--hil-devices")


def test_an_unrelated_devices_folder_is_ignored_with_one_line(project: Path) -> None:
    (project / "devices").mkdir()
    (project / "devices" / "web.yaml").write_text(DEPLOYMENT)
    (project / "devices" / "notes.yaml").write_text("- a list\n")
    said: list[str] = []
    found = find_devices(say=said.append)
    assert "host" in found.registry
    assert len(said) == 1
    assert said[0].startswith(f"ignoring {project / 'devices'}: none of its 2 YAML files")
    assert "web.yaml: keys apiVersion, kind, metadata" in said[0]


@pytest.mark.parametrize(
    "text",
    [
        "name: board\nkind: host\nrecipes: [portable]\nconection: {}\n",  # a misspelt key
        "name: board\nkind: hots\nrecipes: [portable]\n",  # a misspelt kind, hil's keys
        "name: board\nkind: serial\n",  # hil's kind, no recipes
    ],
)
def test_a_file_meant_for_hil_and_malformed_stays_an_error(project: Path, text: str) -> None:
    (project / "devices").mkdir()
    (project / "devices" / "board.yaml").write_text(text)
    with pytest.raises(DeviceSpecError, match=r"board\.yaml"):
        find_devices(say=pytest.fail)


def test_an_unrelated_file_beside_device_files_is_an_error(project: Path) -> None:
    device(project / "devices", "board")
    (project / "devices" / "web.yaml").write_text(DEPLOYMENT)
    with pytest.raises(DeviceSpecError, match=r"web\.yaml.*apiVersion.*known keys"):
        find_devices(say=pytest.fail)


def test_a_device_file_others_can_write_is_refused(project: Path) -> None:
    path = device(project / "devices", "board")
    path.chmod(0o666)
    with pytest.raises(DeviceSpecError) as refused:
        find_devices()
    message = str(refused.value)
    assert (
        f"refusing the device file {path}: writable by its group and others (mode 0666" in message
    )
    assert f"fix: chmod go-w {path}" in message
    path.chmod(0o644)
    assert "board" in find_devices().registry


def test_a_devices_folder_others_can_write_is_refused(project: Path) -> None:
    device(project / "devices", "board")
    (project / "devices").chmod(0o777)
    with pytest.raises(DeviceSpecError, match=r"refusing the folder of device files .*mode 0777"):
        find_devices()
    with pytest.raises(DeviceSpecError, match=r"chmod go-w"):
        DeviceRegistry.from_dirs([project / "devices"])  # a folder named directly too


@pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0, reason="chown needs root")
def test_a_device_file_of_another_user_is_refused(project: Path) -> None:
    path = device(project / "devices", "board")
    os.chown(path, 65534, 65534)  # nobody
    with pytest.raises(DeviceSpecError, match=r"board.yaml: owned by .*, not by you") as refused:
        find_devices()
    assert refused.value.fix is not None and f"chown root {path}" in refused.value.fix


def test_hil_devices_adds_a_folder_as_its_help_says(
    project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    given = tmp_path / "given"
    device(given, "mine")
    (project / "devices").mkdir()
    (project / "devices" / "web.yaml").write_text(DEPLOYMENT)
    assert cli.main(["--devices", str(given), "targets"]) == 0
    out, err = capsys.readouterr()
    listed = {line.split()[0] for line in out.splitlines()}
    assert {"mine", "host", "vboard"} <= listed
    assert err.startswith(f"hil: ignoring {project / 'devices'}: ")
    assert "added to the others" in " ".join(cli.build_parser().format_help().split())
