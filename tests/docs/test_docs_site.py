"""The documentation site builds in MkDocs' strict mode (a broken link, a missing anchor, a page
outside the navigation or a docstring the API reference cannot render fails it), and the front
page stays a front page whose links all land."""

from __future__ import annotations

import html
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FRONT_PAGE_LINES = 200


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site built once, strictly: a broken link or a macro that fails stops the build."""
    folder = tmp_path_factory.mktemp("site")
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(folder)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        check=False,
    )
    assert built.returncode == 0, built.stderr[-4000:]
    return folder


def test_the_site_builds_strictly(site: Path) -> None:
    api = (site / "api" / "index.html").read_text()
    assert "hil.library.Session" in api and "raise_for_failures" in api


def test_the_front_page_is_short_and_its_links_land() -> None:
    text = (REPO / "README.md").read_text()
    assert len(text.splitlines()) <= FRONT_PAGE_LINES
    targets = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text)
    local = [t for t in targets if not t.startswith(("http://", "https://"))]
    assert local, "the front page links to the documentation"
    missing = [t for t in local if not (REPO / t).exists()]
    assert not missing, f"README.md links to files that do not exist: {missing}"


def test_every_option_command_and_variable_is_on_the_options_page(site: Path) -> None:
    """The page is made from the definitions (hil/usage.py); this reads the built page, so an
    option the plugin or the CLI gains, or a variable hil.environment gains, is on it."""
    from hil import environment, usage

    page = html.unescape((site / "options" / "index.html").read_text())
    wanted = [
        *(u.spelling for u in usage.pytest_options()),
        *usage.cli_commands(),
        *(u.spelling for u in usage.cli_options()),
        *(v.name for v in environment.VARIABLES),
        "--hil-require",
        "hil doctor",
        "--strict",
    ]
    missing = [name for name in wanted if f"<code>{name}</code>" not in page]
    assert not missing, f"docs/options.md does not show {missing}"
