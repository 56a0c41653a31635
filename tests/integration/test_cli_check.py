"""`hil check MODULE:FACTORY`: a user's model file, real targets (host, vboard), the plugin's
table on stdout, and exit codes that a script can trust (0 only when every check PASSed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hil.cli import main

BLOCKS = """
import torch
from torch import nn

NET = nn.Linear(4, 2)


def make_block():
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU())


def not_a_model():
    return 42
"""


@pytest.fixture
def project(tmp_path: Path, shared_cache: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "blocks.py").write_text(BLOCKS)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HIL_CACHE_DIR", str(shared_cache))
    monkeypatch.setenv("HIL_RESULTS_DIR", str(tmp_path / "results"))
    return tmp_path


def test_a_module_factory_runs_on_host_and_vboard_and_prints_the_table(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        [
            "check",
            "blocks:make_block",
            "--input-shape",
            "1x3x8x8",
            "--target",
            "host",
            "--target",
            "vboard",
            "--recipe",
            "portable",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    assert "target host: 1/1 passed" in out and "target vboard: 1/1 passed" in out
    assert "make_block  portable" in out  # the plugin's results table
    assert (project / "results" / "arrays" / "make_block--vboard--portable.npz").is_file()


def test_a_file_path_and_a_module_instance_work(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        [
            "check",
            str(project / "blocks.py") + ":NET",
            "--input-shape",
            "2x4",
            "--recipe",
            "xnnpack-int8",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    assert "target host: 1/1 passed" in out and "NET" in out


def test_nothing_judged_is_not_success(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An export that fails is reported in the table and the exit code is 1."""
    code = main(["check", "blocks:NET", "--input-shape", "2x5", "--recipe", "portable"])
    out = capsys.readouterr().out
    assert code == 1
    assert "EXPORT FAILED" in out and "torch.export failed" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["blocks", "--input-shape", "1x4"], "'blocks' is not MODULE:FACTORY"),
        (
            ["blocks:nope", "--input-shape", "1x4"],
            "blocks has no 'nope'\n  fix: pick one of: NET, make_block, not_a_model",
        ),
        (["nowhere:make", "--input-shape", "1x4"], "cannot import nowhere"),
        (
            ["blocks:not_a_model", "--input-shape", "1x4"],
            "blocks:not_a_model gave int, not a torch.nn.Module",
        ),
        (["blocks:NET", "--input-shape", "1xq"], "--input-shape '1xq' is not a shape"),
        (
            ["blocks:NET", "--input-shape", "1x4", "--recipe", "vela"],
            "target host has no recipe vela",
        ),
    ],
    ids=["no-colon", "no-attribute", "no-module", "not-a-module", "bad-shape", "bad-recipe"],
)
def test_bad_input_is_a_clear_error_with_exit_2(
    project: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    assert main(["check", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err, err
