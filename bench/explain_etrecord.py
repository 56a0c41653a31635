"""What recording an ETRecord at every export would cost, printed as ratios from one run.

hil.explain.cpu re-exports a failing case inside `recording_etrecord` instead of recording at
every export; this bench says whether that choice still holds. Per model and CPU recipe it
lowers the same program three times, alternating, and prints the best of each:
plain (as a green run does), with ETRecord generation, and with the ETRecord also saved
(and its size next to the .pte's). It checks the .pte is byte-identical with and without.

Usage: .venv/bin/python bench/explain_etrecord.py [case names; default resnet8 mobilenet_v2]
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from hil.case import Case
from hil.export.lowering import recording_etrecord
from hil.recipes import make_recipe

REPEATS = 3


def cases() -> dict[str, Case]:
    from suites.models import digits, mlperf_tiny, mobilenet_v2_cases

    return {c.name: c for c in (*mlperf_tiny.CASES, *digits.CASES, *mobilenet_v2_cases.CASES)}


def best_export(case: Case, recipe_name: str, folder: Path, record: bool) -> tuple[float, bytes]:
    built = case.build()
    recipe = make_recipe(recipe_name, shared_dir=folder / "shared")
    recipe.export(built, folder)  # warm: the quantized model is built once, outside the timing
    best, pte = float("inf"), b""
    for _ in range(REPEATS):
        started = time.perf_counter()
        if record:
            with recording_etrecord(folder / "model.etrecord"):
                pte = recipe.export(built, folder).pte
        else:
            pte = recipe.export(built, folder).pte
        best = min(best, time.perf_counter() - started)
    return best, pte


def main(names: list[str]) -> None:
    table = cases()
    print(
        f"{'case':<18} {'recipe':<13} {'plain s':>8} {'+etrecord':>10} {'ratio':>6} "
        f"{'etrecord MB':>12} {'pte MB':>7} same .pte"
    )
    for name in names:
        for recipe in ("portable", "xnnpack-fp32", "xnnpack-int8"):
            with tempfile.TemporaryDirectory() as tmp:
                folder = Path(tmp)
                plain, pte = best_export(table[name], recipe, folder, record=False)
                recorded, again = best_export(table[name], recipe, folder, record=True)
                size = (folder / "model.etrecord").stat().st_size / 1e6
                print(
                    f"{name:<18} {recipe:<13} {plain:8.2f} {recorded:10.2f} "
                    f"{recorded / plain:6.2f} {size:12.1f} {len(pte) / 1e6:7.1f} "
                    f"{pte == again}"
                )


if __name__ == "__main__":
    main(sys.argv[1:] or ["resnet8", "mobilenet_v2"])
