"""Which hil target and recipe answer which of ExecuTorch's pipelines, in which variant.

    TosaPipelineINT       a target's int8 recipe: ethos-u (u55-ref, u85-ref, the FVPs), cortex-m
                          (cortex-m55-ref, qemu-m55, boards), xnnpack-int8 (host, vboard, Pis)
    TosaPipelineFP        a target's float recipes: tosa-fp (tosa-fp-ref: their own lowering,
                          in the TOSA reference model, with the test's tosa_extensions),
                          portable and xnnpack-fp32 (host, vboard, Pis)
    EthosU55PipelineINT   the ethos-u recipe of a device with an Ethos-U55 (u55-ref, fvp-u55)
    EthosU85PipelineINT   the ethos-u recipe of a device with an Ethos-U85 (u85-ref, fvp-u85)
    OpNotSupportedPipeline  an Arm partition; its assertion is the partition: the TOSA FP
                          profile's (tosa-fp) or with quantize=True the INT profile's (ethos-u;
                          for u55_subset=True, an Ethos-U55's)
    CortexMTester         ExecuTorch's Cortex-M harness (test_dialect, test_implementation):
                          the cortex-m recipe (cortex-m55-ref, qemu-m55, boards)
    VgfPipeline           the VGF recipes (vgf-emu): vgf when it quantizes (its default), vgf-fp
                          with quantize=False; the test's TOSA specification as theirs builds it

Not answered, each skipped with its name and why: EthosU65PipelineINT (no U65 target),
PassPipeline, TransformAnnotationPassPipeline and QuantizationPipeline (they test one
ExecuTorch pass or annotation, not a program on a target).

A variant is what the test's quantization asks for, read from the pipeline's own options and
the config the test set with `quantizer.set_global(...)` (which wins, as in their harness):
16-bit activations (a16w8: `tosa_extensions=["int16"]`, `a16w8_quantization=True`, or an int16
activation config), 4-bit weights (a8w4: a weight config of range [-7, 7]), per-tensor weights,
symmetric input/output quantization. Each is a recipe option, so each is its own artifact and
verdict. What a recipe cannot honour (4-bit weights off Ethos-U, a 32-bit activation config,
float8 programs on the CPU's kernels) is a skip that names it. A float program is judged in its
own float type (float32, float16, bfloat16, float8: the inputs'), whatever `tosa_extensions`
allow; the tosa-fp recipe lowers for the test's own TOSA specification. The test's
`transform_passes` run before partitioning on the Arm recipes (tosa-fp, ethos-u, vgf, vgf-fp).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import torch

from hil.devices import DeviceSpec, RecipeSpec
from hil.executorch_ops.calls import PipelineCall
from hil.export import transform_passes
from hil.tolerance_override import ToleranceOverride

INT_RECIPES = ("ethos-u", "cortex-m", "xnnpack-int8")
FLOAT_RECIPES = ("tosa-fp", "portable", "xnnpack-fp32", "vgf-fp")
VGF = "vgf"  # the collected choice for a VgfPipeline; its call picks vgf or vgf-fp
VGF_DEFAULT_SPEC = "TOSA-1.0+FP+INT+int4+int16"  # VgfCompileSpec()'s, as VgfPipeline takes it
MXFP_NOT_ANSWERED = (
    "hil does not stand in for their MXFP pipelines yet (weights in microscaling formats, "
    "TOSA 1.1's mxfp extension): their rows are not judged by hil"
)
NOT_ANSWERED = {
    "EthosU65PipelineINT": "hil has no Ethos-U65 target",
    "PassPipeline": "it tests one ExecuTorch pass, not a program on a target",
    "TransformAnnotationPassPipeline": "it tests an annotation pass, not a program on a target",
    "QuantizationPipeline": "it tests the quantizer's annotations, not a program on a target",
    "MXFPTosaPipelineFP": MXFP_NOT_ANSWERED,
    "MXFPVgfPipeline": MXFP_NOT_ANSWERED,
}
NPU_FAMILY = {"EthosU55PipelineINT": "ethos-u55", "EthosU85PipelineINT": "ethos-u85"}
NPU_DEVICES = {
    "ethos-u55": "Ethos-U55 (u55-ref, fvp-u55)",
    "ethos-u85": "Ethos-U85 (u85-ref, fvp-u85)",
}
FLOAT_LABELS = {
    torch.float32: "fp32",
    torch.float16: "fp16",
    torch.bfloat16: "bf16",
    torch.float8_e4m3fn: "fp8e4m3",
    torch.float8_e5m2: "fp8e5m2",
}
# the float types ExecuTorch's portable kernels compute in (float8 has no kernel)
FLOAT_TYPES_RUN = (torch.float32, torch.float16, torch.bfloat16, torch.float64)


def numerics(pipeline: str, options: dict[str, Any] | None = None) -> str:
    """ "int" or "fp": the program the pipeline makes."""
    if pipeline == "TosaPipelineFP":
        return "fp"
    if pipeline == "OpNotSupportedPipeline":
        return "int" if (options or {}).get("quantize") else "fp"
    if pipeline == "VgfPipeline":
        return "int" if (options or {}).get("quantize", True) else "fp"
    return "int"


def call_recipe(call: PipelineCall, collected: str) -> str:
    """The recipe that answers `call` on the target chosen at collection: a VgfPipeline's
    `quantize` picks vgf or vgf-fp (known only once the test built it)."""
    if call.pipeline == "VgfPipeline" and collected == VGF:
        return VGF if numerics(call.pipeline, call.options) == "int" else "vgf-fp"
    return collected


def recipes_for(pipeline: str, spec: DeviceSpec) -> list[str]:
    """The device's recipes that answer `pipeline` (empty: none; the caller says why)."""
    if pipeline in NOT_ANSWERED:
        return []
    names = spec.recipe_names
    if pipeline == "VgfPipeline":  # one choice; the call picks vgf or vgf-fp (call_recipe)
        return [VGF] if VGF in names or "vgf-fp" in names else []
    family = NPU_FAMILY.get(pipeline)
    if family is not None:
        fits = spec.npu is not None and spec.npu.startswith(family) and "ethos-u" in names
        return ["ethos-u"] if fits else []
    if numerics(pipeline) == "fp" and pipeline != "OpNotSupportedPipeline":
        return [r for r in FLOAT_RECIPES if r in names and r != "vgf-fp"]
    if pipeline == "OpNotSupportedPipeline":  # an Arm partition to assert on: INT or FP
        return [r for r in names if r in ("ethos-u", "tosa-fp")][:1]
    if pipeline == "CortexMTester":
        return ["cortex-m"] if "cortex-m" in names else []
    return next(([r] for r in INT_RECIPES if r in names), [])


