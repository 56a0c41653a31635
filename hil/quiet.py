"""Other libraries' start-up noise, known to be harmless on this stack, kept off the first
screen of hil's commands: a user should first read hil's own lines, not torchao failing to
load CUDA kernels on a machine without CUDA. Each entry names the library, the exact message
and why it is harmless; anything else still shows, and HIL_SHOW_LIBRARY_NOISE=1 shows these
too."""

from __future__ import annotations

import logging
import os
import re
import sys
import tempfile
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from hil import environment


@dataclass(frozen=True)
class Noise:
    source: str  # the logger's name, or the warning's category name
    pattern: str  # the start of the message, as a regular expression
    why: str  # why it is harmless here


LOGGED = (
    Noise(
        "torchao",
        r"Failed to load .*_C_\w+.*\.so",
        "torchao's CUDA kernels (mxfp8, cutlass) cannot load on a CPU-only torch; hil uses none",
    ),
    Noise(
        "torch.utils._pytree",
        r"<enum '\w+'> is an Enum subclass and is now natively supported",
        "torchao registers its enums as pytree constants, which torch 2.13 deprecates",
    ),
)
WARNED = (
    Noise(
        "FutureWarning",
        r"`isinstance\(treespec, LeafSpec\)` is deprecated",
        "torch's pytree: a deprecated check inside torch itself, when a program is copied",
    ),
)

# Printed by ExecuTorch's C++ runtime straight to the process's stderr (its Info logs) when it
# starts: cpuinfo probing files an x86 or VM kernel does not have, and the threadpool hil sizes.
PRINTED = (
    Noise("executorch", r"\[cpuinfo_utils\.cpp:\d+\] ", "cpuinfo's probes of Arm-only files"),
    Noise("executorch", r"\[threadpool\.cpp:\d+\] Resetting threadpool", "hil sets it"),
)


class _Drop(logging.Filter):
    def __init__(self, patterns: list[str]) -> None:
        super().__init__()
        self.pattern = re.compile("|".join(f"(?:{p})" for p in patterns))

    def filter(self, record: logging.LogRecord) -> bool:
        return not self.pattern.match(record.getMessage())


def quiet_library_noise() -> None:
    """Keep the known noise quiet in this process: hil's command line calls it, and so does a
    script's first `hil.Session` (a user's script shows hil's lines first, as the CLI does).
    Calling it again adds nothing; it touches only the exact messages listed above."""
    if environment.SHOW_LIBRARY_NOISE.on():
        return
    by_logger: dict[str, list[str]] = {}
    for noise in LOGGED:
        by_logger.setdefault(noise.source, []).append(noise.pattern)
    for name, patterns in by_logger.items():
        logger = logging.getLogger(name)
        if not any(isinstance(f, _Drop) for f in logger.filters):
            logger.addFilter(_Drop(patterns))
    for noise in WARNED:
        category = {"FutureWarning": FutureWarning}[noise.source]
        warnings.filterwarnings("ignore", message=noise.pattern, category=category)


@contextmanager
def runtime_start_quietly() -> Iterator[None]:
    """Around the ExecuTorch runtime's start: what its C++ prints to stderr is held, the known
    lines (PRINTED) dropped and every other line written back, in order."""
    if environment.SHOW_LIBRARY_NOISE.on():
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as held:
        os.dup2(held.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            held.seek(0)
            known = re.compile("|".join(f"(?:{n.pattern})" for n in PRINTED))
            for line in held.read().decode(errors="replace").splitlines(keepends=True):
                if not known.match(line):
                    sys.stderr.write(line)
