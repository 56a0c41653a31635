"""The Ethos-U recipe: EthosUQuantizer, EthosUCompileSpec, EthosUPartitioner and Vela.

Options (from the device spec): accelerator_config ("ethos-u55-128", "ethos-u85-256", ...),
system_config and memory_mode (sections of Arm's vela.ini; defaults per NPU as ExecuTorch picks
them), extra_flags (more Vela flags), per_channel (weights), a16w8 (16-bit activations),
weights ("int8", or "int4": ExecuTorch's a8w4 config) and symmetric_io (the inputs and outputs
quantized with the global config too, as ExecuTorch's `symmetric_io_quantization`).

Besides the .pte the recipe writes what lets a reference target run the program without an NPU:

    delegates/<name>/out.tosa          the TOSA graph Vela compiled for that delegate
    delegates/<name>/output/*.csv      Vela's estimate for it (cycles, SRAM, flash)
    host_program.pt2                   the rest of the program; delegate calls as hil::tosa_delegate
    vela.log                           what the lowering and Vela printed

The TOSA graphs come from ExecuTorch's own intermediate dump; hil.recipes.delegate_files runs
Vela once more on each, into the delegate's own folder, and keeps a graph only when Vela turns it
into exactly the delegate's command stream in the .pte. The dump path is a build setting
that ExecuTorch also records in each delegate's compile specs; it is removed again (checked
against a plain compile spec) so the .pte is the one an export without dumping produces.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from hil.artifacts.store import ExportProduct
from hil.case import BuiltCase
from hil.errors import UsageError
from hil.ethos_u.vela import (
    ACCELERATOR_CONFIGS,
    check_ini_choice,
    combine,
    default_ini,
    ini_sections,
    mac_utilization,
    macs_per_cycle,
)
from hil.export import transform_passes
from hil.recipes.arm_lowered import DELEGATES, Delegated, keep_delegated
from hil.recipes.arm_partition import (
    lower_logged,
)
from hil.recipes.base import Recipe
from hil.recipes.delegate_files import TOSA_FILE, keep_delegate
from hil.reference import arm_quantized
from hil.reference.quantized import QuantizedModel

# Vela flags the recipe sets from its options; extra_flags may not repeat them.
MANAGED_FLAGS = (
    "--accelerator-config",
    "--system-config",
    "--memory-mode",
    "--config",
    "--output-format",
    "--output-dir",
)


class EthosURecipe(Recipe):
    name = "ethos-u"
    numerics = "int8"
    option_defaults = MappingProxyType(
        {
            "accelerator_config": "ethos-u55-128",
            "system_config": None,
            "memory_mode": None,
            "extra_flags": (),
            **arm_quantized.OPTION_DEFAULTS,
        }
    )

    step_allowances = arm_quantized.STEP_ALLOWANCES

    def __init__(
        self, options: Mapping[str, Any] | None = None, *, shared_dir: Path | None = None
    ) -> None:
        super().__init__(options, shared_dir=shared_dir)
        self.numerics = arm_quantized.numerics_of(self.options)

    def validate(self) -> None:
        config = self.options["accelerator_config"]
        if config not in ACCELERATOR_CONFIGS:
            raise UsageError(
                f"recipe {self.name}: accelerator_config {config!r} is not an Ethos-U55/U85 "
                "configuration",
                fix="use one of " + ", ".join(ACCELERATOR_CONFIGS),
            )
        for option in ("system_config", "memory_mode"):
            value = self.options[option]
            if value is not None and not isinstance(value, str):
                raise UsageError(f"recipe {self.name}: option {option} must be a string")
        arm_quantized.validate(self.name, self.options)
        transform_passes.validate(self.name, self.options[transform_passes.OPTION])
        flags = self.options["extra_flags"]
        if isinstance(flags, str) or not all(isinstance(f, str) for f in flags):
            raise UsageError(f"recipe {self.name}: extra_flags must be a list of strings")
        for flag in flags:
            if flag.split("=")[0] in MANAGED_FLAGS:
                raise UsageError(
                    f"recipe {self.name}: extra_flags may not set {flag.split('=')[0]}",
                    fix="use the recipe options accelerator_config, system_config, memory_mode",
                )

    @property
    def accelerator(self) -> str:
        return str(self.options["accelerator_config"])

    def check_vela_config(self) -> None:
        """Refuse a system config or memory mode Arm's vela.ini lacks (before any export)."""
        sections = ini_sections(str(default_ini()))
        check_ini_choice(
            "system config",
            self.options["system_config"],
            sections["System_Config"],
            f"recipe {self.name}: system_config",
        )
        check_ini_choice(
            "memory mode",
            self.options["memory_mode"],
            sections["Memory_Mode"],
            f"recipe {self.name}: memory_mode",
        )

    def compile_spec(self) -> Any:
        from executorch.backends.arm.ethosu import EthosUCompileSpec

        spec = EthosUCompileSpec(
            self.accelerator,
            system_config=self.options["system_config"],
            memory_mode=self.options["memory_mode"],
            extra_flags=list(self.options["extra_flags"]) or None,
        )
        # Resolve the pass-pipeline config now, as sharing one spec between the quantizer and
        # the partitioner does in ExecuTorch's own recipe: it is then part of the compile specs.
        spec._get_pass_pipeline_config()
        return spec

    def quantizer_identity(self) -> Mapping[str, Any]:
        return arm_quantized.identity("EthosUQuantizer", self.options)

    def quantizer(self, spec: Any) -> Any:
        from executorch.backends.arm.quantizer import EthosUQuantizer

        return arm_quantized.configure(EthosUQuantizer(spec), self.options)

    def quantized_model(self, built: BuiltCase, spec: Any, workdir: Path) -> QuantizedModel:
        return arm_quantized.quantized_model(
            built, self.quantizer_identity(), lambda: self.quantizer(spec), self.shared_dir, workdir
        )

    def export(self, built: BuiltCase, workdir: Path) -> ExportProduct:
        # The out-variants of quantize/dequantize that to_executorch needs; registered here
        # because a reused quantized model means the quantizer package was never imported.
        import executorch.kernels.quantized  # noqa: F401

        self.check_vela_config()
        case = built.case.name
        spec = self.compile_spec()
        model = self.quantized_model(built, spec, workdir)
        dump = workdir / "tosa-dump"
        edge, partitioner = self._lower(case, model, dump, workdir)
        kept = keep_delegated(case, edge, partitioner, spec, dump, workdir, keep_delegate)
        return model.product(kept.pte, self._details(spec, kept, model, workdir))

    def partition_checks(self) -> list[Any]:
        """Checks the partitioner asks beside its own (none: a test's edit adds them,
        hil.executorch_ops.checked)."""
        return []

    def _lower(self, case: str, model: QuantizedModel, dump: Path, workdir: Path) -> Any:
        from executorch.backends.arm.ethosu import EthosUPartitioner

        checks = self.partition_checks()  # passed only when there are any: 1.4 has no such argument
        partitioner = EthosUPartitioner(
            self.compile_spec().dump_intermediate_artifacts_to(str(dump)),
            **({"additional_checks": checks} if checks else {}),
        )
        edge = lower_logged(
            case,
            model.program,
            partitioner,
            workdir,
            self.accelerator,
            "vela.log",
            "the TOSA graph Vela got is among the kept files",
            transform_passes.instances(self.name, self.options[transform_passes.OPTION]),
        )
        return edge, partitioner

    def _details(
        self, spec: Any, kept: Delegated, model: QuantizedModel, workdir: Path
    ) -> dict[str, Any]:
        names, lowered, summaries, report = kept.names, kept.lowered, kept.kept, kept.report
        total = combine(summaries)
        a16 = bool(self.options["a16w8"])
        utilization = (
            mac_utilization(report.accelerated_macs, self.accelerator, total.npu_cycles, a16)
            if total
            else None
        )
        return {
            "accelerator_config": self.accelerator,
            "tosa_spec": str(spec.tosa_spec),
            "vela_flags": list(spec.compiler_flags),
            "macs_per_cycle": macs_per_cycle(self.accelerator, a16),
            "mac_utilization": utilization,
            "delegates": [
                {
                    "name": name,
                    "folder": f"{DELEGATES}/{name}",
                    "tosa_sha256": _sha256(workdir / DELEGATES / name / TOSA_FILE),
                    "command_stream_bytes": len(module.processed_bytes),
                    "vela": dataclasses.asdict(summary),
                }
                for name, module, summary in zip(names, lowered, summaries, strict=True)
            ],
            "vela": dataclasses.asdict(total) if total else None,
            "partition": report.to_dict(),
            "quantized_model": model.key[:16],
        }


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
