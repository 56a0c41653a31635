"""Exports made ahead with the real exporter: every artifact is built once, by a worker or by
the check that took it back, and a warm run forks nothing; also when a model's weights depend
on how many threads built it, as BatchNorm statistics from a forward pass do (hil.threads)."""

from __future__ import annotations

import re
from pathlib import Path

import torch
from torch import nn

from hil import Case, seeded
from hil.case import case_from_module
from hil.devices import DeviceRegistry
from hil.session import Session


def linear(width: int) -> Case:
    def build() -> nn.Module:
        torch.manual_seed(width)
        return nn.Sequential(nn.Linear(8, width), nn.ReLU(), nn.Linear(width, 4))

    return Case(f"ahead_{width}", build, seeded((2, 8)))


def threads_in_weights() -> Case:
    """The last bits of its weights depend on torch's thread count, as a reduction's do."""

    def build() -> nn.Module:
        torch.manual_seed(3)
        model = nn.Sequential(nn.Linear(8, 4))
        with torch.no_grad():
            model[0].weight.mul_(1 + 1e-6 * torch.get_num_threads())
        return model

    return Case("ahead_threads", build, seeded((2, 8)))


CASES = [linear(w) for w in (6, 10, 14)] + [threads_in_weights()]
CHECKS = [
    (c, t, r) for c in CASES for t in ("host", "vboard") for r in ("portable", "xnnpack-int8")
]


def run(devices: DeviceRegistry, cache: Path, results: Path) -> list[bool]:
    with Session(devices=devices, cache_dir=cache, results_dir=results) as session:
        session.export_ahead(CHECKS, workers=2)
        return [
            session.check(case, target, recipe).artifact.exported_now
            for case, target, recipe in CHECKS
        ]


def test_each_artifact_is_exported_once_and_a_warm_run_forks_nothing(
    repo_devices: DeviceRegistry, tmp_path: Path
) -> None:
    threads = torch.get_num_threads()
    torch.set_num_threads(2)  # the checks' process on two threads, each worker on one
    try:
        exported_here = run(repo_devices, tmp_path / "cache", tmp_path / "cold")
    finally:
        torch.set_num_threads(threads)
    logs = (tmp_path / "cold" / "export-workers").glob("export-worker-*.log")
    pattern = re.compile(r" ahead_\w+ \[[^]]+\] exported in ")
    by_workers = sum(len(pattern.findall(p.read_text())) for p in logs)
    # 4 cases x 2 recipes, host and vboard sharing each .pte: each export is reported as
    # made in this run exactly once, whether a worker made it ahead or a check took it back
    # before any worker started it
    assert sum(exported_here) == 8
    assert 1 <= by_workers <= 8
    assert not any(run(repo_devices, tmp_path / "cache", tmp_path / "warm"))
    assert not (tmp_path / "warm" / "export-workers").exists()


def test_a_check_leaves_torchs_random_numbers_as_it_found_them(
    repo_devices: DeviceRegistry, tmp_path: Path
) -> None:
    """Quantizing and lowering draw from torch's global generator. A model a test builds after
    a check (fresh unseeded weights per sample, as ExecuTorch's own tests do) must get the same
    weights whether the check exported here, a worker did, or the cache had it."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv1d(2, 4, 3), nn.ReLU())
    case = case_from_module("random_stream", model, (torch.rand(1, 2, 8),))
    expected = torch.get_rng_state()
    with Session(devices=repo_devices, cache_dir=tmp_path / "cache", results_dir=tmp_path) as s:
        assert s.export(case, "u85-ref", "ethos-u").exported_now
        assert torch.equal(torch.get_rng_state(), expected)
        for _ in range(2):  # exported now, then from the cache
            s.check(case, "host", "xnnpack-int8")
            assert torch.equal(torch.get_rng_state(), expected)
