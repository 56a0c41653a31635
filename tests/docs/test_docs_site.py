"""The documentation site builds in MkDocs' strict mode (a broken link, a missing anchor, a page
outside the navigation or a docstring the API reference cannot render fails it), and the front
page stays a front page whose links all land."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FRONT_PAGE_LINES = 200


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        check=False,
    )
    assert built.returncode == 0, built.stderr[-4000:]
    api = (tmp_path / "api" / "index.html").read_text()
    assert "hil.library.Session" in api and "raise_for_failures" in api


def test_the_front_page_is_short_and_its_links_land() -> None:
    text = (REPO / "README.md").read_text()
    assert len(text.splitlines()) <= FRONT_PAGE_LINES
    targets = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text)
    local = [t for t in targets if not t.startswith(("http://", "https://"))]
    assert local, "the front page links to the documentation"
    missing = [t for t in local if not (REPO / t).exists()]
    assert not missing, f"README.md links to files that do not exist: {missing}"


def test_every_environment_variable_is_in_the_options_page() -> None:
    """hil/environment.py is the one list of hil's variables; the options page lists each."""
    from hil import environment

    page = (REPO / "docs" / "options.md").read_text()
    missing = [v.name for v in environment.VARIABLES if f"| `{v.name}` |" not in page]
    assert not missing, f"docs/options.md does not list {missing}"
