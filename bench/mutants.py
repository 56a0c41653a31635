"""Mutation bench: does a verdict catch outputs rewritten the way kernel bugs rewrite them?

    .venv/bin/python bench/mutants.py           # host, vboard, pi5-emu, u85-ref, cortex-m55-ref
    .venv/bin/python bench/mutants.py --targets host u85-ref

Small models go through the public API (hil.Session.check) on every recipe of each target; the
target really runs, and `rewrite_outputs` rewrites its outputs before they are judged:

    gain        every output scaled: the largest change is SIZE of the output's range
    offset      every output shifted by SIZE of the range (a zero point off)
    few         three elements shifted by SIZE of the range
    wild        one element off by SIZE of the range (up to 10x the range)
    swapped     two channels (or the halves of the last dim) exchanged
    stale       the last quarter of the elements left from another computation
    nan         one element NaN

Quantized outputs are snapped back onto their quantization grid, as an integer kernel's would
be. A mutant is caught when the verdict is MISMATCH (the target check) or, where the device is
judged apart from its program (u85-ref, vboard, pi5-emu), DEVICE MISMATCH. Clean runs must PASS;
anything else is a false alarm. Printed: caught/total per target and mutant, below and from 1 %
of the range, and whether the goal holds (every mutant of 1 % and more caught, no false alarm).
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))

from figures import record

import hil
from hil.arrays import Array

TARGETS = ("host", "vboard", "pi5-emu", "u85-ref", "cortex-m55-ref")
SIZES = (0.001, 0.003, 0.01, 0.03, 0.1)
WILD_SIZES = (0.01, 0.1, 1.0, 10.0)
# the verdicts that catch a rewritten output: one question, or the device's where it is asked apart
CAUGHT = ("MISMATCH", "DEVICE MISMATCH")
Mutant = Callable[[Array, np.random.Generator], Array]


def _seeded(make: Callable[[], nn.Module]) -> Callable[[], nn.Module]:
    def build() -> nn.Module:
        torch.manual_seed(0)
        return make()

    return build


class SmallCnn(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
        )
        self.head = nn.Linear(16, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.flatten(self.features(x), 1))


MODELS = (
    hil.Case(
        "conv_relu",
        _seeded(lambda: nn.Sequential(nn.Conv2d(8, 16, 3, padding=1), nn.ReLU())),
        hil.seeded((1, 8, 16, 16)),
    ),
    hil.Case(
        "depthwise",
        _seeded(lambda: nn.Conv2d(8, 8, 3, padding=1, groups=8)),
        hil.seeded((1, 8, 16, 16)),
    ),
    hil.Case("linear", _seeded(lambda: nn.Linear(64, 32)), hil.seeded((4, 64))),
    hil.Case("small_cnn", _seeded(SmallCnn), hil.seeded((1, 3, 32, 32)), classifier=True),
)


@dataclass(frozen=True)
class Kind:
    name: str
    sizes: tuple[float | None, ...]
    make: Callable[[float | None], Mutant]


def _range(out: Array) -> float:
    return float(np.max(out) - np.min(out)) or 1.0


def gain(size: float | None) -> Mutant:
    def rewrite(out: Array, rng: np.random.Generator) -> Array:
        peak = float(np.max(np.abs(out))) or 1.0
        return out * (1.0 + (size or 0) * _range(out) / peak)

    return rewrite


def offset(size: float | None) -> Mutant:
    return lambda out, rng: out + (size or 0) * _range(out)


def few(size: float | None) -> Mutant:
    def rewrite(out: Array, rng: np.random.Generator) -> Array:
        flat = out.reshape(-1).copy()
        flat[rng.choice(flat.size, size=min(3, flat.size), replace=False)] += (size or 0) * _range(
            out
        )
        return flat.reshape(out.shape)

    return rewrite


def wild(size: float | None) -> Mutant:
    def rewrite(out: Array, rng: np.random.Generator) -> Array:
        flat = out.reshape(-1).copy()
        flat[rng.integers(flat.size)] += (size or 0) * _range(out)
        return flat.reshape(out.shape)

    return rewrite


def swapped(_size: float | None) -> Mutant:
    def rewrite(out: Array, rng: np.random.Generator) -> Array:
        if out.ndim > 1 and out.shape[1] > 1:
            swapped_out = out.copy()
            swapped_out[:, [0, 1]] = out[:, [1, 0]]
            return swapped_out
        half = out.shape[-1] // 2
        return np.concatenate([out[..., half:], out[..., :half]], axis=-1)

    return rewrite


def stale(_size: float | None) -> Mutant:
    def rewrite(out: Array, rng: np.random.Generator) -> Array:
        flat = out.reshape(-1).copy()
        tail = max(1, flat.size // 4)
        flat[-tail:] = rng.permutation(flat)[:tail]  # another computation's values
        return flat.reshape(out.shape)

    return rewrite


def nan(_size: float | None) -> Mutant:
    def rewrite(out: Array, rng: np.random.Generator) -> Array:
        flat = out.reshape(-1).astype(np.float32, copy=True)
        flat[rng.integers(flat.size)] = np.nan
        return flat.reshape(out.shape).astype(out.dtype)

    return rewrite


KINDS = (
    Kind("gain", SIZES, gain),
    Kind("offset", SIZES, offset),
    Kind("few", SIZES, few),
    Kind("wild", WILD_SIZES, wild),
    Kind("swapped", (None,), swapped),
    Kind("stale", (None,), stale),
    Kind("nan", (None,), nan),
)


def on_grid(mutant: Mutant, step: float | None) -> Callable[[tuple[Array, ...]], Sequence[Array]]:
    """Rewrite output 0 (rounded onto its quantization grid when it has one)."""

    def rewrite(outputs: tuple[Array, ...]) -> Sequence[Array]:
        rng = np.random.default_rng(0)
        first = mutant(outputs[0], rng)
        if step:
            first = np.round(first / step) * step
        return (first.astype(outputs[0].dtype), *outputs[1:])

    return rewrite


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", nargs="+", default=list(TARGETS))
    parser.add_argument("--results", type=Path, default=Path(".hil/bench-mutants"))
    parser.add_argument("--record", action="store_true", help="write bench/figures.json")
    args = parser.parse_args()
    caught: dict[tuple[str, str, str], list[int]] = defaultdict(lambda: [0, 0])
    alarms: list[str] = []
    missed: list[str] = []
    with hil.Session(results_dir=args.results) as session:
        for target in args.targets:
            spec = session.devices.get(target)
            for recipe in spec.recipe_names:
                for case in MODELS:
                    clean = session.check(case, target, recipe)
                    where = f"{case.name} on {target} [{recipe}]"
                    if clean.verdict != "PASS":
                        alarms.append(
                            f"{where}: {clean.verdict}: "
                            f"{(clean.failure_message() or '').splitlines()[:2]}"
                        )
                        continue
                    step = clean.artifact.output_scales[0] if clean.numerics != "fp32" else None
                    for kind in KINDS:
                        for size in kind.sizes:
                            rewrite = on_grid(kind.make(size), step)
                            result = session.check(case, target, recipe, rewrite_outputs=rewrite)
                            band = "gross" if size is None else ("<1%" if size < 0.01 else ">=1%")
                            tally = caught[(target, kind.name, band)]
                            tally[1] += 1
                            if result.verdict in CAUGHT:
                                tally[0] += 1
                            elif band != "<1%":
                                missed.append(f"{where}: {kind.name} {size}: {result.verdict}")
    print(f"{'target':15s} {'mutant':8s} {'<1 % caught':>12s} {'>=1 % caught':>13s}")
    for target in args.targets:
        for kind in KINDS:
            small = caught.get((target, kind.name, "<1%"), [0, 0])
            big = (
                caught[(target, kind.name, "gross")]
                if kind.sizes == (None,)
                else caught.get((target, kind.name, ">=1%"), [0, 0])
            )
            print(
                f"{target:15s} {kind.name:8s} {small[0]:5d}/{small[1]:<6d} {big[0]:6d}/{big[1]:<6d}"
            )
    print(f"false alarms on clean runs: {len(alarms)}")
    for line in alarms:
        print(f"  {line}")
    print(f"missed mutants of 1 % and more: {len(missed)}")
    for line in missed:
        print(f"  {line}")
    met = not alarms and not missed
    if args.record:
        command = " ".join(["bench/mutants.py", *sys.argv[1:]])
        big = sum(n for (_, _, band), (_, n) in caught.items() if band != "<1%")
        for name, value, unit, what in (
            ("big", big, "mutants", "mutants of 1 % of the range and more, and gross ones"),
            ("missed", len(missed), "mutants", "of those, not caught"),
            ("false_alarms", len(alarms), "runs", "clean runs that failed"),
        ):
            record(f"mutants.{name}", value, unit, what, command)
    print(
        "goal (every mutant of 1 % of the range and more caught, no false alarm): "
        + ("met" if met else "NOT met")
    )
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
