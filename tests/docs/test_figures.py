"""The docs say what is, and quote measured figures from one file.

User pages carry no commit hash, no dated run and no hand-typed benchmark figure: a time, a
ratio or a percentage in prose comes from bench/figures.json through the `figure` macro
(bench/figures.py), so two pages cannot disagree and each figure keeps its date. Code blocks
(sample output, commands) are not prose and are not read.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PAGES = sorted([REPO / "README.md", *(REPO / "docs").rglob("*.md")])

# A commit: 7 to 40 hex digits with a digit and a letter in it (a word like "defaced" is not).
_HASH = re.compile(r"\b(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b")
_DATE = re.compile(r"\b20\d\d-[01]\d-[0-3]\d\b")
_DIARY = re.compile(
    r"\b(I ran|I measured|of mine|my measurement|we ran|this session|the issue)\b", re.IGNORECASE
)
# A measured quantity: a time, a speed-up or a share ("1,055 s", "0.54x", "98.9 %", "3 min").
_FIGURE = re.compile(
    r"(?<![\w.`-])\d[\d,]*(?:\.\d+)?\s?(?:s|ms|us|min|minutes|seconds|hours|x|%)(?![\w`])"
)
# A time or share that is a setting's value or a rule, not a measurement: typed by hand.
_SETTINGS = re.compile(
    r"default|timeout|limit|budget|allow|goal|at most|at least|under|within|every|floor|"
    r"threshold|wait|up to|sizes?\b|set to|--|_s\b|_ms\b|=",
    re.IGNORECASE,
)


def prose(page: Path) -> list[tuple[int, str]]:
    """The page's lines outside fenced code blocks and front matter, inline code removed."""
    lines, fenced, front = [], False, False
    for number, line in enumerate(page.read_text().splitlines(), 1):
        if number == 1 and line.strip() == "---":
            front = True
            continue
        if front:
            front = line.strip() != "---"
            continue
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
            continue
        if not fenced:
            lines.append((number, re.sub(r"`[^`]*`|\{\{.*?\}\}", "", line)))
    return lines


def _where(page: Path, number: int, line: str) -> str:
    return f"{page.relative_to(REPO)}:{number}: {line.strip()[:120]}"


def test_no_commit_hash_date_or_diary_in_the_docs() -> None:
    found = [
        _where(page, number, line)
        for page in PAGES
        for number, line in prose(page)
        if _HASH.search(line) or _DATE.search(line) or _DIARY.search(line)
    ]
    assert not found, "history belongs in the bench's figures, not the pages:\n" + "\n".join(found)


def test_no_benchmark_figure_is_typed_by_hand() -> None:
    found = [
        _where(page, number, line)
        for page in PAGES
        for number, line in prose(page)
        if _FIGURE.search(line) and not _SETTINGS.search(line)
    ]
    assert not found, (
        "a measured figure in prose comes from bench/figures.json ({{ figure('name') }}):\n"
        + "\n".join(found)
    )


def test_every_quoted_figure_is_measured_and_says_how() -> None:
    sys.path.insert(0, str(REPO / "bench"))
    from figures import BENCH, FIGURES, load

    figures = load(FIGURES)
    asked = {
        name
        for page in PAGES
        for name in re.findall(r"\{\{\s*(?:figure|measured)\(\s*['\"]([^'\"]+)", page.read_text())
    }
    assert asked, "the pages quote figures through the macro"
    missing = sorted(asked - set(figures))
    assert not missing, f"quoted but not in bench/figures.json: {missing}"
    for name, figure in figures.items():
        assert re.fullmatch(r"20\d\d-\d\d-\d\d", figure.measured), name
        assert figure.cores >= 1 and figure.command.startswith("bench/"), name
    for kept in BENCH.glob("ops_differences*.json"):  # the newest release's, an older one's
        for row in json.loads(kept.read_text()):
            assert {"case", "target", "cause", "figures"} <= set(row), kept.name


def test_a_page_that_quotes_a_figure_renders_its_macros() -> None:
    """mkdocs-macros reads only pages that ask (render_macros: true); elsewhere the braces
    would reach the reader as they are typed."""
    unrendered = [
        str(page.relative_to(REPO))
        for page in PAGES
        if page.parent.name == "docs"
        and re.search(
            r"\{\{\s*(?:figure|measured|figures_table|ops_differences)\(", page.read_text()
        )
        and "render_macros: true" not in page.read_text().split("\n---", 1)[0]
    ]
    assert not unrendered, f"add `render_macros: true` to the front matter of {unrendered}"


@pytest.mark.parametrize(
    ("text", "flagged"),
    [
        ("cold 1,055 s, warm 141 s", True),
        ("the goal is 0.2 of theirs, met at 0.18x", False),  # a rule's line is not read
        ("98.95 % agree", True),
        ("in about 4 min", True),
        ("`connection.port_return_s` (default 15 s)", False),
        ("ExecuTorch's 16 operator files", False),
        ("{{ figure('ops.cold_s') }}", False),
    ],
)
def test_the_figure_rule_reads_prose_as_meant(text: str, flagged: bool, tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(text + "\n")
    lines = prose(page)
    assert any(_FIGURE.search(t) and not _SETTINGS.search(t) for _, t in lines) is flagged


def test_a_hash_and_a_date_are_caught_and_words_are_not(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "at f6cc4fb\nmeasured 2026-12-05\na defaced cafe\n```\nbuild 3b6068392324\n```\n"
    )
    caught = [t for _, t in prose(page) if _HASH.search(t) or _DATE.search(t)]
    assert caught == ["at f6cc4fb", "measured 2026-12-05"]
