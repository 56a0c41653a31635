"""The two run-level files allure reads from its results folder: environment and categories.

`environment.properties` lists tool versions, commit and machines; `categories.json` sorts
failures into test failures and infrastructure errors by the hil exception class that allure
finds in each failure message ("hil.errors.OutputMismatch: ...").
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from hil.report import verdicts

ENVIRONMENT_FILE = "environment.properties"
CATEGORIES_FILE = "categories.json"


def _escape(text: str) -> str:
    """Java .properties escaping: backslash, separators, line breaks, non-Latin-1 as \\uXXXX."""
    out = []
    for ch in text:
        if ch in "\\=:#!":
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ord(ch) > 0x7E or ord(ch) < 0x20:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return "".join(out)


def environment(runs: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Key -> value; a value that differs between runs lists each distinct value once."""
    found: dict[str, list[str]] = {}

    def put(key: str, value: Any) -> None:
        if value in (None, ""):
            return
        values = found.setdefault(key, [])
        if str(value) not in values:
            values.append(str(value))

    for run in runs:
        for tool, version in sorted((run.get("tools") or {}).items()):
            put(tool, version)
        git = run.get("git") or {}
        put("git.commit", git.get("commit", "") + (" (dirty)" if git.get("dirty") else ""))
        put("git.branch", git.get("branch"))
        machine = run.get("machine") or {}
        put(
            "machine",
            f"{machine.get('hostname', '?')}: {machine.get('cpu', '?')}, {machine.get('os', '?')}",
        )
        put("seed.policy", run.get("seed_policy"))
        put("command", (run.get("command") or {}).get("line"))
        for name, target in sorted((run.get("targets") or {}).items()):
            put(f"target.{name}", f"{target.get('kind', '?')}, {target.get('timing', '?')} timing")
            for identity in target.get("identities") or []:
                for key, value in sorted(identity.items()):
                    if key not in ("name", "kind"):
                        put(f"target.{name}.{key}", value)
    return {key: " | ".join(values) for key, values in found.items()}


def properties_text(values: Mapping[str, str]) -> str:
    return "".join(f"{_escape(k)}={_escape(v)}\n" for k, v in values.items())


def categories() -> list[dict[str, Any]]:
    """Allure files a result under every category whose statuses and messageRegex (matched
    against the whole message) fit, and under its own "Product/Test defects" when none does."""

    def any_of(names: Sequence[str]) -> str:
        return "(?s).*\\b(" + "|".join(names) + ")\\b.*"

    # a target skipped or failed under --hil-require says "unavailable" in its own words
    infra = [*verdicts.ERROR_CLASSES[verdicts.INFRASTRUCTURE], "unavailable"]
    return [
        {
            "name": "Infrastructure errors (lab, link, emulator: not the model)",
            "messageRegex": any_of(infra),
            "matchedStatuses": ["broken", "failed", "skipped"],
        },
        {
            "name": "Test failures: outputs, budgets, export, deploy",
            "messageRegex": any_of(verdicts.ERROR_CLASSES[verdicts.FAILURE]),
            "matchedStatuses": ["failed", "broken"],
        },
        {
            "name": "Suite or framework errors",
            "messageRegex": any_of(verdicts.ERROR_CLASSES[verdicts.ERROR]),
            "matchedStatuses": ["failed", "broken"],
        },
    ]


def write(alluredir: Path, runs: Sequence[Mapping[str, Any]]) -> None:
    alluredir.mkdir(parents=True, exist_ok=True)
    (alluredir / ENVIRONMENT_FILE).write_text(properties_text(environment(runs)), "utf-8")
    (alluredir / CATEGORIES_FILE).write_text(json.dumps(categories(), indent=2) + "\n", "utf-8")
