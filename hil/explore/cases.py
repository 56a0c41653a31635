"""Find a suite case by name, or from a `MODULE:ATTR` spec.

By name, every module of the suites' packages (`suites.operators`, `suites.models` in the
working folder, or `--suites DIR`) is imported and its module-level cases collected: a `Case`,
or a tuple, list or dict of them (`OPERATORS`, `TABLE`, `CASES`, `CASE`). `MODULE:ATTR` names a
Case anywhere on the import path (the working folder included), e.g.
`suites.models.test_mobilenet_lrn:CASE` or `my_pkg.cases:MY_CASE`.
"""

from __future__ import annotations

import difflib
import importlib
import logging
import pkgutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hil.case import Case
from hil.errors import UsageError

SUITE_PACKAGES = ("suites.operators", "suites.models")

log = logging.getLogger("hil.explore.cases")


def find_case(spec: str, suites_root: Path) -> Case:
    """The case `spec` names (a case name, or MODULE:ATTR)."""
    _on_path(suites_root)
    if ":" in spec:
        return _from_spec(spec)
    found = dict(_suite_cases())
    if spec in found:
        return found[spec]
    close = difflib.get_close_matches(spec, list(found), n=5, cutoff=0.6)
    raise UsageError(
        f"no suite case is called {spec!r} (looked in {', '.join(SUITE_PACKAGES)} under "
        f"{suites_root.resolve()})",
        fix=("did you mean " + ", ".join(close) + "?")
        if close
        else "give a case name from suites/ (e.g. mobilenet_v2_lrn), MODULE:ATTR naming a "
        "hil.Case, or the path of a .pte",
    )


def _on_path(root: Path) -> None:
    folder = str(root.resolve())
    if folder not in sys.path:
        sys.path.insert(0, folder)


def _from_spec(spec: str) -> Case:
    module_name, _, attr = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise UsageError(
            f"cannot import {module_name!r} for {spec!r}: {e}",
            fix="run from the folder that holds the module, or fix its name",
        ) from e
    value: Any = module
    for part in attr.split("."):
        if not hasattr(value, part):
            raise UsageError(f"{module_name} has no {attr!r}", fix="name a hil.Case attribute")
        value = getattr(value, part)
    if not isinstance(value, Case):
        raise UsageError(
            f"{spec} is a {type(value).__name__}, not a hil.Case",
            fix="name a hil.Case, e.g. suites.models.test_mobilenet_lrn:CASE",
        )
    return value


def _suite_cases() -> Iterator[tuple[str, Case]]:
    for package_name in SUITE_PACKAGES:
        try:
            package = importlib.import_module(package_name)
        except ImportError as e:
            log.warning("cannot import %s: %s", package_name, e)
            continue
        for info in pkgutil.iter_modules(package.__path__, f"{package_name}."):
            try:
                module = importlib.import_module(info.name)
            except Exception as e:  # a broken suite module must not hide the others' cases
                log.warning("skipping %s: %s: %s", info.name, type(e).__name__, e)
                continue
            for value in vars(module).values():
                yield from _cases_in(value)


def _cases_in(value: Any) -> Iterator[tuple[str, Case]]:
    if isinstance(value, Case):
        yield value.name, value
    elif isinstance(value, dict):
        for item in value.values():
            if isinstance(item, Case):
                yield item.name, item
    elif isinstance(value, (tuple, list)):
        for item in value:
            if isinstance(item, Case):
                yield item.name, item
