"""The array type results travel in, and the one conversion every target needs."""

from __future__ import annotations

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
