"""What hil changes in torch and ExecuTorch at run time to export and load faster: declared,
switchable, and checked against the code each change replaces.

Every part is measured (docs/benchmarks.md) and proven to leave every program the same
(tests/integration/test_pristine_export.py exports one program per recipe with and without
them, in separate processes, and compares the bytes). Still, a release report is signed over
the compiler, so:

* `HIL_PRISTINE_EXPORT=1` (pytest's `--hil-pristine-export` sets it, for the export workers
  too) installs none of them: torch and ExecuTorch run as shipped in every process hil starts.
* Each part names the shipped functions it replaces and the digest of their code it was written
  against (`code_digest`: bytecode, names and constants, not a version prefix). A torch or
  ExecuTorch whose code differs (a patch release) leaves the part out, with one log line.
* `declared()` (pristine, or the parts with the digests they check) is part of every artifact's
  key and the run's provenance, and `install()`'s answer (the parts in place where the export
  ran) is kept in the artifact's details, which every record carries: a pristine run never
  reuses a patched export, and a report says which parts made its programs.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from hil import environment
from hil.speedups import (
    export_speedup,
    fx_code_reuse,
    fx_compile_cache,
    histogram_search,
    idle_decompositions,
    idle_edge_passes,
    load_speedup,
    pass_placeholder,
    provenance_sharing,
)
from hil.speedups.patch_once import Part

log = logging.getLogger("hil.speedups.switch")

PRISTINE = environment.PRISTINE_EXPORT.name
LEFT_OUT = environment.SPEEDUPS_OFF.name  # comma-separated part names (bench/speedup_parts.py)


def pristine() -> bool:
    """Whether torch and ExecuTorch are to run as shipped (no part installed)."""
    return environment.PRISTINE_EXPORT.on()


def left_out() -> frozenset[str]:
    """The parts this process is told to leave out (HIL_SPEEDUPS_OFF), every one if pristine."""
    if pristine():
        return frozenset(p.name for p in parts())
    return frozenset(n.strip() for n in environment.SPEEDUPS_OFF.text().split(",") if n.strip())


def parts() -> tuple[Part, ...]:
    """Every part, in the order they install."""

    return (
        *export_speedup.PARTS,
        provenance_sharing.PART,
        pass_placeholder.PART,
        fx_compile_cache.PART,
        fx_code_reuse.PART,
        load_speedup.PART,
        histogram_search.PART,
        idle_decompositions.PART,
        idle_edge_passes.PART,
    )


_refused: set[str] = set()


def install(names: Sequence[str] | None = None) -> dict[str, str]:
    """Install every part that fits (of `names`, when given), once per process, unless
    pristine: what is in place (name -> the digest it checked)."""
    skipped = left_out()
    for part in parts():
        if (
            (names is not None and part.name not in names)
            or part.patch.installed
            or (part.name in _refused or part.name in skipped)
        ):
            continue
        if part.fits():
            part.patch.install()
        else:
            _refused.add(part.name)
            log.warning(
                "export speed-up %s left out: the code it replaces is not the code it "
                "was written against (torch or ExecuTorch changed)",
                part.name,
            )
    return {p.name: p.digest for p in parts() if p.patch.installed}


def declared() -> dict[str, Any]:
    """What an artifact's key and a run's provenance say of the compiler: pristine, or the
    parts that may be installed, each with the digest it installs only on (no part is looked
    up or checked here: keys are computed on warm runs too)."""
    skipped = left_out()
    return {
        "pristine": pristine(),
        "parts": {p.name: p.digest for p in parts() if p.name not in skipped},
    }
