"""The bare-metal runner's build id follows the ExecuTorch install it links: its path, its
version file and its libraries, so an echo build or a build against another (or a rebuilt)
install is never taken for this one."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from hil.errors import MissingKernel
from hil.runner.channel import missing_operator
from hil.sdk import firmware

pytestmark = pytest.mark.skipif(
    shutil.which("arm-none-eabi-gcc") is None,
    reason="needs gcc-arm-none-eabi (its version is hashed)",
)


def install(root: Path, library: bytes, version: str = "1.5.0\ncff6f4dd\n") -> Path:
    (root / "lib" / "cmake").mkdir(parents=True, exist_ok=True)
    (root / "lib" / "libexecutorch.a").write_bytes(library)
    (root / "lib" / "cmake" / "ExecuTorchTargets.cmake").write_text("# exports\n")
    (root / "version.txt").write_text(version)
    return root


def build_id(monkeypatch: pytest.MonkeyPatch, root: Path | None, **defines: str) -> str:
    if root is None:
        monkeypatch.delenv("EXECUTORCH_ROOT", raising=False)
    else:
        monkeypatch.setenv("EXECUTORCH_ROOT", str(root))
    return firmware.build_id_for(firmware.FirmwareConfig("cortex-m55", defines))


def test_the_build_id_follows_the_install(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    a = install(tmp_path / "a", b"one")
    b = install(tmp_path / "b", b"one")
    echo = build_id(monkeypatch, None)
    with_a = build_id(monkeypatch, a)
    assert with_a != echo  # the echo build is not the ExecuTorch one
    assert build_id(monkeypatch, b) != with_a  # another install (same bytes, other path)
    assert build_id(monkeypatch, a) == with_a  # stable
    install(a, b"two")
    rebuilt = build_id(monkeypatch, a)
    assert rebuilt != with_a  # the install was rebuilt
    install(a, b"two", version="1.5.1\nabcdef01\n")
    assert build_id(monkeypatch, a) != rebuilt  # another version file
    # HIL_ENGINE_EXECUTORCH=OFF is the echo build whatever the environment says
    assert build_id(monkeypatch, a, HIL_ENGINE_EXECUTORCH="OFF") == build_id(
        monkeypatch, None, HIL_ENGINE_EXECUTORCH="OFF"
    )
    # a define names the install too, ahead of the environment
    assert build_id(monkeypatch, None, EXECUTORCH_ROOT=str(a)) == build_id(
        monkeypatch, b, EXECUTORCH_ROOT=str(a)
    )


@pytest.mark.parametrize(
    ("operator", "option"),
    [
        ("aten::sin.out", "EXECUTORCH_SELECT_OPS_LIST"),
        ("cortex_m::quantized_lstm.out", "EXECUTORCH_BUILD_CORTEX_M"),
        ("quantized_decomposed::add.out", "EXECUTORCH_BUILD_KERNELS_QUANTIZED"),
    ],
)
def test_a_missing_operator_names_it_and_the_build_option(operator: str, option: str) -> None:
    error = missing_operator(
        "qemu-m55", f"missing operator {operator}: this runner's ExecuTorch (1.5.0) has no kernel"
    )
    assert isinstance(error, MissingKernel) and error.operator == operator
    assert operator in error.message and error.fix is not None and option in error.fix
