"""The array type results travel in, and the one conversion every target needs."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import torch

Array = npt.NDArray[Any]


def to_array(value: Any) -> Array:
    """A target's output (tensor, numpy array, list) as an owned float32 numpy array."""
    if isinstance(value, torch.Tensor):
        return value.detach().float().numpy().copy()
    return np.array(value, dtype=np.float32, copy=True)


def save_check_arrays(path: Path, **groups: Sequence[Any]) -> Path:
    """Keep every array of a check in one .npz (`inputs=[...]` is stored as input0, input1...).

    Written for every check, passing or not, so a failure can be studied offline and a pass
    compared with a later failure.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    arrays: dict[str, Array] = {}
    for group, values in groups.items():
        for i, value in enumerate(values):
            arrays[f"{group}{i}"] = (
                value.detach().numpy() if isinstance(value, torch.Tensor) else np.asarray(value)
            )
    np.savez_compressed(path, **arrays)
    return path.resolve()
