"""Which kernels an SDK registers: chosen from the programs it must run, counted exactly.

A Cortex-M cannot hold all of ExecuTorch's 200-odd portable kernels (5.9 MB of code beside a
512 KiB ITCM), so the SDK registers the operators its programs call: the union of the
operators of the `.pte` files (a suite's exports for the target, or the user's), read from
each program's own operator table. ExecuTorch's libraries split them three ways:

    aten::, dim_order_ops::   portable kernels: selected one by one (EXECUTORCH_SELECT_OPS_LIST)
    quantized_decomposed::    quantized_ops_lib: all of kernels/quantized/quantized.yaml
    cortex_m::                cortex_m_ops_lib: all of backends/cortex_m/ops/operators.yaml
    (prim ops)                always registered (kernels/prim_ops/register_prim_ops.cpp)

and the registry's table must hold every kernel of all of them: ExecuTorch sizes it by the
selected portable operators alone, so the SDK passes MAX_KERNEL_NUM, counted here the way
ExecuTorch's own codegen counts (one entry per kernel of an operator, the prim ops' array).
An operator no library has cannot be selected: it is named, and programs calling it get
MISSING KERNEL on the board.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from hil.errors import SdkBuildFailed, SdkSourceMissing, UsageError
from hil.runner.kernels import KernelList
from hil.runner.pte_plan import NotAProgram, read_plans

PORTABLE_YAML = Path("kernels/portable/functions.yaml")
QUANTIZED_YAML = Path("kernels/quantized/quantized.yaml")
CORTEX_M_YAML = Path("backends/cortex_m/ops/operators.yaml")
PRIM_OPS = Path("kernels/prim_ops/register_prim_ops.cpp")
PRIM_ARRAY = re.compile(
    r"static\s+Kernel\s+prim_ops\s*\[\s*\]\s*=\s*\{(.*?)^\};", re.DOTALL | re.MULTILINE
)
PRIM_NAME = re.compile(r'Kernel\s*\(\s*"([^"]+)"')
LIBRARIES = ("portable", "quantized", "cortex_m", "prim")
# Programs that need no portable kernel (an NPU-only model) still get a selective build:
# ExecuTorch reads an empty select list as "every portable kernel". One small kernel keeps it.
FLOOR = "aten::view_copy.out"
# The registration libraries' generated operator lists in an ExecuTorch build tree.
BUILT_LISTS = {
    "portable": "executorch_selected_kernels/selected_operators.yaml",
    "quantized": "quantized_ops_lib/selected_operators.yaml",
    "cortex_m": "cortex_m_ops_lib/selected_operators.yaml",
}


@dataclass(frozen=True)
class Catalogue:
    """Every kernel an ExecuTorch tree can register, by library: operator -> kernel count."""

    libraries: Mapping[str, Mapping[str, int]]

    def library_of(self, operator: str) -> str | None:
        return next((lib for lib in LIBRARIES if operator in self.libraries.get(lib, {})), None)


@dataclass(frozen=True)
class Selection:
    """The kernels one SDK registers, and what could not be had."""

    portable: tuple[str, ...]  # the select list
    registered: tuple[str, ...]  # every operator the SDK registers (all libraries)
    unavailable: tuple[str, ...]  # called by a program, in no library of this ExecuTorch
    max_kernel_num: int  # the registry's size: every kernel of every library
    sources: tuple[str, ...] = field(default=())  # where the operators came from

    def to_json(self) -> dict[str, Any]:
        return {
            "portable": list(self.portable),
            "registered": list(self.registered),
            "unavailable": list(self.unavailable),
            "max_kernel_num": self.max_kernel_num,
            "sources": list(self.sources),
        }


def _yaml_entries(path: Path) -> list[dict[str, Any]]:
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as e:
        raise SdkSourceMissing(
            f"cannot read ExecuTorch's kernel list {path}: {e}",
            fix="pass --executorch a complete checkout",
        ) from e
    return [e for e in data or () if isinstance(e, dict)]


def _operator_name(entry: Mapping[str, Any]) -> str | None:
    """`op: add.out` is aten::add.out; `func: ns::name.overload(...)` names its namespace."""
    if "op" in entry:
        return f"aten::{entry['op']}"
    if "func" in entry:
        name = str(entry["func"]).split("(", 1)[0].strip()
        return name if "::" in name else f"aten::{name}"
    return None


def _kernels(path: Path) -> dict[str, int]:
    counts: dict[str, int] = {}
    for entry in _yaml_entries(path):
        name = _operator_name(entry)
        if name:
            kernels = entry.get("kernels")
            counts[name] = len(kernels) if isinstance(kernels, list) and kernels else 1
    return counts


def _prim_ops(path: Path) -> dict[str, int]:
    found = PRIM_ARRAY.search(path.read_text()) if path.is_file() else None
    if found is None:
        raise SdkSourceMissing(
            f"no prim_ops table in {path}: an ExecuTorch hil does not know",
            fix="use an ExecuTorch 1.x checkout",
        )
    counts: dict[str, int] = {}
    for name in PRIM_NAME.findall(found.group(1)):
        counts[name] = counts.get(name, 0) + 1
    return counts


def catalogue(executorch: Path) -> Catalogue:
    """What the tree's libraries register (read from its kernel yaml files)."""
    return Catalogue(
        {
            "portable": _kernels(executorch / PORTABLE_YAML),
            "quantized": _kernels(executorch / QUANTIZED_YAML),
            "cortex_m": _kernels(executorch / CORTEX_M_YAML),
            "prim": _prim_ops(executorch / PRIM_OPS),
        }
    )


