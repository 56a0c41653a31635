"""A failed export keeps what the exporter left behind (Vela dumps, logs) and says where."""

from __future__ import annotations

from pathlib import Path

import pytest

from hil.artifacts.store import ArtifactCache, ExportProduct
from hil.errors import ExportError


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


def exhausting(error: BaseException):  # type: ignore[no-untyped-def]
    def build(workdir: Path) -> ExportProduct:
        from hil.export.lowering import exporter_step

        def step() -> None:
            raise error

        exporter_step("PT2E calibration", "big_model", step)
        raise AssertionError("unreachable")

    return build


@pytest.mark.parametrize(
    ("error", "what"),
    [
        (MemoryError(), "memory"),
        (
            RuntimeError(
                "[enforce fail at alloc_cpu.cpp:117] DefaultCPUAllocator: can't allocate memory"
            ),
            "memory",
        ),
        (OSError(28, "No space left on device"), "disk space"),
    ],
    ids=["MemoryError", "torch-allocator", "ENOSPC"],
)
def test_running_out_of_memory_or_disk_is_never_remembered(
    tmp_path: Path, error: BaseException, what: str
) -> None:
    from hil.errors import ResourceExhausted

    cache = ArtifactCache(tmp_path)
    with pytest.raises(ResourceExhausted, match=f"ran out of {what}") as caught:
        cache.get_or_build("d" * 64, {}, exhausting(error), recipe="r", numerics="int8")
    assert not isinstance(caught.value, ExportError)  # never the model's failure
    assert not (tmp_path / "failures").exists()
    # with memory freed, the next run exports for real instead of repeating a remembered failure
    artifact = cache.get_or_build(
        "d" * 64, {}, lambda workdir: ExportProduct(pte=b"pte"), recipe="r", numerics="int8"
    )
    assert artifact.exported_now


def test_an_exporter_lacking_a_part_is_never_remembered(tmp_path: Path) -> None:
    """A source-built ExecuTorch without CMSIS-NN's bindings fails every Cortex-M export; once
    it is rebuilt with them (same version, same commit, same key) the export runs for real."""
    from hil.errors import ExporterIncomplete

    def incomplete(workdir: Path) -> ExportProduct:
        raise ExporterIncomplete("built without CMSIS-NN's Python bindings")

    cache = ArtifactCache(tmp_path)
    with pytest.raises(ExporterIncomplete):
        cache.get_or_build("c" * 64, {}, incomplete, recipe="cortex-m", numerics="int8")
    assert not (tmp_path / "failures").exists()
    artifact = cache.get_or_build(
        "c" * 64, {}, lambda workdir: ExportProduct(pte=b"pte"), recipe="cortex-m", numerics="int8"
    )
    assert artifact.exported_now
