"""Where resources keep their logs, and reading the end of one."""

from __future__ import annotations

import os
from pathlib import Path

from hil.paths import default_results_dir


def board_log_dir() -> Path:
    return default_results_dir() / "boards"


def tail(path: Path | None, lines: int) -> str:
    if path is None or not path.exists():
        return ""
    with path.open("rb") as f:
        f.seek(0, os.SEEK_END)
        f.seek(max(0, f.tell() - 16384))
        text = f.read().decode("utf-8", "replace")
    return "\n".join(text.splitlines()[-lines:])
