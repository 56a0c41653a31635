"""Which explainer a check gets: by the program's recipe and where it ran."""

from __future__ import annotations

import logging
from pathlib import Path

from hil.artifacts.store import Artifact
from hil.case import BuiltCase
from hil.devices import DeviceSpec
from hil.errors import HilError
from hil.explain import Divergence
from hil.explain.cpu import CPU_RECIPES, DeviceRun, explain_program
from hil.recipes import Recipe

log = logging.getLogger("hil.explain")

NOTHING_PAIRED = (
    "first divergent operator: no intermediate output of the program could be "
    "paired with the reference's"
)


def explain_check(
    built: BuiltCase,
    artifact: Artifact,
    recipe: Recipe,
    spec: DeviceSpec,
    workdir: Path,
    shared_dir: Path,
    run_log: str = "",
    device: DeviceRun | None = None,
) -> tuple[Divergence | None, str]:
    """The divergence, or None and why there is none. Never raises: the verdict it explains
    stands whatever happens here. `shared_dir`: the cache's shared folder (quantized models).
    `run_log`: what the target said of the run (vgf-emu compares each VGF delegate with its
    TOSA graph as it runs, which places a wrong output in a delegate). `device`: the target's
    own explaining run with ETDump (runner targets), tried before the host's runtime."""
    target_kind = spec.kind
    if target_kind == "vgf_emu":
        from hil.targets.vgf_emu import SUMMARY

        said = next((line for line in run_log.splitlines() if line.startswith(SUMMARY)), "")
        return None, (
            "each VGF delegate beside its TOSA graph in the reference model: "
            + said.removeprefix(SUMMARY).strip()
        ) if said else NOTHING_PAIRED
    try:
        if recipe.name == "ethos-u" and target_kind == "ethos_u_ref":
            from hil.explain.tosa import explain_delegates

            found = explain_delegates(built, artifact, workdir, store=shared_dir / "quantized")
            return found, "" if found else NOTHING_PAIRED
        if recipe.name in CPU_RECIPES:
            target = "host" if target_kind == "host" else spec.name
            found = explain_program(built, artifact, recipe, workdir, target=target, device=device)
            return found, "" if found else NOTHING_PAIRED
    except HilError as e:
        fix = f" ({e.fix})" if e.fix else ""
        return None, f"first divergent operator not found: {e.message}{fix}"
    except Exception as e:  # a bug in an explainer must not cost the verdict it explains
        log.exception("explaining %s failed", built.case.name)
        return None, f"first divergent operator not found: {type(e).__name__}: {e}"
    return None, (
        f"first divergent operator: not available for the {recipe.name} recipe "
        f"on {target_kind} targets"
    )
