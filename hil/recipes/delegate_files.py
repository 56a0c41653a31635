"""Each Ethos-U delegate's TOSA graph and Vela estimate, kept beside the .pte and proven to match.

ExecuTorch's Arm backend dumps the TOSA graph of every delegate it lowers ("output_<tag>_<spec>
.tosa"; without a delegation tag on the subgraph the name has no tag and a second such delegate
overwrites the first). Vela's own outputs in the dump folder are overwritten by each delegate.
So for each delegate hil picks its TOSA graph and runs Vela on it once more, into the delegate's
own folder: the graph is the delegate's when Vela's command stream equals the one in the .pte.
The graph named by the delegate's tag is tried first, then the other dumps; when none matches
(an overwritten dump), the graph is lowered again from the delegate's subgraph with the TOSA
backend and must then match. A graph that cannot be proven is an export error, never a guess.
"""

from __future__ import annotations

import copy
import shutil
import tempfile
from pathlib import Path
from typing import Any

from hil.artifacts.parts import VelaSummary
from hil.capture import captured_output
from hil.compat.vela import command_stream
from hil.errors import ExportError
from hil.ethos_u.vela import read_summary
from hil.export.lowering import exporter_step

TOSA_FILE = "out.tosa"  # the name ExecuTorch's vela_compile gives the graph it hands to Vela


def delegation_tag(module: Any) -> str | None:
    for node in module.original_module.graph.nodes:
        tag = node.meta.get("delegation_tag")
        if tag:
            return str(tag)
    return None


def candidate_dumps(dump: Path, tag: str | None, used: set[Path]) -> list[Path]:
    """The dumped graphs worth trying for a delegate: its own tag's first, then unused ones."""
    every = sorted(p for p in dump.glob("output*.tosa") if p not in used)
    own = [p for p in every if tag and p.name.startswith(f"output_{tag}_")]
    return own + [p for p in every if p not in own]


def _compile(graph: bytes, flags: list[str], folder: Path) -> tuple[bytes, str]:
    """Vela on one TOSA graph, writing into `folder`: (command stream, what Vela printed)."""
    from executorch.backends.arm.arm_vela import vela_compile

    with captured_output() as printed:
        result = vela_compile(graph, list(flags), intermediate_path=str(folder))
    return command_stream(result), "".join(printed)


def _lower_again(module: Any, spec: Any) -> bytes:
    """The delegate's TOSA graph, lowered anew from its subgraph with the TOSA backend."""
    from executorch.backends.arm.tosa.backend import TOSABackend

    tosa_spec = TOSABackend.filter_tosa_compile_specs(spec).dump_intermediate_artifacts_to(None)
    result = TOSABackend.preprocess(copy.deepcopy(module.original_module), tosa_spec._to_list())
    return bytes(result.processed_bytes)


def keep_delegate(
    case: str, module: Any, dump: Path, folder: Path, spec: Any, used: set[Path]
) -> VelaSummary:
    """Write folder/out.tosa and folder/output/*_summary_*.csv for one delegate."""
    tag = delegation_tag(module)
    attempts: list[tuple[str, Any]] = [
        (path.name, path.read_bytes) for path in candidate_dumps(dump, tag, used)
    ]
    attempts.append(("lowered again", lambda: _lower_again(module, spec)))
    folder.parent.mkdir(parents=True, exist_ok=True)
    for source, read in attempts:
        graph = exporter_step(f"TOSA graph for a delegate ({source})", case, read)
        if _keep_if_it_matches(case, graph, bytes(module.processed_bytes), spec, folder):
            used.update(p for p in dump.glob("output*.tosa") if p.name == source)
            return read_summary(folder / "output")
    raise ExportError(
        f"case {case!r}: no TOSA graph reproduces delegate tag {tag!r}'s command stream, so "
        "hil cannot tell which graph the NPU program was compiled from",
        fix="report this: the Ethos-U lowering is not deterministic for this model",
    )


def _keep_if_it_matches(case: str, graph: bytes, expected: bytes, spec: Any, folder: Path) -> bool:
    """Compile `graph` in a trial folder; move it to `folder` if it yields `expected`."""
    trial = Path(tempfile.mkdtemp(prefix=".vela-", dir=folder.parent))
    try:
        stream, printed = exporter_step(
            "Vela (per-delegate estimate)",
            case,
            lambda: _compile(graph, list(spec.compiler_flags), trial),
        )
        if stream != expected:
            return False
        (trial / "vela.log").write_text(printed)
        (trial / "output" / "out_vela.npz").unlink(missing_ok=True)  # it is in the .pte
        trial.rename(folder)
        return True
    finally:
        shutil.rmtree(trial, ignore_errors=True)
