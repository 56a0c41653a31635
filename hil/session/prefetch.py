"""Exports made ahead in worker processes, so a cold run uses every core.

Checks run one at a time in pytest's order, and on a cold cache each begins with an export
(torch.export, quantization, lowering, Vela) that uses one core. Before the first check the
run's exports are listed in check order; worker processes take them from the front and build
them into the artifact cache, behind the cache's own locks. A check then waits only for its
own artifact: done, it is read from the cache; being built, the check waits for that one
export; not started, the check takes it back and exports it itself. Nothing is exported twice
(the cache's lock decides who builds), and the run's output stays in order (the workers
write only their own log file).

The workers are forked when the plan is made, before any target is provisioned and before
torch has started a thread pool, so they inherit the cases as they are (lambdas and all) and
no runner's pipe or pty. A worker that dies leaves its export to the check that needs it.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hil.case import Case
from hil.devices import RecipeSpec
from hil.progress import Progress

log = logging.getLogger("hil.session.prefetch")

PENDING, TAKEN_BACK, RUNNING, DONE, FAILED, EXPORTED = range(6)  # EXPORTED: DONE, built now
WAIT_POLL_S = 0.05
WAIT_SAY_EVERY_S = 15.0


@dataclass(frozen=True)
class Export:
    """One artifact a run will need: the first check (in run order) that needs it."""

    case: Case
    target: str
    recipe: str | RecipeSpec | None
    source: str  # the case's name and the recipe's key material (hil.artifacts.keys)

    @property
    def key(self) -> str:
        """Equal keys, one export: host, vboard and pi5-emu share one .pte per recipe. Keyed by
        the case's name, not the Case object, so a check that builds its own Case (hil.check
        on a module made again in the test) still finds the export made ahead for it."""
        return self.source


def default_workers() -> int:
    """One per core this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def plan(
    checks: Sequence[tuple[Case, str, str | RecipeSpec | None]],
    source_of: Callable[[Case, str, str | RecipeSpec | None], str],
) -> list[Export]:
    """The distinct exports of `checks`, in the order the checks will need them."""
    exports: dict[str, Export] = {}
    for case, target, recipe in checks:
        export = Export(case, target, recipe, source_of(case, target, recipe))
        exports.setdefault(export.key, export)
    return list(exports.values())


