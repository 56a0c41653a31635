"""Where a session keeps its cache and results unless told otherwise."""

from __future__ import annotations

import os
from pathlib import Path


def default_cache_dir() -> Path:
    return Path(os.environ.get("HIL_CACHE_DIR", ".hil/cache"))


def default_results_dir() -> Path:
    return Path(os.environ.get("HIL_RESULTS_DIR", ".hil/results"))
