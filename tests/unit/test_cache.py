"""The artifact cache: built once, verified on read, corrupt entries rebuilt, failures kept."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from hil.artifacts.store import ArtifactCache, ExportProduct
from hil.errors import ExportError


class Builder:
    def __init__(self, payload: bytes = b"program-bytes") -> None:
        self.calls = 0
        self.payload = payload

    def __call__(self, workdir: Path) -> ExportProduct:
        self.calls += 1
        (workdir / "side.txt").write_text("vela summary")
        return ExportProduct(pte=self.payload, output_scales=(0.5,), details={"delegates": 1})


def get(cache: ArtifactCache, build: Builder, key: str = "k" * 64):  # type: ignore[no-untyped-def]
    return cache.get_or_build(key, {"m": 1}, build, recipe="r", numerics="int8")


def test_built_once_then_served(tmp_path: Path) -> None:
    build = Builder()
    first = get(ArtifactCache(tmp_path), build)
    second = get(ArtifactCache(tmp_path), build)  # a new process: reads from disk
    assert build.calls == 1
    assert first.exported_now and not second.exported_now
    assert second.pte_path.read_bytes() == b"program-bytes"
    assert (second.folder / "side.txt").read_text() == "vela summary"
    assert second.output_scales == (0.5,) and second.details["delegates"] == 1


@pytest.mark.parametrize("damage", ["truncate", "flip", "delete-meta"])
def test_corrupt_entry_is_detected_rebuilt_and_reported(
    tmp_path: Path, damage: str, caplog: pytest.LogCaptureFixture
) -> None:
    build = Builder()
    artifact = get(ArtifactCache(tmp_path), build)
    if damage == "truncate":
        artifact.pte_path.write_bytes(b"prog")
    elif damage == "flip":
        artifact.pte_path.write_bytes(b"program-bytez")
    else:
        (artifact.folder / "artifact.json").unlink()
    with caplog.at_level(logging.WARNING, logger="hil.artifacts.store"):
        rebuilt = get(ArtifactCache(tmp_path), build)
    assert build.calls == 2
    assert rebuilt.rebuilt_because and rebuilt.exported_now
    assert rebuilt.pte_path.read_bytes() == b"program-bytes"
    assert "rebuilding" in caplog.text


def test_export_failure_is_remembered_until_deleted(tmp_path: Path) -> None:
    calls = 0

    def failing(workdir: Path) -> ExportProduct:
        nonlocal calls
        calls += 1
        raise ExportError("case 'x': torch.export failed: data-dependent branch")

    cache = ArtifactCache(tmp_path)
    for _ in range(2):
        with pytest.raises(ExportError, match="data-dependent branch"):
            cache.get_or_build("f" * 64, {}, failing, recipe="r", numerics="fp32")
    assert calls == 1
    with pytest.raises(ExportError, match=r"delete .* to try again"):
        ArtifactCache(tmp_path).get_or_build("f" * 64, {}, failing, recipe="r", numerics="fp32")


def test_no_half_entries_after_a_failed_build(tmp_path: Path) -> None:
    def crash(workdir: Path) -> ExportProduct:
        (workdir / "partial").write_text("x")
        raise ExportError("boom")

    with pytest.raises(ExportError):
        ArtifactCache(tmp_path).get_or_build("e" * 64, {}, crash, recipe="r", numerics="fp32")
    leftovers = [p for p in (tmp_path / "artifacts").iterdir()]
    assert leftovers == []