def program_operators(pte: Path) -> set[str]:
    """Every operator the program's methods call, as the runtime looks them up."""
    try:
        return {op for plan in read_plans(pte.read_bytes()) for op in plan.operators}
    except OSError as e:
        raise UsageError(f"cannot read {pte}: {e}") from e
    except NotAProgram as e:
        raise UsageError(
            f"{pte} is not an ExecuTorch program: {e.message}", fix="pass .pte files to --ops-from"
        ) from e


def select(cat: Catalogue, used: Iterable[str], sources: Iterable[str] = ()) -> Selection:
    """The SDK's kernels for programs calling `used`: the portable ones they need, all the
    quantized, cortex_m and prim kernels (their libraries register every one), and the
    registry size that holds them all."""
    wanted = set(used)
    portable = sorted(op for op in wanted if op in cat.libraries["portable"])
    if not portable and FLOOR in cat.libraries["portable"]:
        portable = [FLOOR]  # an empty select list would mean every portable kernel
    unavailable = sorted(op for op in wanted if cat.library_of(op) is None)
    whole = [lib for lib in LIBRARIES if lib != "portable"]
    registered = sorted({*portable, *(op for lib in whole for op in cat.libraries[lib])})
    size = sum(cat.libraries["portable"][op] for op in portable) + sum(
        sum(cat.libraries[lib].values()) for lib in whole
    )
    return Selection(tuple(portable), tuple(registered), tuple(unavailable), size, tuple(sources))


def built_registrations(build_tree: Path, cat: Catalogue) -> dict[str, list[str]]:
    """What the build actually registers, from the operator lists ExecuTorch's codegen wrote
    (so the SDK's kernel list is the build's, not hil's expectation of it)."""
    found: dict[str, list[str]] = {"prim": sorted(cat.libraries["prim"])}
    for library, relative in BUILT_LISTS.items():
        lists = sorted(build_tree.rglob(relative))
        if not lists:
            if library == "portable":
                raise SdkBuildFailed(
                    f"the ExecuTorch build in {build_tree} made no {relative}: the selective "
                    "build did not run",
                    fix="see the build log beside the SDK",
                )
            continue
        data = yaml.safe_load(lists[0].read_text()) or {}
        found[library] = sorted((data.get("operators") or {}).keys())
    return found


def built_kernel_count(registrations: Mapping[str, list[str]], cat: Catalogue) -> int:
    """The registry entries the build registers, counted as ExecuTorch's codegen does."""
    total = 0
    for library, operators in registrations.items():
        counts = cat.libraries.get(library, {})
        total += sum(counts.get(op, 1) for op in operators)
    return total


def write_kernel_list(
    path: Path, registrations: Mapping[str, list[str]], size: int, cat: Catalogue, rebuild: str
) -> None:
    """kernels.json: what the SDK registers, what its ExecuTorch could have registered, and
    the command that builds it again (with more programs)."""
    operators = sorted({op for ops in registrations.values() for op in ops})
    available = sorted({op for ops in cat.libraries.values() for op in ops})
    path.write_text(
        json.dumps(
            {
                "operators": operators,
                "by_library": dict(registrations),
                "max_kernel_num": size,
                "available": available,
                "rebuild": rebuild,
            },
            indent=1,
        )
    )


def read_kernel_list(path: Path) -> KernelList | None:
    """An SDK's kernel list (kernels.json), or None when it has no readable one (an install
    built by hand: then the runner itself refuses a program at load)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    operators = data.get("operators") if isinstance(data, dict) else None
    if not isinstance(operators, list):
        return None
    available = data.get("available")
    return KernelList(
        frozenset(map(str, operators)),
        frozenset(map(str, available)) if isinstance(available, list) else frozenset(),
        str(data.get("rebuild") or "hil sdk build ..."),
        path,
    )
