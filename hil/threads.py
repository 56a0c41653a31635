"""torch's intra-op threads held at a count for a block: one for work whose float results must
not depend on the process doing it, the host target's count while its programs run.

torch splits a reduction across its intra-op threads, so the last bits of a BatchNorm
statistics pass, a training step or a calibration forward depend on how many threads ran it.
Measured: suite models built in an export worker (one thread) fingerprinted differently from
the same models built in the check's process (one thread per core), so the check exported
their artifacts again. Building cases and exporting on one thread makes both the same in every
process and on every machine, whatever its core count.

ExecuTorch 1.4.1's Python runtime runs some portable kernels in torch's OpenMP pool (one run of
tiny_opt's portable program with torch at two threads starts a second thread; 1.5.1's does
not), so the host target holds torch at its own thread count while programs run (hil.targets.host).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager

import torch


@contextmanager
def intra_op_threads(count: int) -> Iterator[None]:
    """torch on `count` intra-op threads inside the block, as many as before after it."""
    before = torch.get_num_threads()
    if before == count:
        yield
        return
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def one_thread() -> AbstractContextManager[None]:
    """torch on one intra-op thread inside the block, as many as before after it."""
    return intra_op_threads(1)
