"""What reached the runner is counted by the runner (LINK_STATS, protocol 1.2): a first deploy
puts the whole .pte into its pool, a redeploy of the unchanged model puts nothing there, and a
new model is counted again. The real runner on a real pty (vboard)."""

from __future__ import annotations

import torch

from hil import Case, seeded
from hil.recipes import make_recipe
from hil.session import Session
from hil.targets.serial import SerialTarget


def tiny(width: int) -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, width), torch.nn.ReLU())


def test_the_runner_counts_a_deploy_and_a_redeploy_moves_nothing(session: Session) -> None:
    recipe = make_recipe("portable")
    first = session.artifact(
        session.built(Case("stats_a", lambda: tiny(16), seeded((1, 8)))), recipe
    )
    other = session.artifact(
        session.built(Case("stats_b", lambda: tiny(24), seeded((1, 8)))), recipe
    )
    target = session.target("vboard")
    assert isinstance(target, SerialTarget)
    client = target.client
    start = client.link_stats()
    target.deploy(first)
    loaded = client.link_stats()
    assert loaded.model_bytes - start.model_bytes == first.size
    assert loaded.chunk_bytes - start.chunk_bytes >= first.size
    assert loaded.loads == start.loads + 1 and loaded.file_bytes == start.file_bytes

    target.deploy(first)
    again = client.link_stats()
    assert (again.model_bytes, again.chunk_bytes, again.file_bytes, again.loads) == (
        loaded.model_bytes,
        loaded.chunk_bytes,
        loaded.file_bytes,
        loaded.loads,
    )
    assert again.frames_in > loaded.frames_in  # it was asked (the hash check), and answered

    target.deploy(other)
    swapped = client.link_stats()
    assert (
        swapped.model_bytes - again.model_bytes == other.size and swapped.loads == again.loads + 1
    )
