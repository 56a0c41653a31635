"""--hil-devices does what its help says, in a real pytest run: the folder is added to the
bundled device files (searched before them, so its host.yaml overrides the bundled host), and
an unrelated devices/ folder in the rootdir is ignored with one line instead of stopping the run."""

from __future__ import annotations

from pathlib import Path

import pytest

from hil.usage import pytest_options

SUITE = """
import pytest, torch
import hil

@pytest.mark.hil_cases([hil.Case("relu", torch.nn.ReLU, hil.seeded((1, 8)))])
def test_case(hil_check):
    hil_check()
"""

DEPLOYMENT = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n"
HOST = "name: {name}\nkind: host\nrecipes: [portable]\n"


@pytest.fixture
def project(
    pytester: pytest.Pytester, shared_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> pytest.Pytester:
    monkeypatch.delenv("HIL_DEVICES", raising=False)
    (pytester.mkdir("devices") / "web.yaml").write_text(DEPLOYMENT)  # someone else's devices/
    lab = pytester.mkdir("lab")
    for name in ("host", "mine"):
        (lab / f"{name}.yaml").write_text(HOST.format(name=name))
    pytester.makepyfile(test_suite=SUITE)
    pytester.makeini(
        f"[pytest]\naddopts = --hil-cache-dir={shared_cache} -p no:cacheprovider -p no:labgrid "
        "-W ignore::pytest.PytestAssertRewriteWarning\n"
    )
    return pytester


def _help() -> str:
    """--hil-devices' help as `pytest --help` shows it (and docs/options.md, via hil.usage)."""
    (usage,) = [u for u in pytest_options() if u.spelling.startswith("--hil-devices")]
    return " ".join(usage.help.split())


def test_hil_devices_adds_a_folder_before_the_bundled_files(project: pytest.Pytester) -> None:
    assert "added to the others" in _help() and "before $HIL_DEVICES and the bundled" in _help()
    lab = project.path / "lab"
    result = project.runpytest(
        f"--hil-devices={lab}", "--target=mine", "--target=host", "--collect-only", "-q"
    )
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        [f"hil: ignoring {project.path / 'devices'}: none of its 1 YAML files is a hil device*"]
    )
    collected = {line.split("::")[1] for line in result.stdout.lines if "::" in line}
    # lab/host.yaml overrides the bundled host (which has xnnpack recipes too)
    assert collected == {"test_case[relu-mine-portable]", "test_case[relu-host-portable]"}

    unknown = project.runpytest(f"--hil-devices={lab}", "--target=nope")
    assert unknown.ret == pytest.ExitCode.USAGE_ERROR
    # the bundled files are still there beside lab's: added, not replaced
    unknown.stderr.fnmatch_lines(["*valid targets: *fvp-u85, host, mine, *vboard*"])