def subset_reason(call: PipelineCall, spec: DeviceSpec, target: str) -> str | None:
    """Why `target` cannot answer this call although it answers the pipeline. A
    TosaPipelineINT asking for TOSA's control-flow extension (cf) needs a profile that has it
    (not the U55's). An OpNotSupportedPipeline asserts the partition of the TOSA profile it
    names: without
    `quantize=True` the FP profile's (tosa-fp-ref), with it the INT profile's (an NPU's); for
    the Ethos-U55 subset (u55_subset=True) what the U55's partition leaves out, which another
    NPU delegates (measured: conv2d's large strides and kernels are delegated on u85-ref)."""
    if call.pipeline == "TosaPipelineINT" and "cf" in (call.option("tosa_extensions") or ()):
        if spec.npu is not None and spec.npu.startswith("ethos-u55"):
            return (
                "TosaPipelineINT(tosa_extensions=['cf']) lowers control flow (torch.cond, "
                "while_loop) into TOSA's cf extension, which the Ethos-U55's profile lacks "
                f"(the U85's has it): it runs on {NPU_DEVICES['ethos-u85']}, not on {target}"
            )
        return None
    if call.pipeline != "OpNotSupportedPipeline":
        return None
    profile = "int" if call.option("quantize") else "fp"
    answers = "ethos-u" if profile == "int" else "tosa-fp"
    if answers not in spec.recipe_names:
        where = "an Ethos-U target" if profile == "int" else "tosa-fp-ref"
        return (
            f"OpNotSupportedPipeline(quantize={bool(call.option('quantize'))}) asserts the "
            f"TOSA {profile.upper()} profile's partition: it runs on {where}, not on "
            f"{target}"
        )
    if not call.option("u55_subset"):
        return None
    if spec.npu is not None and spec.npu.startswith("ethos-u55"):
        return None
    return (
        f"OpNotSupportedPipeline(u55_subset=True) asserts the Ethos-U55 subset's partition: "
        f"it runs on {NPU_DEVICES['ethos-u55']}, not on {target}"
    )


