"""HistogramObserver's range search on Python floats: the same ranges as torchao's own."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

from hil.speedups import histogram_search

SAMPLES: dict[str, Callable[[int], torch.Tensor]] = {
    "normal": torch.randn,
    "uniform": torch.rand,
    "heavy tails": lambda n: torch.randn(n) ** 3,
    "log-normal": lambda n: torch.exp(torch.randn(n) * 2),
    "constant": torch.ones,
    "few values": lambda n: torch.randint(0, 5, (n,)).float(),
    "one outlier": lambda n: torch.cat([torch.randn(n), torch.tensor([1e4])]),
    "tiny negatives": lambda n: -torch.rand(n) * 1e-5,
    "ramp": lambda n: torch.linspace(-16, 16, n),
}
CONFIGS = {
    "int8 symmetric": (torch.qint8, torch.per_tensor_symmetric),
    "uint8 affine": (torch.quint8, torch.per_tensor_affine),
    "int32 symmetric": (torch.qint32, torch.per_tensor_symmetric),
}


def ours_is_torchaos(observer: object) -> bool:
    """Our search gives torchao's own range, bit for bit (torchao's whether or not the part is
    in place in this process)."""
    from torchao.quantization.pt2e.observer import HistogramObserver

    torchaos = histogram_search.range_search.__dict__.get(
        "__wrapped__", HistogramObserver._non_linear_param_search
    )
    ours = histogram_search.range_search.__get__(observer)()
    return all(
        torch.equal(torch.as_tensor(a), torch.as_tensor(b))
        for a, b in zip(torchaos(observer), ours, strict=True)
    )


@pytest.mark.parametrize("config", CONFIGS.values(), ids=list(CONFIGS))
@pytest.mark.parametrize("sample", SAMPLES.values(), ids=list(SAMPLES))
def test_the_range_is_torchaos_to_the_bit(
    sample: Callable[[int], torch.Tensor], config: tuple[torch.dtype, torch.qscheme]
) -> None:
    from torchao.quantization.pt2e.observer import HistogramObserver

    torch.manual_seed(0)
    for size in (5, 1000, 20000):
        observer = HistogramObserver(dtype=config[0], qscheme=config[1])
        for _ in range(3):
            observer(sample(size))
        assert ours_is_torchaos(observer)


def test_a_histogram_of_another_dtype_takes_torchaos_own_path() -> None:
    """The float32 rounding of the bounds holds for float32 sums only."""
    from torchao.quantization.pt2e.observer import HistogramObserver

    torch.manual_seed(0)
    observer = HistogramObserver()
    observer(torch.randn(1000))
    observer.histogram = observer.histogram.double()
    assert ours_is_torchaos(observer)
