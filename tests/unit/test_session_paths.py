"""Session takes its folders as a user writes them: str or Path."""

from __future__ import annotations

from pathlib import Path

import hil


def test_folders_given_as_strings_are_paths(tmp_path: Path) -> None:
    session = hil.Session(cache_dir=str(tmp_path / "cache"), results_dir=str(tmp_path / "results"))
    assert session.results_dir == tmp_path / "results"
    assert session.cache.root == tmp_path / "cache"
