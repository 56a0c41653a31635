"""The per-node error file: how another part of hil hands `hil explore` an error per operator.

hil explore does not compute these errors; whatever does (the "first divergent operator" work:
running a program's operators one by one against a reference) writes this file, and hil explore
draws it over the graph. The format, `hil-node-errors/1`, is JSON:

    {
      "format": "hil-node-errors/1",
      "pte_sha256": "e68cbdae...",          optional: the .pte the errors were measured on;
                                             when present it must be the shown .pte's sha256
      "reference": "quantized PyTorch model", optional: what the errors are measured against
      "metrics": {                           optional: how to show each metric named below
        "max_abs_steps": {"label": "max |error| (output steps)", "limit": 1, "worse": "higher"},
        "sqnr_db":       {"label": "SQNR (dB)", "limit": 25, "worse": "lower"}
      },
      "nodes": [                             one entry per operator; one of three addresses:
        {"delegate": "delegate_1", "op": 37,       "errors": {"max_abs_steps": 3, "sqnr_db": 18.5}},
        {"delegate": "delegate_1", "tensor": "tosa_conv2d_default_3", "errors": {...}},
        {"chain": 0, "instruction": 3,             "errors": {"max_abs_steps": 0}}
      ],
      "first_divergent": {"delegate": "delegate_1", "op": 37}   optional: an address as above
    }

Addresses say where an operator is in the artifact, not in the viewer:
* `delegate` + `op`: operator number `op` (0-based, constants included) of the main block of
  `delegates/<delegate>/out.tosa`, the name artifact.json's details["delegates"] lists;
* `delegate` + `tensor`: the operator of that graph that produces the named tensor;
* `chain` + `instruction` (+ optional `plan`, default the first execution plan, "forward"):
  an instruction of the .pte (a CPU operator or a delegate call), both 0-based.
Every metric value is a finite number (null: not measured, skipped). A metric without an entry
in "metrics" is shown with its own name, no limit, and higher taken as worse. With a limit, a
node within it is green and a node past it red; without one, the colour runs from white (best)
to red (worst). A delegate call in the .pte graph shows its operators' worst value unless the
file gives the call its own entry. `first_divergent` is drawn as its own overlay (on the
operator, and on its delegate's call in the .pte graph).

Where hil explore looks: `--errors FILE`, else `<results dir>/node-errors/<case>--<target>--
<recipe>.json` when it exists (the results dir is $HIL_RESULTS_DIR or .hil/results).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hil.errors import ExploreError

FORMAT = "hil-node-errors/1"
FIX = "see hil/explore/node_errors.py for the format"


@dataclass(frozen=True)
class Address:
    """Where an operator is: a delegate's TOSA operator, or a .pte instruction."""

    delegate: str | None = None
    op: int | None = None
    tensor: str | None = None
    plan: str | None = None
    chain: int | None = None
    instruction: int | None = None

    def describe(self) -> str:
        if self.delegate is not None:
            where = f"op {self.op}" if self.op is not None else f"tensor {self.tensor!r}"
            return f"{self.delegate} {where}"
        return f"{self.plan or 'plan 0'} chain {self.chain} instruction {self.instruction}"


@dataclass(frozen=True)
class Metric:
    name: str
    label: str
    limit: float | None
    higher_is_worse: bool


@dataclass(frozen=True)
class NodeErrors:
    source: Path
    pte_sha256: str | None
    reference: str | None
    metrics: Mapping[str, Metric]
    nodes: tuple[tuple[Address, Mapping[str, float]], ...]
    first_divergent: Address | None


def read_node_errors(path: Path) -> NodeErrors:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise ExploreError(
            f"cannot read the node error file {path}: {e.strerror}",
            fix="pass an existing file with --errors",
        ) from e
    except ValueError as e:
        raise ExploreError(f"{path} is not JSON: {e}", fix=FIX) from e
    return parse_node_errors(data, path)


