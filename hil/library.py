"""`hil.Session` for scripts and notebooks: the session that writes what the pytest plugin
writes, so `hil report` makes a certification report of a library run.

In its results folder (`results_dir`, else `$HIL_RESULTS_DIR` or `.hil/results`) the first check
starts `run.json` (what ran, on which machine, the tools and targets) and `records.jsonl`, each
check appends its record as it ends (an error's too, before it is raised), and close() ends
`run.json` (with the count and sha256 of the records it wrote). A new session starts a new run
there, as a new pytest run does: the folder's earlier run is moved into `earlier/<run_id>/`,
and from the first check to close() the session holds the folder, so a pytest run or another
session that wants it meanwhile is refused (ResultsBusy), and this session is refused while
one of those holds it. A library run has no collection: its run.json's `collected` and `ended`
stay null.
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path
from typing import Any

from hil import session
from hil.case import Case
from hil.devices import RecipeSpec
from hil.errors import HilError
from hil.quiet import quiet_library_noise
from hil.results import provenance
from hil.results.writer import ResultsFolder
from hil.session.session import OutputRewrite, RecipeChoice
from hil.verdict.error_records import error_record
from hil.verdict.result import CheckResult


class Session(session.Session):
    """A Session that records its checks in its results folder (module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        quiet_library_noise()  # the script's first screen is hil's, as the command line's is
        super().__init__(*args, **kwargs)
        self._run: dict[str, Any] | None = None
        self._folder = ResultsFolder(self.results_dir)
        self._records: list[dict[str, Any]] = []

    def check(
        self,
        case: Case,
        target: str,
        recipe: RecipeChoice = None,
        *,
        rewrite_outputs: OutputRewrite | None = None,
    ) -> CheckResult:
        self._start(target)
        try:
            result = super().check(case, target, recipe, rewrite_outputs=rewrite_outputs)
        except HilError as e:
            name = recipe.name if isinstance(recipe, RecipeSpec) else recipe
            self._record(error_record(case.name, target, name or "", e))
            raise
        self._record(result.to_record())
        return result

    def _start(self, target: str) -> None:
        """The run begun at the first check (or the first after close()), before any work:
        a folder another run holds refuses it with ResultsBusy."""
        if self._run is None or not self._folder.holding:
            argv = [os.path.basename(sys.argv[0] or "python"), *sys.argv[1:]]
            run = provenance.new_run(
                argv=argv,
                positional=[],
                invocation_dir=Path.cwd(),
                rootdir=Path.cwd(),
                targets={},
                line=f"cd {shlex.quote(str(Path.cwd()))} && "
                + shlex.join([sys.executable, *sys.argv]),
            )
            self._folder.begin(run)
            self._run, self._records = run, []
        if target not in self._run["targets"]:
            self._run["targets"][target] = provenance.target_entry(self.devices.get(target))
        self._folder.write_run(self._run)

    def _record(self, record: dict[str, Any]) -> None:
        self._records.append(record)
        self._folder.append(record)

    def close(self) -> None:
        if self._folder.holding and self._run is not None and self._run["finished"] is None:
            passed = all(r["verdict"] == "PASS" for r in self._records)
            self._folder.finish(self._run, exit_status=0 if passed else 1, records=self._records)
        self._folder.release()
        super().close()
