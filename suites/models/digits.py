"""A small CNN trained on scikit-learn's handwritten digits, judged by held-out accuracy.

The only case in the suites with real data and real labels: 1,797 8x8 digit images that ship
with scikit-learn (nothing is downloaded). The network is trained at first use, deterministically
(fixed seed, split and order, one thread), and its weights are cached under the hil cache
directory keyed by the hash of this file, so a warm run neither retrains nor re-exports. The
held-out quarter of the data is the case's input, with its labels: the target's accuracy on it
may not drop more than MAX_ACCURACY_DROP below eager PyTorch's.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

import torch
from torch import nn

import hil
from hil.devices import TimingPolicy
from hil.locks import file_lock
from hil.session import default_cache_dir
from hil.threads import one_thread
from suites.models.budgets import Ratios, host_budgets

SEED = 0
EPOCHS = 40
BATCH = 64
HELD_OUT = 0.25
MAX_ACCURACY_DROP = 0.01  # one point: int8 may cost a digit or two of the 450


class DigitsCNN(nn.Module):
    """Two 3x3 conv layers, a 2x2 max pool and a linear classifier over 10 digits."""

    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1),
            nn.ReLU(),
            nn.Conv2d(16, 32, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
        )
        self.classifier = nn.Linear(32 * 4 * 4, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        logits: torch.Tensor = self.classifier(torch.flatten(self.features(x), 1))
        return logits


def dataset() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """(train images, train labels, held-out images, held-out labels); images scaled to [0, 1]."""
    try:
        from sklearn.datasets import load_digits
        from sklearn.model_selection import train_test_split
    except ImportError as e:  # an extra of hil's: the digits data ships with scikit-learn
        raise ImportError(
            f"the digits case needs scikit-learn ({e}): pip install 'hil[suites]' (make setup does)"
        ) from e

    digits = load_digits()
    images = torch.tensor(digits.images, dtype=torch.float32).unsqueeze(1) / 16.0
    labels = torch.tensor(digits.target, dtype=torch.int64)
    train_x, test_x, train_y, test_y = train_test_split(
        images, labels, test_size=HELD_OUT, random_state=SEED, stratify=labels
    )
    return train_x, train_y, test_x, test_y


def train(train_x: torch.Tensor, train_y: torch.Tensor) -> DigitsCNN:
    """Adam on cross-entropy, seeded shuffling, one thread: the same weights on every run."""
    with one_thread(), torch.random.fork_rng(devices=[]):  # hil.threads: the same last bits
        torch.manual_seed(SEED)
        model = DigitsCNN()
        optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
        order = torch.Generator().manual_seed(SEED)
        model.train()
        for _ in range(EPOCHS):
            for batch in torch.split(torch.randperm(len(train_x), generator=order), BATCH):
                optimizer.zero_grad()
                loss = nn.functional.cross_entropy(model(train_x[batch]), train_y[batch])
                loss.backward()  # type: ignore[no-untyped-call]
                optimizer.step()
    return model.eval()


def weights_path() -> Path:
    """Where the trained weights live: keyed by this file's code, so editing it retrains."""
    code = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]
    return default_cache_dir() / "trained" / f"digits-cnn-{code}-torch{torch.__version__}.pt"


def trained_model() -> DigitsCNN:
    """The trained network, from the cache or trained now (and stored atomically); under a
    lock, so a run's export workers and its checks train it once between them."""
    path = weights_path()
    with file_lock(path.with_suffix(".lock"), lambda e: e):
        model = DigitsCNN()
        if path.exists():
            model.load_state_dict(torch.load(path, weights_only=True))
            return model.eval()
        train_x, train_y, _, _ = dataset()
        model = train(train_x, train_y)
        with tempfile.NamedTemporaryFile(dir=path.parent, suffix=".tmp", delete=False) as f:
            torch.save(model.state_dict(), f)
        os.replace(f.name, path)
        return model


def held_out_images() -> tuple[torch.Tensor, ...]:
    return (dataset()[2],)


def held_out_labels() -> torch.Tensor:
    return dataset()[3]


def calibration() -> list[tuple[torch.Tensor, ...]]:
    """Int8 calibration on training images only (never on the held-out set it is judged on)."""
    train_x, _, test_x, _ = dataset()
    size = len(test_x)  # the exported program has the held-out set's static batch size
    return [(train_x[i : i + size],) for i in range(0, len(train_x) - size + 1, size)]


CASES = (
    hil.Case(
        "digits_cnn",
        trained_model,
        held_out_images,
        calibration=calibration,
        labels=held_out_labels,
        classifier=True,
        max_accuracy_drop=MAX_ACCURACY_DROP,
        # the whole held-out set in one batch: about 0.5 s per run on the portable kernels
        timing=TimingPolicy(warmup=1, min_runs=3, min_time_s=0.2, max_runs=200, max_time_s=1.0),
        budget_vs_eager=host_budgets(
            avx512_vnni=Ratios(portable=240.0, xnnpack_fp32=1.6, xnnpack_int8=0.6),
            avx2=Ratios(portable=210.0, xnnpack_fp32=2.3, xnnpack_int8=1.1),
        ),
    ),
)