def fit_reason(pipeline: str, targets: list[str]) -> str:
    """Why none of `targets` answers `pipeline`."""
    if pipeline in NOT_ANSWERED:
        return f"{pipeline}: {NOT_ANSWERED[pipeline]}"
    if pipeline in NPU_FAMILY:
        return (
            f"{pipeline} runs on a device with an {NPU_DEVICES[NPU_FAMILY[pipeline]]}, "
            f"not on {', '.join(targets)}"
        )
    if pipeline == "CortexMTester":
        return (
            f"{pipeline} runs the cortex-m recipe (cortex-m55-ref, qemu-m55, a board), not "
            f"on {', '.join(targets)}"
        )
    if pipeline == "OpNotSupportedPipeline":
        return (
            f"{pipeline} asserts an Arm partition: give an Ethos-U target, not {', '.join(targets)}"
        )
    if pipeline == "VgfPipeline":
        return f"{pipeline} runs on vgf-emu (the VGF recipes), not on {', '.join(targets)}"
    kind = (
        "a float recipe (tosa-fp-ref, host, ...)"
        if numerics(pipeline) == "fp"
        else "an int8 recipe"
    )
    return f"{pipeline} needs {kind}, which {', '.join(targets)} do not have"


@dataclass(frozen=True)
class Variant:
    """How the test quantizes, as recipe options (`label` for reports), or why hil cannot."""

    label: str
    options: dict[str, Any] = field(default_factory=dict)
    unsupported: str | None = None

    def recipe(self, name: str) -> RecipeSpec:
        return RecipeSpec(name, dict(self.options))


def _activation_bits(config: Any) -> int | None:
    spec = getattr(config, "input_activation", None) or getattr(config, "output_activation", None)
    size = getattr(getattr(spec, "dtype", None), "itemsize", None)
    return int(size) * 8 if size else None


def _weight_range(config: Any) -> tuple[int, int] | None:
    spec = getattr(config, "weight", None)
    low, high = getattr(spec, "quant_min", None), getattr(spec, "quant_max", None)
    return (int(low), int(high)) if low is not None and high is not None else None


def _per_channel(config: Any) -> bool | None:
    spec = getattr(config, "weight", None)
    scheme = str(getattr(spec, "qscheme", "") or "")
    return "per_channel" in scheme if scheme else None


def vgf_spec(call: PipelineCall) -> str:
    """The TOSA specification a VgfPipeline lowers for, built as theirs builds it: the test's
    `tosa_spec`, else `tosa_version` (VgfCompileSpec's default) with `tosa_extensions` (bf16
    when the version has FP and the test names none)."""
    given = call.option("tosa_spec")
    if given is not None:
        return str(given)
    version = str(call.option("tosa_version") or VGF_DEFAULT_SPEC)
    extensions = call.option("tosa_extensions")
    if extensions is None:
        extensions = ["bf16"] if "FP" in version else []
    return version + "".join(f"+{e}" for e in extensions)


