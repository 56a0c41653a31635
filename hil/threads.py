"""One torch thread for work whose float results must not depend on the process doing it.

torch splits a reduction across its intra-op threads, so the last bits of a BatchNorm
statistics pass, a training step or a calibration forward depend on how many threads ran it.
Measured: suite models built in an export worker (one thread) fingerprinted differently from
the same models built in the check's process (one thread per core), so the check exported
their artifacts again. Building cases and exporting on one thread makes both the same in every
process and on every machine, whatever its core count.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch


@contextmanager
def one_thread() -> Iterator[None]:
    """torch on one intra-op thread inside the block, as many as before after it."""
    threads = torch.get_num_threads()
    if threads == 1:
        yield
        return
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)
