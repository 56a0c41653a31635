"""Where hil keeps its cache and results unless told otherwise: the one place their defaults
are spelled (the library, the plugin, the commands and the board logs all ask here)."""

from __future__ import annotations

from pathlib import Path

from hil import environment


def default_cache_dir() -> Path:
    return environment.CACHE_DIR.path()


def default_results_dir() -> Path:
    return environment.RESULTS_DIR.path()
