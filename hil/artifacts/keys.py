"""The one key function: what about a case an export (or a quantized model) depends on.

Every cached thing is keyed by the case material below plus what is its own (the model's
fingerprint and the recipe for an artifact; the prepared graph and the quantizer for a
quantized model). One function, so the two keys can never drift apart in what they cover;
the tool versions and the canonical digest every key is made with live here too.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import json
import types
from collections.abc import Mapping
from typing import Any

import torch

from hil.artifacts.fingerprint import input_spec, tensors_fingerprint
from hil.artifacts.source_digest import module_source_digest
from hil.case import BuiltCase
from hil.compat.versions import installed, source_tree_digest


def case_material(built: BuiltCase, *, values: bool) -> dict[str, Any]:
    """The inputs' shapes and dtypes and the tool versions; with `values`, the input and
    calibration values too (they shape calibration and the stored quantized reference)."""
    material: dict[str, Any] = {
        "inputs": input_spec(built.inputs),
        "versions": dict(tool_versions()),
    }
    if values:
        material["input_values"] = tensors_fingerprint(built.inputs)
        material["calibration"] = _calibration(built)
    return material


def _calibration(built: BuiltCase) -> str:
    """The case's own calibration values; without them, the default set is the input values
    drawn on by hil.case's code, so that code names it: no need to draw it (7 seeded samples
    per input, the largest part of a warm check's key) for a key."""
    if built.calibration:
        return tensors_fingerprint(t for sample in built.calibration for t in sample)
    return f"default from the inputs by hil.case {module_source_digest('hil.case')}"


def key_of(built: BuiltCase, own: Mapping[str, Any], *, values: bool) -> tuple[str, dict[str, Any]]:
    """The key and the material it digests: `own` beside the case material."""
    material = {**own, **case_material(built, values=values)}
    return digest_of(material), material


def export_source(case_name: str, recipe_material: Mapping[str, Any]) -> str:
    """What names an export before its case is built (the case's name and the recipe's key
    material): a hint for planning exports ahead, never a key to read an artifact by."""
    return json.dumps({"case": case_name, **recipe_material}, sort_keys=True, default=str)


@functools.lru_cache(maxsize=1)
def tool_versions() -> Mapping[str, str]:
    """Versions of the tools that shape an export; part of every cache key and every report."""
    versions: dict[str, str] = {"torch": str(torch.__version__)}
    for dist in ("executorch", "ethos-u-vela", "tosa-tools", "torchao"):
        try:
            versions[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            versions[dist] = "absent"
    built_from = installed()
    if built_from.source_checkout:  # a source build keeps its version across commits and edits
        versions["executorch_commit"] = str(built_from.executorch_commit)
        versions["executorch_tree"] = str(source_tree_digest())
    return types.MappingProxyType(versions)


def digest_of(material: Mapping[str, Any]) -> str:
    """sha256 of a JSON-able mapping in canonical form."""
    text = json.dumps(material, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()
