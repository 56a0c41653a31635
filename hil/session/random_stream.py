"""A check leaves torch's global random numbers as it found them.

Export, quantization and lowering (torch's and ExecuTorch's code) draw from torch's global
generator, and how much they draw depends on where the artifact comes from: exported in this
process, by a worker ahead of time, or read from the cache. A test that builds a model after a
check (a loop over samples, each with fresh unseeded weights) would then get other weights from
run to run, and another verdict. hil's own random inputs use their own seeded generators.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def random_stream_kept() -> Iterator[None]:
    """Run the block with torch's CPU generator restored afterwards (hil runs on the CPU)."""
    import torch

    with torch.random.fork_rng(devices=[]):
        yield
