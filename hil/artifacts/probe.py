"""The served-program guard: a cached program is judged only for the model it was made from.

A cache key stands for a model through its fingerprint (hil.artifacts.fingerprint). Should two
models ever share a key (a way of carrying behaviour the fingerprint does not see), the second
would be judged on the first one's program: a false MISMATCH where they differ, a false PASS
where they happen to agree. So every entry keeps a probe from when it was made: the inputs it
was made with and the eager outputs of the model that made it. A check served that entry runs
its own model on the probe's inputs (or reuses its eager reference when the inputs are the same)
and compares; a difference beyond float noise is a collision, and the caller builds again under
a key that includes the difference.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from hil.arrays import Array, to_array
from hil.artifacts.fingerprint import tensors_fingerprint

PROBE_NAME = "probe.pt"

# One model's eager outputs differ between thread counts by a reduction's order: measured over
# the 87 suite cases, 1 vs 2 threads, at most 7.8e-7 of the output's peak (mobilenet_v2; 0 for
# most). Two different models differ by the signal itself. Between the two: 1e-3 relative,
# with an absolute floor at 1e-4 of the peak (128 times the measured noise).
RELATIVE_NOISE = 1e-3
ABSOLUTE_NOISE = 1e-4

log = logging.getLogger("hil.artifacts.probe")


@dataclass(frozen=True)
class Probe:
    """What made an entry: the case's name, its inputs and its model's eager outputs."""

    case: str
    inputs: tuple[torch.Tensor, ...]
    outputs: tuple[Array, ...]

    @property
    def inputs_fingerprint(self) -> str:
        return tensors_fingerprint(self.inputs)


def write_probe(
    folder: Path, case: str, inputs: Sequence[torch.Tensor], outputs: Sequence[Array]
) -> None:
    """Keep the probe beside an entry being built (torch.save: every dtype, bfloat16 too)."""
    torch.save(
        {
            "case": case,
            "inputs": [t.detach().clone() for t in inputs],
            "outputs": [torch.from_numpy(np.array(a, order="C")) for a in outputs],  # 0-d stays 0-d
        },
        folder / PROBE_NAME,
    )


def read_probe(folder: Path) -> Probe | None:
    """The entry's probe; None for an entry made before probes were kept or a garbled one
    (the guard then has nothing to compare, and says so in the log)."""
    path = folder / PROBE_NAME
    if not path.is_file():
        return None
    try:
        saved = torch.load(path, weights_only=True)
        return Probe(
            str(saved["case"]),
            tuple(saved["inputs"]),
            tuple(to_array(t) for t in saved["outputs"]),
        )
    except Exception as e:  # a garbled probe: the entry is unproven, not the run broken
        log.warning("the probe %s is unreadable (%s: %s)", path, type(e).__name__, e)
        return None


def difference(recorded: Sequence[Array], now: Sequence[Array]) -> str | None:
    """How `now` differs from `recorded` beyond float noise, or None when they agree."""
    if len(recorded) != len(now):
        return f"{len(recorded)} outputs when it was made, {len(now)} now"
    for i, (was, is_) in enumerate(zip(recorded, now, strict=True)):
        if was.shape != is_.shape or was.dtype != is_.dtype:
            return f"output {i} was {was.dtype}{list(was.shape)}, is {is_.dtype}{list(is_.shape)}"
        if was.dtype.kind not in "fc":
            if not np.array_equal(was, is_):
                return f"output {i}: {int(np.count_nonzero(was != is_))} values differ"
            continue
        peak = float(np.nanmax(np.abs(was), initial=0.0)) if was.size else 0.0
        floor = ABSOLUTE_NOISE * max(peak, 1e-30)
        if not np.allclose(is_, was, rtol=RELATIVE_NOISE, atol=floor, equal_nan=True):
            with np.errstate(invalid="ignore"):
                gap = float(np.nanmax(np.abs(is_.astype(np.float64) - was), initial=0.0))
            return f"output {i}: max |difference| {gap:.3g} (outputs up to {peak:.3g})"
    return None


def served_collision(
    probe: Probe,
    run_model: Callable[[tuple[torch.Tensor, ...]], tuple[Array, ...]],
    known: tuple[Array, ...] | None = None,
) -> str | None:
    """How the model `run_model` runs differs from the one that made the probe's entry, or
    None when they agree. `known`: its outputs on the probe's inputs, when already at hand. A
    model that gives other outputs at every run (a random op) cannot be told apart: None."""

    def outputs() -> tuple[Array, ...] | str:
        try:
            return run_model(probe.inputs)
        except Exception as e:  # the model that made the entry ran on these inputs
            return f"this model raises {type(e).__name__} on the inputs {probe.case!r} made it with"

    now = known if known is not None else outputs()
    if isinstance(now, str):
        return now
    clash = difference(probe.outputs, now)
    if clash is None:
        return None
    again = outputs()
    if isinstance(again, str) or difference(now, again) is not None:
        log.info("eager gives other outputs at every run: the served-program guard stands down")
        return None
    return f"made by case {probe.case!r}, whose eager outputs differ: {clash}"


def difference_key(key: str, outputs: Sequence[Array]) -> str:
    """The key a collided entry's model is built under instead: the old key and its own eager
    outputs, so the two models part and each keeps its entry. Float outputs count to three
    digits of their peak, so float noise between processes keeps the same key."""
    digest = hashlib.sha256(f"collision of {key}".encode())
    for array in outputs:
        digest.update(f"{array.dtype}{list(array.shape)}".encode())
        if array.dtype.kind in "fc":
            peak = float(np.nanmax(np.abs(array), initial=0.0)) if array.size else 0.0
            array = (np.round(array / peak, 3) if peak > 0 else array) + 0  # no -0.0
        digest.update(np.array(array, order="C").tobytes())
    return digest.hexdigest()
