"""The array type results travel in, and the one conversion every target needs."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import torch

Array = npt.NDArray[Any]
# The torch types numpy has none of, each with the unsigned type of its width: an array holds
# their values widened to float32 (exactly), or their bits as that unsigned type.
RAW_BITS = {
    torch.bfloat16: torch.uint16,
    torch.float8_e4m3fn: torch.uint8,
    torch.float8_e5m2: torch.uint8,
}


def to_array(value: Any) -> Array:
    """An output (tensor, numpy array, list) as an owned numpy array of the same dtype.

    The dtype is kept so a target that returns float where eager returns int32 is caught;
    only bfloat16 and float8, which numpy lacks, become float32 (exactly).
    """
    if isinstance(value, torch.Tensor):
        tensor = value.detach()
        if tensor.dtype in RAW_BITS:
            tensor = tensor.float()
        return tensor.numpy().copy()
    return np.array(value, copy=True)


def save_check_arrays(path: Path, **groups: Sequence[Any]) -> tuple[Path, str]:
    """Keep every array of a check in one .npz (`inputs=[...]` is stored as input0, input1...);
    its resolved path and the sha256 of the file as written.

    Written for every check, passing or not, so a failure can be studied offline and a pass
    compared with a later failure. The file keeps its name across runs (a later check of the
    same name replaces it), so the record carries the sha256: a reader can tell this check's
    arrays from another's before it draws them.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    arrays: dict[str, Array] = {}
    for group, values in groups.items():
        for i, value in enumerate(values):
            arrays[f"{group}{i}"] = (
                to_array(value) if isinstance(value, torch.Tensor) else np.asarray(value)
            )
    np.savez(path, **arrays)  # uncompressed: model tensors barely compress, and 8x faster
    with path.open("rb") as f:
        digest = hashlib.file_digest(f, "sha256").hexdigest()
    return path.resolve(), digest
