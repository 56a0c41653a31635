"""End to end through Session: a broken delegate operator on u85-ref and a perturbed node of a
host program each fail their output check with a message that names the first divergent
operator, and leave the per-node errors where `hil explore` reads them."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import torch
from tosa_faults import plant, scale_rescale_multiplier

import hil
from hil.devices import DeviceRegistry
from hil.errors import OutputMismatch
from hil.session import Session

FAULT = 0.25  # added to one weight of the second conv: far above any rounding


class TwoConvs(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.first = torch.nn.Conv2d(3, 8, 3)
        self.second = torch.nn.Conv2d(8, 8, 3, stride=2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.second(torch.relu(self.first(x))).relu()


CASE = hil.Case("explained_two_convs", TwoConvs, hil.seeded((1, 3, 16, 16)))


def _perturb_pte(folder: Path, weight: torch.Tensor) -> None:
    """One element of `weight` changed in the cached .pte, its recorded sha256 updated: the
    host runtime then runs the broken program as if it had been exported so."""
    pte = folder / "model.pte"
    data = pte.read_bytes()
    stored = weight.detach().contiguous().numpy().tobytes()
    assert data.count(stored) == 1
    changed = weight.detach().clone().contiguous()
    changed.view(-1)[5] += FAULT
    pte.write_bytes(data.replace(stored, changed.numpy().tobytes()))
    meta = json.loads((folder / "artifact.json").read_text())
    meta["sha256"] = hashlib.sha256(pte.read_bytes()).hexdigest()
    (folder / "artifact.json").write_text(json.dumps(meta, indent=2))


def _session(devices: DeviceRegistry, tmp_path: Path, **options: bool) -> Session:
    return Session(
        devices=devices, cache_dir=tmp_path / "cache", results_dir=tmp_path / "results", **options
    )


def test_a_perturbed_host_kernel_is_named_in_the_failure(
    repo_devices: DeviceRegistry, tmp_path: Path
) -> None:
    with _session(repo_devices, tmp_path) as first:
        artifact = first.check(CASE, "host", "portable").artifact
        _perturb_pte(artifact.folder, first.built(CASE).module.second.weight)
    with _session(repo_devices, tmp_path) as again:
        result = again.check(CASE, "host", "portable")
    assert result.verdict == "MISMATCH" and result.divergence is not None
    message = result.failure_message() or ""
    assert (
        "first divergent operator: aten::convolution.out (conv2d_1; chain 0, instruction 2 of 4)"
    ) in message
    assert "see it: hil explore explained_two_convs --target host --recipe portable" in message
    with pytest.raises(OutputMismatch, match="first divergent operator: aten::convolution"):
        result.raise_for_failures()
    errors = json.loads(
        (
            tmp_path / "results" / "node-errors" / "explained_two_convs--host--portable.json"
        ).read_text()
    )
    assert (
        errors["format"] == "hil-node-errors/1" and errors["pte_sha256"] == result.artifact.sha256
    )
    assert errors["first_divergent"] == {"chain": 0, "instruction": 2}


def test_a_broken_delegate_operator_on_u85_ref_is_named_in_the_failure(
    repo_devices: DeviceRegistry, tmp_path: Path
) -> None:
    with _session(repo_devices, tmp_path) as first:
        artifact = first.check(CASE, "u85-ref").artifact
    index = plant(artifact.folder, "delegate_0", scale_rescale_multiplier(1))
    with _session(repo_devices, tmp_path) as again:
        result = again.check(CASE, "u85-ref")
    # the TOSA graph is the lowering's output: a wrong multiplier there is the lowering's fault
    assert result.verdict == "LOWERING MISMATCH", result.failure_message()
    message = result.failure_message() or ""
    assert "first divergent operator: RESCALE (" in message
    assert f"delegate_0, operator {index} of" in message
    errors = json.loads(
        (
            tmp_path / "results" / "node-errors" / "explained_two_convs--u85-ref--ethos-u.json"
        ).read_text()
    )
    assert errors["first_divergent"] == {"delegate": "delegate_0", "op": index}


def test_a_passing_check_is_explained_only_on_request(
    repo_devices: DeviceRegistry, tmp_path: Path
) -> None:
    with _session(repo_devices, tmp_path) as plain:
        assert plain.check(CASE, "host", "portable").divergence is None  # green runs stay fast
    with _session(repo_devices, tmp_path, explain=True) as asked:
        result = asked.check(CASE, "host", "portable")
    assert result.passed and result.divergence is not None and result.divergence.first is None
    assert "no operator left its tolerance" in result.first_divergent()


def test_outputs_rewritten_after_the_run_are_not_explained(
    repo_devices: DeviceRegistry, tmp_path: Path
) -> None:
    """Fault injection on the outputs (bench/mutants.py) changes nothing the program computed:
    a search would find no operator, so none is made and the message says why."""
    with _session(repo_devices, tmp_path) as session:
        result = session.check(
            CASE, "host", "portable", rewrite_outputs=lambda outputs: [o + 1 for o in outputs]
        )
    assert result.verdict == "MISMATCH" and result.divergence is None
    assert "not looked for, the outputs were rewritten" in (result.failure_message() or "")
