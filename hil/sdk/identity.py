"""What a source tree is, as a digest of its content, cheap to ask twice.

An SDK is named by the content of the trees it was built from, not by their paths or their
commits alone: an edited file in a checkout gives another SDK, a copy of the same tree gives
the same one. Reading ExecuTorch's 12,000 files on every `hil sdk build` would cost seconds, so
the content digest is remembered beside a digest of the tree's listing (path, size, mtime of
every file): an untouched tree is stat'ed, not read.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path

# Never part of a tree's identity: version control, build outputs and caches a user may have
# in the checkout, and ExecuTorch's setup.sh scratch (FVPs and toolchains, gigabytes; the
# driver and CMSIS there are trees of their own).
SKIPPED_DIRS = frozenset({".git", "__pycache__", "pip-out", "buck-out", "arm_test", ".hil"})
SKIPPED_PREFIXES = ("cmake-out",)
SKIPPED_PATHS = (
    Path("examples/arm/arm-scratch"),
    Path("examples/arm/ethos-u-scratch"),
    # ExecuTorch's build compiles flatcc's host tools into the flatcc checkout itself: without
    # these, every build would change the tree it was keyed by (measured: the second call of
    # `hil sdk build` rebuilt)
    Path("third-party/flatcc/bin"),
    Path("third-party/flatcc/lib"),
)


def _files(root: Path) -> Iterator[Path]:
    for folder, dirs, names in os.walk(root):
        here = Path(folder)
        relative = here.relative_to(root)
        dirs[:] = sorted(
            d
            for d in dirs
            if d not in SKIPPED_DIRS
            and not d.startswith(SKIPPED_PREFIXES)
            and relative / d not in SKIPPED_PATHS
        )
        for name in sorted(names):
            if not name.endswith(".pyc"):
                yield here / name


def listing_digest(root: Path) -> str:
    digest = hashlib.sha256()
    for path in _files(root):
        stat = path.stat() if not path.is_symlink() else path.lstat()
        relative = str(path.relative_to(root))
        digest.update(f"{relative}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def content_digest(root: Path) -> str:
    digest = hashlib.sha256()
    for path in _files(root):
        digest.update(str(path.relative_to(root)).encode() + b"\0")
        if path.is_symlink():
            digest.update(b"link\0" + os.readlink(path).encode())
        elif path.is_file():
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def tree_digest(root: Path, memo: Path) -> str:
    """The content digest of `root`, read again only when its listing changed since the one
    remembered in the `memo` file (JSON: path -> listing and content digests)."""
    key = str(root.resolve())
    try:
        known = json.loads(memo.read_text())
    except (OSError, ValueError):
        known = {}
    listing = listing_digest(root)
    entry = known.get(key)
    if isinstance(entry, dict) and entry.get("listing") == listing and entry.get("content"):
        return str(entry["content"])
    content = content_digest(root)
    known[key] = {"listing": listing, "content": content}
    try:
        memo.parent.mkdir(parents=True, exist_ok=True)
        scratch = memo.with_suffix(f".{os.getpid()}.tmp")
        scratch.write_text(json.dumps(known, indent=1, sort_keys=True))
        scratch.replace(memo)
    except OSError:
        pass  # a memo that cannot be written only costs the next call a re-read
    return content
