"""Where hil keeps its cache and results unless told otherwise: the one place their defaults
are spelled (the library, the plugin, the commands and the board logs all ask here)."""

from __future__ import annotations

import os
from pathlib import Path


def default_cache_dir() -> Path:
    return Path(os.environ.get("HIL_CACHE_DIR", ".hil/cache"))


def default_results_dir() -> Path:
    return Path(os.environ.get("HIL_RESULTS_DIR", ".hil/results"))
