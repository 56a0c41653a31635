"""A failed export keeps what the exporter left behind (Vela dumps, logs) and says where."""

from __future__ import annotations

from pathlib import Path

import pytest

from hil.cache import ArtifactCache
from hil.errors import ExportError
from hil.recipes.base import ExportProduct


def failing(leave_files: bool):  # type: ignore[no-untyped-def]
    def build(workdir: Path) -> ExportProduct:
        if leave_files:
            (workdir / "dump").mkdir()
            (workdir / "dump" / "out.tosa").write_bytes(b"tosa")
        raise ExportError("vela: Non-passthrough operation could not run on NPU")

    return build


def test_failed_export_files_are_kept_and_named(tmp_path: Path) -> None:
    cache = ArtifactCache(tmp_path)
    with pytest.raises(ExportError) as caught:
        cache.get_or_build("f" * 64, {}, failing(True), recipe="r", numerics="int8")
    kept = tmp_path / "failed" / ("f" * 64)
    assert (kept / "dump" / "out.tosa").read_bytes() == b"tosa"
    assert str(kept) in str(caught.value)
    assert "Non-passthrough" in str(caught.value)
    # the remembered failure still names the kept files
    with pytest.raises(ExportError, match="kept in"):
        cache.get_or_build("f" * 64, {}, failing(True), recipe="r", numerics="int8")


def test_failed_export_without_files_keeps_nothing(tmp_path: Path) -> None:
    with pytest.raises(ExportError) as caught:
        ArtifactCache(tmp_path).get_or_build(
            "e" * 64, {}, failing(False), recipe="r", numerics="int8"
        )
    assert "kept in" not in str(caught.value)
    assert not (tmp_path / "failed").exists()
