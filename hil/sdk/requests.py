"""A `hil sdk build` asked before answers from what it stored, without collecting the suites.

Choosing kernels means collecting the suites and exporting (or reading from the cache) every
program they run on the device: about 25 s before the SDK's own key is known, even when
nothing changed. So each answer is also remembered under the request itself: the board and
device, the trees' content digests (stat'ed, not read, when untouched), the build tools, and
the content of everything that decides which programs the suites export: the suite folders'
and device files' text, hil's own code and the versions of torch, ExecuTorch and their
compilers. Any of these changed, and the command collects and plans as before.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.metadata
import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from hil.sdk.boards import SdkBoard
from hil.sdk.plan import Tools
from hil.sdk.store import Sdk, read_sdk

HIL_CODE = Path(__file__).resolve().parents[1]
EXPORT_TOOLS = ("torch", "executorch", "ethos-u-vela", "tosa-tools", "torchao", "transformers")
TEXT_SUFFIXES = (".py", ".yaml", ".yml", ".json", ".txt")


def _text_files(root: Path) -> Iterable[Path]:
    if root.is_file():
        yield root
        return
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
        for name in sorted(names):
            if name.endswith(TEXT_SUFFIXES):
                yield Path(folder) / name


def _content(roots: Iterable[Path]) -> str:
    digest = hashlib.sha256()
    for root in roots:
        for path in _text_files(root):
            digest.update(f"{path.relative_to(root.parent)}\0".encode())
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def _versions() -> dict[str, str]:
    found = {}
    for dist in EXPORT_TOOLS:
        try:
            found[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            found[dist] = "absent"
    return found


def request_key(
    board: SdkBoard,
    device: str,
    tree_digests: dict[str, str],
    tools: Tools,
    ops_from: Sequence[str],
    device_dirs: Sequence[Path],
    full: bool,
) -> str:
    """The digest of everything a `hil sdk build` answer depends on."""
    material = {
        "board": dataclasses.asdict(board),
        "device": device,
        "trees": dict(sorted(tree_digests.items())),
        "tools": {k: str(v) for k, v in dataclasses.asdict(tools).items()},
        "ops_from": [str(Path(p).resolve()) for p in ops_from],
        "programs": _content([Path(p).resolve() for p in ops_from]),
        "devices": _content(Path(d).resolve() for d in device_dirs if Path(d).is_dir()),
        "hil": _content([HIL_CODE]),
        "versions": _versions(),
        "full": full,
    }
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()


def _memo(root: Path, key: str) -> Path:
    return root / "requests" / f"{key[:32]}.json"


def remembered(root: Path, key: str) -> Sdk | None:
    """The finished SDK this very request gave before, or None."""
    try:
        prefix = json.loads(_memo(root, key).read_text())["sdk"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return read_sdk(Path(prefix))


def remember(root: Path, key: str, sdk: Sdk) -> None:
    memo = _memo(root, key)
    try:
        memo.parent.mkdir(parents=True, exist_ok=True)
        scratch = memo.with_suffix(f".{os.getpid()}.tmp")
        scratch.write_text(json.dumps({"sdk": str(sdk.prefix)}))
        scratch.replace(memo)
    except OSError:
        pass  # not remembered only costs the next call the collection
