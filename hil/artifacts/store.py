"""Content-addressed artifact store: one folder per export key.

    <root>/artifacts/<key>/model.pte        the program
    <root>/artifacts/<key>/artifact.json    its sha256, size, recipe facts, tool versions
    <root>/artifacts/<key>/*                recipe side files (Vela summary, quantized reference)
    <root>/failed/<key>/                    what a failed export left behind (dumps, logs)

Entries are built in a private folder and renamed into place, so a crash never leaves half an
entry; a file lock keeps two processes (xdist workers) from exporting the same key twice. An
entry whose .pte no longer matches its recorded sha256 is reported, removed and rebuilt.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np

from hil.arrays import Array
from hil.artifacts.parts import ArtifactParts, OutputSensitivity
from hil.errors import (
    CacheError,
    ExporterIncomplete,
    ExportError,
    ResourceExhausted,
    resource_exhaustion,
)
from hil.hashing import file_sha256
from hil.locks import file_lock

PTE_NAME = "model.pte"
META_NAME = "artifact.json"
QREF_NAME = "quantized_reference.npz"
HOST_PROGRAM = "host_program.pt2"
FORMAT = 2

log = logging.getLogger("hil.artifacts.store")


@dataclass(frozen=True)
class ExportProduct:
    """What a recipe hands to the cache.

    `output_scales` is the quantization step of each output (None where an output is float);
    `quantized_reference` holds the quantized PyTorch model's outputs on the case's inputs, so a
    target can be compared with both eager fp32 and the model it was actually compiled from.
    `quantized_ops` counts the quantizers acting on activations (0: the quantizer left the model
    in float; None: not a quantized recipe) and `sensitivity` is each output's rounding
    sensitivity (hil.reference.rounding), which the target check's step limit includes.
    `details` carries recipe facts for reports (delegated operators, Vela numbers, ...).
    Side files are written by the recipe straight into the work folder it was given.
    """

    pte: bytes
    output_scales: tuple[float | None, ...] = ()
    quantized_reference: tuple[Array, ...] | None = None
    quantized_ops: int | None = None
    sensitivity: tuple[OutputSensitivity | None, ...] = ()
    details: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))


@dataclass(frozen=True)
class Artifact:
    """A verified .pte in the store, with what its recipe recorded about it."""

    key: str
    folder: Path
    sha256: str
    size: int
    recipe: str
    numerics: str
    output_scales: tuple[float | None, ...]
    details: Mapping[str, Any]
    export_seconds: float
    quantized_ops: int | None = None  # activation quantizers (0: left in float; None: fp32)
    sensitivity: tuple[OutputSensitivity | None, ...] = ()  # per output (hil.reference.rounding)
    exported_now: bool = False  # built in this process (a cold export)
    rebuilt_because: str | None = None  # set when a corrupt entry was replaced
    meta: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def pte_path(self) -> Path:
        return self.folder / PTE_NAME

    @functools.cached_property
    def parts(self) -> ArtifactParts:
        """What the recipe recorded beside the .pte, typed (targets read this, not details)."""
        return ArtifactParts.from_details(self.details)

    @property
    def host_program(self) -> Path | None:
        """The program without ExecuTorch's runtime, when the recipe kept one (the stand-ins
        run it: hil.recipes.host_program)."""
        path = self.folder / HOST_PROGRAM
        return path if path.is_file() else None

    def quantized_reference(self) -> tuple[Array, ...] | None:
        path = self.folder / QREF_NAME
        if not path.exists():
            return None
        with np.load(path) as data:
            return tuple(data[f"out{i}"] for i in range(len(data.files)))


class ArtifactCache:
    """Get-or-build of export products by key."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._verified: dict[str, Artifact] = {}
        self._noted: dict[str, str] = {}  # source -> key, as written (note_source)

    def _entry(self, key: str) -> Path:
        return self.root / "artifacts" / key

    def _locked(self, key: str) -> contextlib.AbstractContextManager[None]:
        def unwritable(e: OSError) -> CacheError:
            return CacheError(
                f"cannot write to the artifact cache at {self.root}: {e.strerror}",
                fix="point --hil-cache-dir (or HIL_CACHE_DIR) at a writable folder",
            )

        return file_lock(self.root / "locks" / f"{key}.lock", unwritable)

    def lookup(self, key: str) -> tuple[Artifact | None, str | None]:
        """The verified entry for `key`, or None and why it is unusable (None if simply absent)."""
        if key in self._verified:
            return self._verified[key], None
        folder = self._entry(key)
        if not folder.exists():
            return None, None
        try:
            meta = json.loads((folder / META_NAME).read_text())
            pte = folder / PTE_NAME
            size = pte.stat().st_size
        except (OSError, ValueError) as e:
            return None, f"entry {folder} is unreadable ({e})"
        if not isinstance(meta, dict) or meta.get("format") != FORMAT:
            found = meta.get("format") if isinstance(meta, dict) else type(meta).__name__
            return None, f"entry {folder} has format {found}, expected {FORMAT}"
        try:
            if size != meta["size"]:
                recorded = meta["size"]
                return None, f"{pte} is {size} bytes, recorded {recorded} (truncated or replaced)"
            if file_sha256(pte) != meta["sha256"]:
                return None, f"{pte} does not match its recorded sha256 (corrupted)"
            artifact = Artifact(
                key=key,
                folder=folder,
                sha256=meta["sha256"],
                size=size,
                recipe=meta["recipe"],
                numerics=meta["numerics"],
                output_scales=tuple(meta["output_scales"]),
                details=MappingProxyType(meta["details"]),
                export_seconds=meta["export_seconds"],
                quantized_ops=meta.get("quantized_ops"),
                sensitivity=tuple(
                    OutputSensitivity.from_dict(m) if m else None
                    for m in meta.get("sensitivity", ())
                ),
                meta=MappingProxyType(meta),
            )
        except (KeyError, TypeError, ValueError) as e:
            return None, f"entry {folder} lacks or garbles {e} in {META_NAME}"
        self._verified[key] = artifact
        return artifact, None

    def note_source(self, source: str, key: str) -> None:
        """Remember that `source` (a case's name and a recipe's key material) last gave `key`:
        a hint for planning exports ahead, never for reading an artifact (hil.session.prefetch)."""
        if self._noted.get(source) == key:  # every check asks: the file is read once
            return
        path = self._source_file(source)
        if not (path.is_file() and path.read_text() == key):
            path.parent.mkdir(parents=True, exist_ok=True)
            temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
            temporary.write_text(key)
            os.replace(temporary, path)
        self._noted[source] = key

    def probably_cached(self, source: str) -> bool:
        """Whether `source`'s last artifact (or its remembered failure) is still here. A model
        edited since gives another key, which a check then exports itself."""
        try:
            key = self._source_file(source).read_text()
        except OSError:
            return False
        return self._entry(key).is_dir() or self._failure_file(key).is_file()

    def _source_file(self, source: str) -> Path:
        return self.root / "sources" / hashlib.sha256(source.encode()).hexdigest()

    def get_or_build(
        self,
        key: str,
        material: Mapping[str, Any],
        build: Callable[[Path], ExportProduct],
        *,
        recipe: str,
        numerics: str,
    ) -> Artifact:
        """Return the entry for `key`, exporting with `build(workdir)` when it is absent or bad."""
        artifact, _ = self.lookup(key)
        if artifact is not None:
            return artifact
        with self._locked(key):
            artifact, problem = self.lookup(key)  # another process may have built it meanwhile
            if artifact is not None:
                return artifact
            self._raise_known_failure(key)
            if problem:
                log.warning("artifact cache: %s; rebuilding", problem)
                shutil.rmtree(self._entry(key), ignore_errors=True)
            try:
                return self._build(key, material, build, recipe, numerics, problem)
            except ExporterIncomplete:
                raise
            except ExportError as e:
                self._remember_failure(key, e)
                raise

    def _failure_file(self, key: str) -> Path:
        return self.root / "failures" / f"{key}.json"

    def _remember_failure(self, key: str, error: ExportError) -> None:
        """Keep an export failure, so a warm run reports it again without re-exporting."""
        path = self._failure_file(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"message": error.message, "fix": error.fix}))

    def _raise_known_failure(self, key: str) -> None:
        path = self._failure_file(key)
        if not path.exists():
            return
        try:
            known = json.loads(path.read_text())
        except (OSError, ValueError):
            path.unlink(missing_ok=True)
            return
        raise ExportError(
            f"{known['message']}\n  (remembered from an earlier export of this exact model and "
            f"recipe; delete {path} to try again)",
            fix=known.get("fix"),
        )

    def _keep_failed(self, key: str, workdir: Path) -> Path | None:
        """Move what a failed export left in its work folder (dumps, logs) where users find it."""
        if not any(workdir.iterdir()):
            return None
        kept = self.root / "failed" / key
        shutil.rmtree(kept, ignore_errors=True)
        kept.parent.mkdir(parents=True, exist_ok=True)
        os.replace(workdir, kept)
        return kept

    def _build(
        self,
        key: str,
        material: Mapping[str, Any],
        build: Callable[[Path], ExportProduct],
        recipe: str,
        numerics: str,
        problem: str | None,
    ) -> Artifact:
        (self.root / "artifacts").mkdir(parents=True, exist_ok=True)
        workdir = Path(tempfile.mkdtemp(prefix=f".{key[:12]}-", dir=self.root / "artifacts"))
        try:
            started = time.perf_counter()
            try:
                product = build(workdir)
            except ExportError as e:
                kept = self._keep_failed(key, workdir)
                if kept is None:
                    raise
                raise type(e)(
                    f"{e.message}\n  the exporter's files are kept in {kept}", fix=e.fix
                ) from e
            except ResourceExhausted:
                raise
            except Exception as e:
                exhausted = resource_exhaustion(e)
                if exhausted is None:
                    raise
                raise ResourceExhausted(  # the machine, not the model: never remembered
                    f"exporting artifact {key[:12]} ran out of {exhausted}: "
                    f"{type(e).__name__}: {e}",
                    fix=f"free {exhausted} and run again",
                ) from e
            seconds = time.perf_counter() - started
            (workdir / PTE_NAME).write_bytes(product.pte)
            if product.quantized_reference is not None:
                np.savez(
                    workdir / QREF_NAME,
                    **{f"out{i}": a for i, a in enumerate(product.quantized_reference)},
                )
            meta = {
                "format": FORMAT,
                "key": key,
                "sha256": hashlib.sha256(product.pte).hexdigest(),
                "size": len(product.pte),
                "recipe": recipe,
                "numerics": numerics,
                "output_scales": list(product.output_scales),
                "quantized_ops": product.quantized_ops,
                "sensitivity": [m.to_dict() if m else None for m in product.sensitivity],
                "details": dict(product.details),
                "export_seconds": round(seconds, 3),
                "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                "material": dict(material),
            }
            (workdir / META_NAME).write_text(json.dumps(meta, indent=2, default=str))
            os.replace(workdir, self._entry(key))
        except OSError as e:
            if resource_exhaustion(e):
                raise ResourceExhausted(
                    f"cannot store artifact {key[:12]} under {self.root}: {e}",
                    fix="free disk space (or point --hil-cache-dir elsewhere) and run again",
                ) from e
            raise CacheError(f"cannot store artifact {key[:12]} under {self.root}: {e}") from e
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        artifact, bad = self.lookup(key)
        if artifact is None:
            raise CacheError(f"artifact {key[:12]} vanished right after it was written: {bad}")
        return replace(artifact, exported_now=True, rebuilt_because=problem)