ARM_RECIPES = ("tosa-fp", "ethos-u", VGF, "vgf-fp")


def variant_of(call: PipelineCall, recipe: str) -> Variant:
    """The variant `call` asks of `recipe`, with the test's `transform_passes` on the Arm
    recipes (on the CPU's recipes they are left out: they work around what TOSA lacks, such as
    int64 indices, which ExecuTorch's CPU kernels have)."""
    found = _variant_of(call, recipe)
    if recipe not in ARM_RECIPES or found.unsupported or not call.option("transform_passes"):
        return found
    names, unnamed = _pass_names(call.option("transform_passes"))
    if unnamed:
        return Variant(
            found.label,
            unsupported=f"transform_passes {', '.join(unnamed)}: a pass hil cannot make again "
            "from its name (built with arguments, or defined inside a function)",
        )
    return Variant(found.label, {**found.options, transform_passes.OPTION: names})


def _pass_names(given: Any) -> tuple[list[str], list[str]]:
    """The option's names of a test's passes (a list, or a dict of lists by method: its
    "forward" list), and the passes that a name cannot make again."""
    passes = given.get("forward", ()) if isinstance(given, dict) else given
    names, unnamed = [], []
    for each in passes:
        name = transform_passes.name_of(each)
        if name is None:
            unnamed.append(type(each).__name__)
        else:
            names.append(name)
    return names, unnamed


def _variant_of(call: PipelineCall, recipe: str) -> Variant:
    extensions = [str(e) for e in call.option("tosa_extensions") or ()]
    if recipe == "vgf-fp":
        found = _float_variant(call, recipe)
        return Variant(found.label, {"tosa_spec": vgf_spec(call)}, found.unsupported)
    if recipe in FLOAT_RECIPES:
        return _float_variant(call, recipe)
    if recipe == VGF:  # its specification has int16 by default: 16 bits only by the config
        extensions = []
    config = call.global_config
    a16 = bool(call.option("a16w8_quantization")) or "int16" in extensions
    per_channel = bool(call.option("per_channel_quantization", True))
    bits = _activation_bits(config) if config is not None else None
    if bits is not None:
        if bits not in (8, 16):
            return Variant(
                f"a{bits}",
                unsupported=f"a {bits}-bit activation config "
                "(quantizer.set_global): hil's recipes quantize activations to "
                "8 or 16 bits",
            )
        a16 = bits == 16
    weights = _weight_range(config) if config is not None else None
    four_bit = weights is not None and weights[1] <= 7
    if config is not None and _per_channel(config) is not None:
        per_channel = bool(_per_channel(config))
    symmetric_io = bool(call.option("symmetric_io_quantization")) or call.io_config is not None
    label = "a16w8" if a16 else ("a8w4" if four_bit else "int8")
    label += "" if per_channel else " per-tensor"
    label += " symmetric-io" if symmetric_io else ""
    if recipe not in ("ethos-u", VGF):
        asked = (
            ("16-bit activations", a16 and recipe != "cortex-m"),
            ("4-bit weights", four_bit),
            ("symmetric input/output quantization", symmetric_io),
            ("per-tensor weights", not per_channel and recipe == "cortex-m"),
        )
        refused = [what for what, wanted in asked if wanted]
        if refused:
            return Variant(
                label, unsupported=f"{', '.join(refused)}: hil's {recipe} recipe has no such option"
            )
        if recipe == "cortex-m":
            return Variant(label, {"int16_activations": a16})
        return Variant(label, {"per_channel": per_channel})
    options = {
        "a16w8": a16,
        "per_channel": per_channel,
        "weights": "int4" if four_bit else "int8",
        "symmetric_io": symmetric_io,
    }
    if recipe == VGF:
        options["tosa_spec"] = vgf_spec(call)
    if a16 and four_bit:
        return Variant(label, unsupported="16-bit activations with 4-bit weights")
    return Variant(label, options)