class ExportPool:
    """Worker processes building a plan's exports; `wait_for` before a check reads its artifact.

    Shared state is two small arrays (each export's state and its worker) and a lock: no
    queues, no threads in the parent, so the check's process stays as it was.
    """

    def __init__(
        self,
        exports: Sequence[Export],
        build: Callable[[Export], object],
        workers: int,
        log_dir: Path,
        progress: Progress,
    ) -> None:
        context = multiprocessing.get_context("fork")
        self.exports = list(exports)
        self._index = {e.key: i for i, e in enumerate(self.exports)}
        self._state: Any = context.Array("i", len(self.exports), lock=False)
        self._owner: Any = context.Array("i", len(self.exports), lock=False)  # worker number
        self._seconds: Any = context.Array("d", len(self.exports), lock=False)  # export time
        self._ended: Any = context.Array("d", len(self.exports), lock=False)  # monotonic, or 0
        self._claimed: set[int] = set()  # exports made now that a check has already reported
        self._lock = context.Lock()
        self._progress = progress
        log_dir.mkdir(parents=True, exist_ok=True)
        self._workers = [
            context.Process(
                target=_work,
                args=(self, n, build, log_dir / f"export-worker-{n}.log"),
                name=f"hil-export-{n}",
                daemon=True,
            )
            for n in range(1, min(workers, len(self.exports)) + 1)
        ]
        for worker in self._workers:
            worker.start()
        progress(
            f"exporting ahead: {len(self.exports)} artifact(s) in {len(self._workers)} worker "
            f"process(es) (logs: {log_dir})"
        )

    # -- the check's side ---------------------------------------------------------------------

    def wait_for(self, case: Case, source: str) -> float | None:
        """Return once the check may read its artifact: built (or failed) by a worker, or
        taken back because no worker has started it. The cache's lock settles any race.
        Returns the seconds a worker spent exporting it in this run, to the first check that
        reads it (so the run's records count each export once), else None."""
        index = self._index.get(source)
        if index is None:
            return None
        with self._lock:
            if self._state[index] == PENDING:
                self._state[index] = TAKEN_BACK
                return None
        said = time.monotonic()
        while self._state[index] == RUNNING:
            if not self._workers[self._owner[index] - 1].is_alive():
                log.warning("the worker exporting %s died; the check exports it", case.name)
                return None  # the cache's lock died with it: the check exports it itself
            if time.monotonic() - said >= WAIT_SAY_EVERY_S:
                said = time.monotonic()
                self._progress(f"waiting for {case.name}'s export ({self.status()})")
            time.sleep(WAIT_POLL_S)
        if self._state[index] != EXPORTED or index in self._claimed:
            return None
        self._claimed.add(index)
        return float(self._seconds[index])

    def status(self) -> str:
        """'12 of 86 exported, 2 running, about 4 min left'."""
        states = list(self._state)
        done = states.count(DONE) + states.count(EXPORTED) + states.count(FAILED)
        running = states.count(RUNNING)
        left = states.count(PENDING) + running
        line = f"{done} of {len(states)} exported, {running} running"
        ended = sorted(t for t in self._ended if t)
        if len(ended) >= 2 and left:
            # at the rate since the first one ended: the first exports of a run also import
            # and warm up each recipe's compiler, which the rest do not pay again
            each = (ended[-1] - ended[0]) / (len(ended) - 1)
            line += f", about {_minutes(each * left)} left"
        return line

    def close(self) -> None:
        """Stop the workers: a run that ended early leaves its remaining exports unbuilt (an
        export stopped halfway leaves only its private build folder)."""
        for worker in self._workers:
            if worker.is_alive():
                worker.kill()
        for worker in self._workers:
            worker.join(timeout=5)
        self._workers = []

    # -- the worker's side --------------------------------------------------------------------

    def _next(self, worker: int) -> int | None:
        with self._lock:
            for index, state in enumerate(self._state):
                if state == PENDING:
                    self._owner[index] = worker
                    self._state[index] = RUNNING
                    return index
        return None

    def _finish(self, index: int, ok: bool, exported_in: float | None = None) -> None:
        if exported_in is not None:
            self._seconds[index] = exported_in
        self._ended[index] = time.monotonic()
        self._state[index] = (DONE if exported_in is None else EXPORTED) if ok else FAILED


def _work(pool: ExportPool, worker: int, build: Callable[[Export], object], log_file: Path) -> None:
    """A worker: quiet, one thread, its output in its own file; exports until none is left."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not the parent's handlers (pytest, labs)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    with log_file.open("w") as out:  # this run's log only
        os.dup2(out.fileno(), 1)
        os.dup2(out.fileno(), 2)
    sys.stdout = open(1, "w", buffering=1, closefd=False)  # noqa: SIM115 (fd 1 stays open)
    sys.stderr = open(2, "w", buffering=1, closefd=False)  # noqa: SIM115
    logging.basicConfig(
        level=logging.INFO, stream=sys.stderr, force=True, format="%(asctime)s %(message)s"
    )
    import torch

    torch.set_num_threads(1)  # as many workers as cores: one core each
    while (index := pool._next(worker)) is not None:
        export = pool.exports[index]
        what = f"{export.case.name} [{export.recipe} for {export.target}]"
        started = time.monotonic()
        try:
            artifact = build(export)
        except Exception as e:  # the check that needs it reports it
            log.info("%s failed: %s: %s", what, type(e).__name__, e)
            pool._finish(index, ok=False)
            continue
        seconds = time.monotonic() - started
        fresh = bool(getattr(artifact, "exported_now", True))
        pool._finish(index, ok=True, exported_in=seconds if fresh else None)
        if fresh:
            log.info("%s exported in %.1f s", what, seconds)
        else:
            log.info("%s was in the cache already", what)


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.0f} min" if seconds >= 90 else f"{seconds:.0f} s"
