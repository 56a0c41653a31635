"""Typed parts of an artifact: written by recipes, read by targets and verdicts.

A neutral module (it imports neither recipes nor targets), so the facts a recipe records reach
the code that reads them as types, not as string-keyed guesses.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hil.artifacts.partition import PartitionReport


@dataclass(frozen=True)
class VelaSummary:
    """One delegate's estimate (or several combined); sizes in bytes, time in microseconds."""

    accelerator: str  # as Vela writes it, e.g. "Ethos_U55_128"
    system_config: str
    memory_mode: str
    clock_hz: float
    npu_cycles: int
    total_cycles: int
    inference_time_us: float
    sram_bytes: int
    dram_bytes: int
    flash_bytes: int  # on-chip plus off-chip flash
    vela_macs: int
    delegates: int = 1

    def counters(self) -> dict[str, float]:
        """The summary as RunResult counters (all estimated)."""
        return {
            "npu_cycles": float(self.npu_cycles),
            "total_cycles": float(self.total_cycles),
            "est_time_us": self.inference_time_us,
            "clock_hz": self.clock_hz,
            "sram_bytes": float(self.sram_bytes),
            "dram_bytes": float(self.dram_bytes),
            "flash_bytes": float(self.flash_bytes),
            "vela_macs": float(self.vela_macs),
        }


@dataclass(frozen=True)
class OutputSensitivity:
    """How far one output of the quantized model moves when its rounding ties break the other
    way (hil.reference.rounding), in its own steps: the largest over the seeded runs."""

    max_steps: float  # largest |perturbed - reference| over elements and runs
    off_fraction: float  # largest share of elements moved by half a step or more, over runs
    runs: int

    def to_dict(self) -> dict[str, float]:
        return {"max_steps": self.max_steps, "off_fraction": self.off_fraction, "runs": self.runs}

    @classmethod
    def from_dict(cls, data: Any) -> OutputSensitivity:
        return cls(float(data["max_steps"]), float(data["off_fraction"]), int(data["runs"]))


@dataclass(frozen=True)
class DelegatePart:
    """One Ethos-U delegate of a .pte and its side files (delegates/<name>/)."""

    name: str
    folder: str  # relative to the artifact folder
    tosa_sha256: str  # of <folder>/out.tosa, the TOSA graph Vela compiled
    command_stream_bytes: int
    vela: VelaSummary | None = None  # Vela's estimate for this delegate


@dataclass(frozen=True)
class TosaGraphPart:
    """A delegate whose TOSA graph is kept beside the .pte (<folder>/out.tosa): every recipe
    that lowers through ExecuTorch's Arm TOSA backend (ethos-u, tosa-fp) keeps one."""

    name: str
    folder: str  # relative to the artifact folder
    tosa_sha256: str


@dataclass(frozen=True)
class VgfGraphPart:
    """A VGF delegate: its VGF file (the .pte's delegate payload, <folder>/out.vgf) as the ML
    SDK's model-converter made it from the delegate's TOSA graph (<folder>/out.tosa)."""

    name: str
    folder: str  # relative to the artifact folder
    vgf_sha256: str


@dataclass(frozen=True)
class EthosUPart:
    """What the ethos-u recipe compiled for: the NPU, its MAC rate, the delegates, Vela's total."""

    accelerator: str
    macs_per_cycle: float
    delegates: tuple[DelegatePart, ...] = ()
    vela: VelaSummary | None = None  # all delegates combined


@dataclass(frozen=True)
class CortexMPart:
    """What the cortex-m recipe lowered for."""

    cpu: str
    cmsis_nn_backend: str
    channels_last: bool  # 4-D inputs go channels-last, as the lowering expects


@dataclass(frozen=True)
class ArtifactParts:
    """The typed side of an artifact, as targets and verdicts read it."""

    partition: PartitionReport | None = None
    ethos_u: EthosUPart | None = None
    cortex_m: CortexMPart | None = None
    tosa_spec: str | None = None  # the TOSA specification an Arm lowering targeted
    tosa_graphs: tuple[TosaGraphPart, ...] = ()
    vgf_graphs: tuple[VgfGraphPart, ...] = ()

    @classmethod
    def from_details(cls, details: Mapping[str, Any]) -> ArtifactParts:
        """Read once from the artifact's record (artifact.json `details`), which recipes wrote."""
        partition = details.get("partition")
        return cls(
            partition=PartitionReport.from_dict(partition) if partition else None,
            ethos_u=_ethos_u(details) if "accelerator_config" in details else None,
            cortex_m=_cortex_m(details) if details.get("cortex_m") else None,
            tosa_spec=str(details["tosa_spec"]) if details.get("tosa_spec") else None,
            tosa_graphs=_tosa_graphs(details) if details.get("tosa_spec") else (),
            vgf_graphs=_vgf_graphs(details) if details.get("tosa_spec") else (),
        )


def _tosa_graphs(details: Mapping[str, Any]) -> tuple[TosaGraphPart, ...]:
    return tuple(
        TosaGraphPart(str(d["name"]), str(d["folder"]), str(d["tosa_sha256"]))
        for d in details.get("delegates", ())
        if "tosa_sha256" in d
    )


def _vgf_graphs(details: Mapping[str, Any]) -> tuple[VgfGraphPart, ...]:
    return tuple(
        VgfGraphPart(str(d["name"]), str(d["folder"]), str(d["vgf_sha256"]))
        for d in details.get("delegates", ())
        if "vgf_sha256" in d
    )


def _vela(data: Any) -> VelaSummary | None:
    return VelaSummary(**data) if isinstance(data, Mapping) else None


def _ethos_u(details: Mapping[str, Any]) -> EthosUPart:
    return EthosUPart(
        accelerator=str(details["accelerator_config"]),
        macs_per_cycle=float(details["macs_per_cycle"]),
        delegates=tuple(
            DelegatePart(
                str(d["name"]),
                str(d["folder"]),
                str(d["tosa_sha256"]),
                int(d["command_stream_bytes"]),
                _vela(d.get("vela")),
            )
            for d in details.get("delegates", ())
        ),
        vela=_vela(details.get("vela")),
    )


def _cortex_m(details: Mapping[str, Any]) -> CortexMPart:
    part = details["cortex_m"]
    return CortexMPart(
        str(part["cpu"]), str(part["cmsis_nn_backend"]), part.get("input_layout") == "channels_last"
    )
