"""A cached program is judged only for the model it was made from: the served-program guard
(hil.artifacts.probe) on the host target, with the real exporter and ExecuTorch runtime. The
collisions are forced by making the key blind (one fingerprint, one quantized-store key for
every model), as a model carrying behaviour the fingerprint does not see would make them."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from torch import nn

from hil import Case, seeded
from hil.devices import DeviceRegistry
from hil.session import Session


def row(function: Callable[[torch.Tensor], torch.Tensor]) -> nn.Module:
    """One model per function, as ExecuTorch's `module_factory` makes its rows."""

    class Wrapper(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return function(x)

    return Wrapper()


RELU = Case("relu_row", lambda: row(torch.relu), seeded((2, 16)))
TANH = Case("tanh_row", lambda: row(torch.tanh), seeded((2, 16)))


def session_on(devices: DeviceRegistry, cache: Path, results: Path) -> Session:
    return Session(devices=devices, cache_dir=cache, results_dir=results)


def collisions(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "KEY COLLISION" in r.getMessage()]


def test_a_forced_artifact_collision_is_caught_and_each_model_judged_on_its_own_program(
    repo_devices: DeviceRegistry,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setattr("hil.session.references.model_fingerprint", lambda module: "blind")
    caplog.set_level(logging.WARNING, logger="hil.session.references")
    cache = tmp_path / "cache"
    with session_on(repo_devices, cache, tmp_path / "cold") as cold:
        relu = cold.check(RELU, "host", "portable")
        tanh = cold.check(TANH, "host", "portable")
        tanh_again = cold.check(TANH, "host", "portable")
    assert relu.passed and tanh.passed and tanh_again.passed, tanh.failure_message()
    assert tanh.artifact.key != relu.artifact.key
    assert tanh.artifact.exported_now
    assert "key collision" in (tanh.artifact.rebuilt_because or "")
    assert "'relu_row'" in (tanh.artifact.rebuilt_because or "")
    (warning,) = collisions(caplog)  # once, naming both models
    assert "tanh_row" in warning and "'relu_row'" in warning

    caplog.clear()
    with session_on(repo_devices, cache, tmp_path / "warm") as warm:
        served = warm.check(TANH, "host", "portable")
        relu_served = warm.check(RELU, "host", "portable")
    assert served.passed and relu_served.passed
    assert served.artifact.key == tanh.artifact.key and not served.artifact.exported_now
    assert relu_served.artifact.key == relu.artifact.key
    assert served.deploy_bytes == 0 or served.artifact.sha256 == tanh.artifact.sha256


def test_a_forced_quantized_store_collision_is_caught(
    repo_devices: DeviceRegistry,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setattr("hil.reference.quantized.store_key", lambda *args: "blind")
    caplog.set_level(logging.WARNING, logger="hil.reference.quantized")
    with session_on(repo_devices, tmp_path / "cache", tmp_path / "results") as session:
        relu = session.check(RELU, "host", "xnnpack-int8")
        tanh = session.check(TANH, "host", "xnnpack-int8")
    assert relu.passed, relu.failure_message()
    assert tanh.passed, tanh.failure_message()  # its own quantized model, not relu's
    (warning,) = collisions(caplog)
    assert "tanh_row" in warning and "'relu_row'" in warning