def _float_variant(call: PipelineCall, recipe: str) -> Variant:
    """A float program is in its inputs' (or else its weights') float type. Their
    `tosa_extensions` (bf16, fp8...) only allow a type in the TOSA lowering: test_add lists
    bf16 for its float32, float16 and bfloat16 rows alike, and each row is its own program.
    The tosa-fp recipe lowers for the test's own TOSA specification (version, extensions)."""
    dtype = program_float_type(call)
    label = FLOAT_LABELS.get(dtype, str(dtype).removeprefix("torch."))
    if recipe == "tosa-fp":
        extensions = sorted({str(e) for e in call.option("tosa_extensions") or ()})
        version = str(call.option("tosa_version") or "1.0")
        return Variant(label, {"version": version, "extensions": extensions})
    if dtype in FLOAT_TYPES_RUN or recipe == "vgf-fp":
        return Variant(label)
    return Variant(
        label,
        unsupported=f"{label} inputs: ExecuTorch's portable and XNNPACK "
        f"kernels have no {label} arithmetic, so hil's {recipe} recipe cannot run it",
    )


def program_float_type(call: PipelineCall) -> Any:
    """The torch float type of the test's program: its first float input's, else its first
    float weight's, else float32 (a program of integer inputs and no weights)."""
    tensors = _tensors(call.inputs)
    parameters = getattr(call.module, "parameters", None)
    if callable(parameters):
        tensors += list(parameters())
    return next((t.dtype for t in tensors if t.is_floating_point()), torch.float32)


def _tensors(value: Any) -> list[torch.Tensor]:
    """The tensors in a test's inputs, nested ones included (cat takes a tuple of them)."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for item in value for t in _tensors(item)]
    return []


def their_cpu(call: PipelineCall) -> str | None:
    """The Cortex-M a CortexMTester test targets ("cortex-m55"), from its target_config."""
    cpu = getattr(call.option("target_config"), "cpu", None)
    name = getattr(cpu, "name", None)
    return f"cortex-{name.lower()}" if isinstance(name, str) else None


# TosaPipelineINT's own bar for the quantized model against eager (their `.original_model`
# stage: relative Frobenius error and cosine similarity), with its defaults.
QUANTIZATION_BAR = {"frobenius_threshold": 0.15, "cosine_threshold": 0.9}


def quantization_bar(call: PipelineCall) -> ToleranceOverride | None:
    """The test's own limits for hil's quantization question, where their pipeline states one
    (TosaPipelineINT, defaults included); the target question keeps hil's limits."""
    if call.pipeline != "TosaPipelineINT":
        return None
    frobenius = call.option("frobenius_threshold", QUANTIZATION_BAR["frobenius_threshold"])
    cosine = call.option("cosine_threshold", QUANTIZATION_BAR["cosine_threshold"])
    # None: the test turns that part of their check off (test_sub's tan() outputs are unbounded)
    sqnr = (
        None
        if frobenius is None
        else math.inf
        if float(frobenius) <= 0
        else -20.0 * math.log10(float(frobenius))
    )
    said = [
        f"relative Frobenius error {float(frobenius):g}, about SQNR {sqnr:.1f} dB"
        if sqnr is not None
        else "no Frobenius bar (frobenius_threshold=None)",
        f"cosine {float(cosine):g}"
        if cosine is not None
        else "no cosine bar (cosine_threshold=None)",
    ]
    waived = tuple(m for m, v in (("sqnr_db", sqnr), ("cosine", cosine)) if v is None)
    return ToleranceOverride(
        reason=f"the test's own bar for the quantized model against eager (ExecuTorch's "
        f"original-model check: {' and '.join(said)}); hil's limits for the target stay",
        min_sqnr_db=sqnr,
        min_cosine=None if cosine is None else float(cosine),
        waived=waived,
    )
