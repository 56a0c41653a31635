"""The SIMD path this CPU gives XNNPACK's and eager PyTorch's kernels.

A latency ratio to eager PyTorch cancels the machine's speed, not its instruction set: the
same int8 MobileNetV2 ran at about 0.075 of eager's time on an AVX-512 VNNI EPYC and at 0.37 on an
AVX2 one (both XNNPACK, both correct). So a `budget_vs_eager` may name the path it was
measured on ("host/xnnpack-int8@avx2"), and this module names the path of the machine at hand.
"""

from __future__ import annotations

import functools
import platform
from pathlib import Path

# Most capable first: the first whose flags are all present names the path.
_X86_PATHS: tuple[tuple[str, frozenset[str]], ...] = (
    ("avx512-vnni", frozenset({"avx512f", "avx512bw", "avx512_vnni"})),
    ("avx-vnni", frozenset({"avx2", "avx_vnni"})),
    ("avx512", frozenset({"avx512f", "avx512bw"})),
    ("avx2", frozenset({"avx2", "fma"})),
)
_ARM_PATHS: tuple[tuple[str, frozenset[str]], ...] = (
    ("i8mm", frozenset({"i8mm"})),
    ("dotprod", frozenset({"asimddp"})),
)


@functools.cache
def simd_path() -> str:
    """ "avx512-vnni", "avx-vnni", "avx512", "avx2", "i8mm", "dotprod", or the machine's
    architecture name ("x86_64", "aarch64", "arm64") when none of those applies or the CPU's
    flags cannot be read (not Linux)."""
    machine = platform.machine().lower()
    flags = _cpu_flags()
    paths = _ARM_PATHS if machine in ("aarch64", "arm64") else _X86_PATHS
    for name, needed in paths:
        if needed <= flags:
            return name
    return machine or "unknown"


def cpu_field(*names: str) -> str | None:
    """The first CPU's value of the first of `names` /proc/cpuinfo has (lower case keys), None
    where it has none or cannot be read: the one reader of that file (the SIMD path here, the
    CPU model in a run's provenance)."""
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8")
    except OSError:
        return None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip().lower() in names:
            return value.strip()
    return None


def _cpu_flags() -> frozenset[str]:
    """The first CPU's feature flags ("flags" on x86, "Features" on Arm)."""
    return frozenset((cpu_field("flags", "features") or "").split())
