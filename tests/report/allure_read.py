"""Reading allure-pytest's result folder the way the allure report does."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any


def allure_results(folder: Path) -> dict[str, dict[str, Any]]:
    """Result files by test name (the allure UI shows the same)."""
    found = {}
    for path in folder.glob("*-result.json"):
        result = json.loads(path.read_text())
        found[result["name"]] = result
    return found


def labels(result: dict[str, Any]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for label in result["labels"]:
        out.setdefault(label["name"], []).append(label["value"])
    return out


def attachment(folder: Path, result: dict[str, Any], name: str) -> Path:
    (found,) = [a for a in result["attachments"] if a["name"] == name]
    return folder / found["source"]


def category_of(categories: list[dict[str, Any]], result: dict[str, Any]) -> list[str]:
    """Allure's rule: the status must be listed and the regex must match the whole message."""
    message = (result.get("statusDetails") or {}).get("message", "")
    return [
        c["name"]
        for c in categories
        if result["status"] in c.get("matchedStatuses", [])
        and ("messageRegex" not in c or re.fullmatch(c["messageRegex"], message))
    ]
