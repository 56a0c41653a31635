"""hil's pytest options, commands and environment variables as the docs list them, read from
their own definitions (the plugin's `add_options`, the CLI's parser, hil.environment), so the
options page cannot name an option that does not exist or miss one that does.

docs/options.md asks for the tables through mkdocs-macros (mkdocs.yml loads this module), and
`tests/docs` checks that every option is on the built page.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Usage:
    """One option of a command: how it is typed and what it does."""

    command: str  # "pytest" or "hil doctor", ...
    spelling: str  # "--hil-cache-dir DIR"
    help: str


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


class _Recorder:
    """Stands in for pytest's parser: `add_options` only makes a group, adds options to it
    and one ini value, so what it declares is read without pytest's private classes."""

    def __init__(self) -> None:
        self.options: list[tuple[tuple[str, ...], dict[str, Any]]] = []

    def getgroup(self, name: str, description: str = "") -> _Recorder:
        return self

    def addoption(self, *names: str, **attrs: Any) -> None:
        self.options.append((names, attrs))

    def addini(self, *args: Any, **kwargs: Any) -> None:
        pass


def pytest_options() -> list[Usage]:
    """The plugin's options, as `pytest --help` lists them under hil."""
    from hil.plugin.options import add_options

    recorder = _Recorder()
    add_options(recorder)  # type: ignore[arg-type]
    found = []
    for names, attrs in recorder.options:
        flag = attrs.get("action") in ("store_true", "store_false", "count")
        dest = attrs.get("dest") or names[-1].lstrip("-").replace("-", "_")
        metavar = "" if flag else (attrs.get("metavar") or dest.upper())
        spelling = f"{max(names, key=len)} {metavar}".strip()
        found.append(Usage("pytest", spelling, attrs.get("help") or ""))
    return found


def _walk(parser: argparse.ArgumentParser, command: str) -> Iterator[tuple[str, argparse.Action]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _walk(sub, f"{command} {name}")
        elif not isinstance(action, argparse._HelpAction):
            yield command, action


def cli_commands() -> dict[str, str]:
    """Each `hil` command (nested ones too) and its one line of help."""
    from hil.cli import build_parser

    found: dict[str, str] = {}

    def visit(parser: argparse.ArgumentParser, command: str) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                helps = {choice.dest: choice.help for choice in action._choices_actions}
                for name, sub in action.choices.items():
                    found[f"{command} {name}"] = helps.get(name) or ""
                    visit(sub, f"{command} {name}")

    visit(build_parser(), "hil")
    return found


def cli_options() -> list[Usage]:
    """Every option and argument of every `hil` command."""
    from hil.cli import build_parser

    found = []
    for command, action in _walk(build_parser(), "hil"):
        if action.option_strings:
            name = max(action.option_strings, key=len)
            metavar = "" if action.nargs == 0 else (action.metavar or action.dest.upper())
            spelling = f"{name} {metavar}".strip()
        else:
            spelling = str(action.metavar or action.dest)
        found.append(Usage(command, spelling, action.help or ""))
    return found


def options_table() -> str:
    rows = ["| option | meaning |", "| --- | --- |"]
    rows += [f"| `{u.spelling}` | {_cell(u.help)} |" for u in pytest_options()]
    return "\n".join(rows)


def commands_table() -> str:
    rows = ["| command | option | meaning |", "| --- | --- | --- |"]
    options = cli_options()
    rows += [f"| `hil` | `{u.spelling}` | {_cell(u.help)} |" for u in options if u.command == "hil"]
    for command, help_line in cli_commands().items():
        rows.append(f"| `{command}` | | {_cell(help_line)} |")
        rows += [f"| | `{u.spelling}` | {_cell(u.help)} |" for u in options if u.command == command]
    return "\n".join(rows)


def variables_table() -> str:
    from hil.environment import VARIABLES

    rows = ["| variable | what it sets | default |", "| --- | --- | --- |"]
    for variable in VARIABLES:
        default = f"`{variable.default}`" if variable.default else "unset"
        rows.append(f"| `{variable.name}` | {_cell(variable.means)} | {default} |")
    return "\n".join(rows)


def define_env(env: Any) -> None:
    """mkdocs-macros: `options_table()`, `commands_table()`, `variables_table()`."""
    for table in (options_table, commands_table, variables_table):
        env.macro(table)
