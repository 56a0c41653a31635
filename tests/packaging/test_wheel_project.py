"""hil as a user's repository gets it: the wheel built from this checkout, installed (not
editable) into a fresh venv, used by a scratch project outside the checkout that has only its
own tests/test_block.py. Its device files and the runner's firmware sources come from the
wheel (vboard builds the runner from them). The fresh venv borrows this environment's torch and
executorch through a path file, to stay fast; hil itself must come from the wheel."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

TEST_BLOCK = """
from pathlib import Path

import pytest
import torch
from torch import nn

import hil

HIL_FROM = Path(hil.__file__).resolve()


def block() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Flatten(),
                         nn.Linear(8 * 8 * 8, 4))


CASES = [hil.Case("block", block, hil.seeded((1, 3, 8, 8)), recipes=("portable",))]


def test_hil_comes_from_the_installed_wheel():
    assert "site-packages" in HIL_FROM.parts, HIL_FROM
    assert (HIL_FROM.parent / "_devices" / "vboard.yaml").is_file()
    assert (HIL_FROM.parent / "_firmware" / "CMakeLists.txt").is_file()


@pytest.mark.hil_cases(CASES)
def test_block(hil_check):
    result = hil_check()
    assert result.passed and result.verdict == "PASS"
"""


def _run(
    argv: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: float = 900
) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert done.returncode == 0, f"{argv}\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    return done


@pytest.fixture(scope="module")
def fresh_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv with the wheel of this checkout installed, and torch & co. borrowed."""
    root = tmp_path_factory.mktemp("wheel")
    source = root / "source"  # a copy: the build writes build/ and egg-info beside the code
    shutil.copytree(
        REPO,
        source,
        ignore=shutil.ignore_patterns(
            ".git", ".venv*", ".hil", "build", "dist", "*.egg-info", "__pycache__", ".*_cache"
        ),
    )
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(root / "dist"),
            str(source),
        ],
        cwd=root,
    )
    wheel = next((root / "dist").glob("hil-*.whl"))
    venv = root / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=root)
    python = venv / "bin" / "python"
    site = Path(
        _run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            cwd=root,
        ).stdout.strip()
    )
    # A plain path line: this environment's packages are importable, but its .pth hooks
    # (among them hil's editable install) are not run.
    (site / "borrowed.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    # --ignore-installed: the borrowed packages include this checkout's editable hil
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "--no-deps",
            "-q",
            "--ignore-installed",
            str(wheel),
        ],
        cwd=root,
    )
    return venv


@pytest.mark.parametrize("target", ["host", "vboard"])
def test_a_scratch_project_runs_its_own_test_with_the_installed_wheel(
    fresh_venv: Path, tmp_path: Path, shared_cache: Path, target: str
) -> None:
    project = tmp_path / "scratch"
    (project / "tests").mkdir(parents=True)
    (project / "tests" / "test_block.py").write_text(TEST_BLOCK)
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("PYTHONPATH", "PYTEST_ADDOPTS", "VIRTUAL_ENV")
    }
    env.update(HIL_CACHE_DIR=str(shared_cache), PATH=f"{fresh_venv / 'bin'}:{env['PATH']}")
    done = _run(
        [
            str(fresh_venv / "bin" / "python"),
            "-m",
            "pytest",
            "-q",
            "-rA",
            "-p",
            "no:cacheprovider",
            f"--target={target}",
        ],
        cwd=project,
        env=env,
    )
    assert f"test_block[block-{target}-portable] " in done.stdout or (
        f"PASSED tests/test_block.py::test_block[block-{target}-portable]" in done.stdout
    ), done.stdout[-3000:]
    assert "2 passed" in done.stdout, done.stdout[-3000:]
