"""A pytest plugin of the bench: keeps only the cases the file named by HIL_BENCH_CASES lists
(their case ids, `test_add::test_add_tensor_tosa_INT[rank_1]`, one a line) and deselects the
rest, before hil's plugin looks ahead to export (so a dropped case costs nothing). It also
deselects the tests HIL_BENCH_LEFT_OUT names (`test_llama::test_llama_tosa_FP`, comma
separated: every row of each, whatever its parameters), which need a download."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from executorch_ops_all import their_case


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    listed = os.environ.get("HIL_BENCH_CASES")
    left_out = set(filter(None, os.environ.get("HIL_BENCH_LEFT_OUT", "").split(",")))
    if not listed and not left_out:
        return
    wanted = set(Path(listed).read_text().splitlines()) if listed else None
    keep: list[pytest.Item] = []
    drop: list[pytest.Item] = []
    for item in items:
        case = their_case(f"{Path(str(item.path)).stem}::{item.name}")
        kept = (wanted is None or case in wanted) and case.split("[")[0] not in left_out
        (keep if kept else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
