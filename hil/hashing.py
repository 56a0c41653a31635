"""sha256 of bytes and of files, spelled once: the report's evidence, the artifact store, the
runner binaries and the SDK bundles all name bytes this way. A file is read in blocks, so a
large .pte or runner image never sits in memory whole."""

from __future__ import annotations

import hashlib
from pathlib import Path

_BLOCK = 1 << 20


def bytes_sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def file_sha256(path: Path) -> str:
    """The file's sha256 (OSError when it cannot be read)."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(_BLOCK), b""):
            digest.update(block)
    return digest.hexdigest()
