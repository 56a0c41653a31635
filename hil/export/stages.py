"""Which stage of an Ethos-U lowering raised: the Arm passes, the TOSA lowering, partitioning
or Vela, read from the exception's traceback.

The innermost frame that belongs to a known stage decides, because the stages nest: ExecuTorch's
Ethos-U backend (executorch/backends/arm/ethosu/) runs the Arm passes, then the TOSA lowering,
then Vela, so a frame of that package is on every traceback and says nothing by itself. (It
once made an error in an Arm pass read "Vela rejected the model".)
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

# (path fragment, stage), the stage of a frame whose file path holds the fragment
STAGES = (
    ("/ethosu/vela/", "Vela"),
    ("/backends/arm/arm_vela.py", "Vela"),
    ("/backends/arm/_passes/", "the Arm passes"),
    ("/backends/arm/operators/", "the TOSA lowering"),
    ("/backends/arm/process_node.py", "the TOSA lowering"),
    ("/backends/arm/tosa/backend.py", "the TOSA lowering"),
    ("/backends/arm/operator_support/", "partitioning"),
    ("/backends/arm/tosa/partitioner.py", "partitioning"),
    ("/backends/arm/vgf/", "the VGF model converter"),
)
UNKNOWN = "the Arm lowering"  # every Arm recipe (ethos-u, tosa-fp, vgf) reaches here


def failing_stage(error: BaseException) -> str:
    """The stage the innermost known frame of `error`'s traceback belongs to; an Arm pass is
    named ("the Arm passes (decompose_meandim_pass)")."""
    stage = UNKNOWN
    traceback = error.__traceback__
    while traceback is not None:
        filename = traceback.tb_frame.f_code.co_filename
        for fragment, name in STAGES:
            if fragment in filename:
                stage = name
                if name == "the Arm passes":
                    stage = f"{name} ({PurePosixPath(filename).stem})"
                break
        traceback = traceback.tb_next
    return stage


# a list of one name repeated ("['_ExportedProgramGraphPassAdapter', ...]": the pass manager's
# names for the passes that ran, hundreds of times over) is not worth a screen of a message
REPEATED_LIST = re.compile(r"\[('[^']*')(?:, \1)+\]")
MAX_LINES = 12


def brief(error: BaseException) -> str:
    """`Type: message` of an exporter's exception, readable: repeated list items counted, at
    most a dozen lines (the rest is in the traceback the ExportError keeps as its cause). Where
    the exporter wrapped another error ("An error occurred when running the 'X' pass"), the
    innermost one's first line follows: it is the one that says what to do."""
    text = REPEATED_LIST.sub(
        lambda m: f"[{m.group(1)} x {m.group(0).count(m.group(1))}]", str(error).strip()
    )
    lines = text.splitlines()
    said = (
        f"{type(error).__name__}: "
        + "\n".join(lines[:MAX_LINES])
        + ("\n..." if len(lines) > MAX_LINES else "")
    )
    root = root_cause(error)
    if root is error:
        return said
    first = (str(root).strip().splitlines() or [""])[0]
    return f"{said}\n  caused by {type(root).__name__}: {first}"


def root_cause(error: BaseException) -> BaseException:
    """The innermost exception `error` was raised from or while handling (a cycle ends it)."""
    seen = {id(error)}
    while True:
        inner = error.__cause__ or (None if error.__suppress_context__ else error.__context__)
        if inner is None or id(inner) in seen:
            return error
        seen.add(id(inner))
        error = inner
