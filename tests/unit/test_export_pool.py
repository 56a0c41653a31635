"""Exports made ahead in forked worker processes (hil.session.prefetch), with builds that only
leave a mark, so each rule is seen on its own: order, take-back, a dead worker, sharing."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import torch

from hil import Case, seeded
from hil.session.prefetch import Export, ExportPool, plan


def wait_until(done: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    """Poll `done` until it holds; a deadline, so a pool that never gets there fails."""
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, f"waited {timeout:g} s for {what}"
        time.sleep(0.01)


def cases(count: int) -> list[Case]:
    return [Case(f"c{i}", lambda: torch.nn.Identity(), seeded((1, 2))) for i in range(count)]


def exports(items: list[Case]) -> list[Export]:
    return plan([(c, "host", "portable") for c in items], lambda c, t, r: f"{c.name}/{r}")


def marking(folder: Path, seconds: float = 0.0) -> Callable[[Export], object]:
    """A build that sleeps, then leaves `<case>` holding the pid that built it."""

    def build(export: Export) -> None:
        time.sleep(seconds)
        (folder / export.case.name).write_text(str(os.getpid()))

    return build


def pool(tmp_path: Path, items: list[Export], build: Callable[[Export], object], workers: int):  # type: ignore[no-untyped-def]
    return ExportPool(items, build, workers, tmp_path / "logs", progress=lambda line: None)


def test_workers_build_the_plan_and_a_check_waits_for_its_own(tmp_path: Path) -> None:
    items = exports(cases(4))
    ahead = pool(tmp_path, items, marking(tmp_path, 0.2), workers=2)
    try:
        time.sleep(0.1)  # both workers have started on the first two
        for export in items:
            ahead.wait_for(export.case, export.source)
            mark = tmp_path / export.case.name
            if mark.exists():  # built by a worker, never by this process
                assert int(mark.read_text()) != os.getpid()
            else:  # taken back: no worker had started it, so the check builds it
                marking(tmp_path)(export)
    finally:
        ahead.close()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("c")) == [
        "c0",
        "c1",
        "c2",
        "c3",
    ]
    logs = sorted((tmp_path / "logs").glob("export-worker-*.log"))
    assert [p.name for p in logs] == ["export-worker-1.log", "export-worker-2.log"]


def test_an_export_no_worker_has_started_is_taken_back(tmp_path: Path) -> None:
    items = exports(cases(3))
    ahead = pool(tmp_path, items, marking(tmp_path, 1.0), workers=1)
    try:
        started = time.monotonic()
        ahead.wait_for(items[-1].case, items[-1].source)
        assert time.monotonic() - started < 0.5  # not waiting for the two before it
        time.sleep(2.5)  # the worker has finished the other two and found nothing left
        assert ahead.status() == "2 of 3 exported, 0 running"
    finally:
        ahead.close()
    assert not (tmp_path / "c2").exists()
    assert (tmp_path / "c0").exists() and (tmp_path / "c1").exists()


def test_a_worker_that_dies_leaves_its_export_to_the_check(tmp_path: Path) -> None:
    items = exports(cases(2))

    def dies(export: Export) -> None:
        os._exit(3)  # as an out-of-memory kill would

    ahead = pool(tmp_path, items, dies, workers=1)
    try:
        wait_until(
            lambda: not ahead.status().startswith("0 of 2 exported, 0 running"),
            "the worker to take the first",
        )
        started = time.monotonic()
        ahead.wait_for(items[0].case, items[0].source)
        assert time.monotonic() - started < 5
        ahead.wait_for(items[1].case, items[1].source)  # left pending: taken back at once
    finally:
        ahead.close()


def test_a_case_and_recipe_material_is_exported_once_in_the_order_of_first_need() -> None:
    first, second = cases(2)
    checks = [
        (second, "host", "xnnpack-fp32"),
        (first, "host", "portable"),
        (second, "vboard", "xnnpack-fp32"),  # the same .pte as on host: one export
        (second, "pi5-emu", "xnnpack-fp32"),
    ]
    planned = plan(checks, lambda c, t, r: f"{c.name}/{r}")
    assert [(e.case.name, e.target, e.recipe) for e in planned] == [
        ("c1", "host", "xnnpack-fp32"),
        ("c0", "host", "portable"),
    ]


def test_a_check_that_made_its_own_case_waits_for_the_export_made_ahead(tmp_path: Path) -> None:
    """hil.check makes a Case around the module a test built again; the export made ahead
    under the same name is still the one it waits for."""
    items = exports(cases(2))
    ahead = pool(tmp_path, items, marking(tmp_path, 1.0), workers=1)
    try:
        wait_until(lambda: ahead.status().endswith("1 running"), "the worker to start on c0")
        again = Case("c0", lambda: torch.nn.Identity(), seeded((1, 2)))  # not the planned object
        ahead.wait_for(again, items[0].source)
        assert (tmp_path / "c0").exists()  # waited for the worker's export, not taken back
    finally:
        ahead.close()


class Found:
    """What a worker's build returns for an artifact another process had already made."""

    exported_now = False


def test_an_export_made_now_is_reported_once_and_one_found_in_the_cache_not_at_all(
    tmp_path: Path,
) -> None:
    items = exports(cases(2))

    def build(export: Export) -> object:
        time.sleep(0.2)
        return Found() if export.case.name == "c1" else None  # c0: built by the worker

    ahead = pool(tmp_path, items, build, workers=2)
    try:
        wait_until(lambda: ahead.status().startswith("2 of 2"), "both exports")
        made = ahead.wait_for(items[0].case, items[0].source)
        assert made is not None and made >= 0.2  # the worker's own export time
        assert ahead.wait_for(items[0].case, items[0].source) is None  # told once per run
        assert ahead.wait_for(items[1].case, items[1].source) is None
    finally:
        ahead.close()


def test_the_time_left_is_estimated_at_the_rate_after_the_first_export(tmp_path: Path) -> None:
    """The first export of a run also warms up the compiler (measured: an estimate of 11 min
    with 1.5 min to go); the rate is taken from the exports after it."""
    items = exports(cases(12))

    def build(export: Export) -> None:
        time.sleep(3.0 if export.case.name == "c0" else 0.1)

    ahead = pool(tmp_path, items, build, workers=1)
    try:
        wait_until(lambda: ahead.status().startswith("6 of 12"), "six exports")
        status = ahead.status()
    finally:
        ahead.close()
    assert status.endswith(("about 0 s left", "about 1 s left")), status  # 6 x 0.1 s to go