def parse_node_errors(data: Any, source: Path) -> NodeErrors:
    where = str(source)
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        found = data.get("format") if isinstance(data, dict) else type(data).__name__
        raise ExploreError(f"{where}: format is {found!r}, expected {FORMAT!r}", fix=FIX)
    nodes_data = data.get("nodes")
    if not isinstance(nodes_data, list):
        raise ExploreError(f"{where}: 'nodes' must be a list of operator entries", fix=FIX)
    nodes = []
    names: set[str] = set()
    for i, entry in enumerate(nodes_data):
        context = f"{where}: nodes[{i}]"
        if not isinstance(entry, dict):
            raise ExploreError(f"{context} is not an object", fix=FIX)
        errors = entry.get("errors")
        if not isinstance(errors, dict) or not errors:
            raise ExploreError(f"{context} has no 'errors' object (metric -> number)", fix=FIX)
        values = {}
        for metric, value in errors.items():
            if value is None:
                continue
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or not math.isfinite(value)
            ):
                raise ExploreError(
                    f"{context}: {metric} = {value!r} is not a finite number", fix=FIX
                )
            values[str(metric)] = float(value)
        names.update(values)
        nodes.append((_address(entry, context), values))
    first = data.get("first_divergent")
    return NodeErrors(
        source=source,
        pte_sha256=_optional_text(data, "pte_sha256", where),
        reference=_optional_text(data, "reference", where),
        metrics=_metrics(data.get("metrics") or {}, names, where),
        nodes=tuple(nodes),
        first_divergent=_address(first, f"{where}: first_divergent") if first else None,
    )


def _optional_text(data: Mapping[str, Any], key: str, where: str) -> str | None:
    value = data.get(key)
    if value is not None and not isinstance(value, str):
        raise ExploreError(f"{where}: {key} must be a string", fix=FIX)
    return value


def _address(entry: Any, context: str) -> Address:
    if not isinstance(entry, dict):
        raise ExploreError(f"{context} is not an object", fix=FIX)
    if "delegate" in entry:
        delegate, op, tensor = entry["delegate"], entry.get("op"), entry.get("tensor")
        if not isinstance(delegate, str) or (op is None) == (tensor is None):
            raise ExploreError(
                f"{context}: a delegate address needs 'delegate' (its folder "
                "name) and one of 'op' (index) or 'tensor' (name)",
                fix=FIX,
            )
        if op is not None and (not isinstance(op, int) or isinstance(op, bool) or op < 0):
            raise ExploreError(f"{context}: op must be an operator index >= 0", fix=FIX)
        if tensor is not None and not isinstance(tensor, str):
            raise ExploreError(f"{context}: tensor must be a tensor name", fix=FIX)
        return Address(delegate=delegate, op=op, tensor=tensor)
    if "chain" in entry and "instruction" in entry:
        chain, index, plan = entry["chain"], entry["instruction"], entry.get("plan")
        if not all(
            isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in (chain, index)
        ):
            raise ExploreError(f"{context}: chain and instruction must be indices >= 0", fix=FIX)
        if plan is not None and not isinstance(plan, str):
            raise ExploreError(f"{context}: plan must be an execution plan's name", fix=FIX)
        return Address(plan=plan, chain=chain, instruction=index)
    raise ExploreError(
        f"{context} has no address: give delegate + op (or tensor), or chain + instruction", fix=FIX
    )


def _metrics(data: Any, names: set[str], where: str) -> Mapping[str, Metric]:
    if not isinstance(data, dict):
        raise ExploreError(f"{where}: 'metrics' must be an object (name -> description)", fix=FIX)
    metrics = {}
    for name in sorted(names | set(data)):
        spec = data.get(name) or {}
        if not isinstance(spec, dict):
            raise ExploreError(f"{where}: metrics.{name} must be an object", fix=FIX)
        limit = spec.get("limit")
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, (int, float))):
            raise ExploreError(f"{where}: metrics.{name}.limit must be a number", fix=FIX)
        worse = spec.get("worse", "higher")
        if worse not in ("higher", "lower"):
            raise ExploreError(
                f"{where}: metrics.{name}.worse must be 'higher' or 'lower'", fix=FIX
            )
        label = spec.get("label", name)
        metrics[name] = Metric(
            name, str(label), None if limit is None else float(limit), worse == "higher"
        )
    return metrics


def default_path(results_dir: Path, label: str) -> Path:
    """Where the first-divergent-operator work leaves a case's file: node-errors/<label>.json."""
    return results_dir / "node-errors" / f"{label}.json"
