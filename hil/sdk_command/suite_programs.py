"""The programs a test suite exports for a target: what `--ops-from suites` selects kernels by.

The suite is collected by pytest itself, with hil's plugin and `--target=DEVICE`, exactly as
`pytest suites --target=DEVICE` would collect it (the same cases, recipes, opt-in tags and
deselections), but nothing runs: the collected checks are exported into the artifact cache
(ahead, on every core), and the `.pte` of each is returned. The run that follows finds every
one of them in the cache, so building the SDK costs that run no export.
"""

from __future__ import annotations

import contextlib
import io
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hil.errors import HilError, UsageError
from hil.progress import Progress


class _Collector:
    """A pytest plugin that keeps the (case, target, recipe) of every collected hil check."""

    def __init__(self) -> None:
        self.checks: list[tuple[Any, str, str]] = []

    def pytest_collection_finish(self, session: Any) -> None:
        from hil.plugin.state import Variant

        for item in session.items:
            callspec = getattr(item, "callspec", None)
            variant = callspec.params.get("hil_variant") if callspec else None
            if isinstance(variant, Variant):
                self.checks.append((variant.case, variant.target, variant.recipe))


@dataclass(frozen=True)
class SuitePrograms:
    programs: tuple[Path, ...]
    failed: tuple[tuple[str, str], ...]  # (check id, why its export failed)
    checks: int


def collect_checks(
    paths: Sequence[str], device: str, extra_args: Sequence[str] = ()
) -> list[tuple[Any, str, str]]:
    import pytest

    collector = _Collector()
    args = [
        *paths,
        f"--target={device}",
        "--collect-only",
        "-qq",
        "-p",
        "no:cacheprovider",
        "--hil-export-workers=0",
        *extra_args,
    ]
    # pytest's own lines (a count per file, its warnings summary) are not the command's steps:
    # kept, and shown only when the collection fails
    said = io.StringIO()
    with contextlib.redirect_stdout(said), warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        code = pytest.main([*args, "-W", "ignore::DeprecationWarning"], plugins=[collector])
    if code not in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
        tail = "\n".join(said.getvalue().strip().splitlines()[-15:])
        raise UsageError(
            f"collecting {' '.join(paths)} for --target={device} failed (pytest exit "
            f"{int(code)}):\n{tail}",
            fix=f"run `pytest {' '.join(paths)} --target={device} --collect-only` to see it all",
        )
    return collector.checks


def suite_programs(
    paths: Sequence[str], device: str, progress: Progress, extra_args: Sequence[str] = ()
) -> SuitePrograms:
    """Export (or find in the cache) every program the suite at `paths` runs on `device`."""
    from hil.session import Session

    checks = collect_checks(paths, device, extra_args)
    if not checks:
        raise UsageError(
            f"{' '.join(paths)} has no hil checks for --target={device}",
            fix="pass the suite folder, or .pte files, to --ops-from",
        )
    progress(
        f"{len(checks)} checks of {' '.join(paths)} on {device}: exporting their programs "
        "(cached ones are read)"
    )
    programs: dict[Path, None] = {}
    failed: list[tuple[str, str]] = []
    with Session(progress=progress) as session:
        session.export_ahead(checks)
        for case, target, recipe in checks:
            try:
                programs.setdefault(session.export(case, target, recipe).pte_path, None)
            except HilError as e:  # the suite's run reports it too; its kernels are not needed
                failed.append((f"{case.name}-{target}-{recipe}", e.message.splitlines()[0]))
    return SuitePrograms(tuple(programs), tuple(failed), len(checks))
