"""What to show: a suite case's artifact (exported now if need be), or a .pte by its path.

A case's artifact is found the way a check finds it: a Session builds the case and asks the
artifact cache for the content-addressed key of (model, inputs, recipe, tool versions), first
without exporting (`Session.artifact(..., export=False)`); when the entry is absent hil says so
and exports it (progress on stderr), unless --no-export, which turns the absence into
ArtifactMissing with the command that exports it.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from hil.artifacts.store import META_NAME
from hil.devices import DeviceRegistry
from hil.errors import ArtifactMissing, UsageError
from hil.explore.cases import find_case

Progress = Callable[[str], None]


def _no_details() -> Mapping[str, Any]:
    return MappingProxyType({})


@dataclass(frozen=True)
class Source:
    pte: Path
    label: str  # names the shown model: "<case>--<target>--<recipe>" or the file's stem
    sha256: str
    folder: Path | None = None  # the artifact folder (delegates/...), when there is one
    details: Mapping[str, Any] = field(default_factory=_no_details)  # artifact.json's details


def safe_label(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.=+-]+", "_", text)


def from_path(path: Path) -> Source:
    """A .pte given by path; a hil artifact folder's artifact.json is read when it is beside."""
    if not path.is_file():
        raise UsageError(f"{path} is not a file", fix="give a .pte path or a suite case name")
    sha = hashlib.sha256(path.read_bytes()).hexdigest()
    meta = path.parent / META_NAME
    details: Mapping[str, Any] = {}
    if meta.is_file():
        try:
            recorded = json.loads(meta.read_text())
            if recorded.get("sha256") == sha:
                details = recorded.get("details") or {}
        except (OSError, ValueError, AttributeError):
            details = {}
    label = path.stem if path.stem != "model" else f"model-{sha[:12]}"
    return Source(
        path.resolve(), safe_label(label), sha, path.parent.resolve() if details else None, details
    )


def from_case(
    spec: str,
    target: str,
    recipe_name: str | None,
    *,
    registry: DeviceRegistry,
    cache_dir: Path,
    suites_root: Path,
    allow_export: bool,
    progress: Progress,
    ready: Callable[[], object] | None = None,
) -> Source:
    """The case's artifact. `ready` runs once the input is known to be good (the case, target
    and recipe exist, and the artifact is found or may be exported) and before any export:
    `hil explore` installs the viewer there."""
    from hil.recipes import make_recipe
    from hil.session import Session

    case = find_case(spec, suites_root)
    device = registry.get(target)
    recipe_spec = device.recipe(recipe_name) if recipe_name else device.recipes[0]
    if not case.applies_to(device.name, recipe_spec.name):
        raise UsageError(
            f"case {case.name!r} does not run on {device.name} with {recipe_spec.name}",
            fix="pick a target and recipe the case allows (its targets=/recipes= in the suite)",
        )
    session = Session(devices=registry, cache_dir=cache_dir, progress=progress)
    recipe = make_recipe(
        recipe_spec.name, recipe_spec.options, shared_dir=session.cache.root / "shared"
    )
    built = session.built(case)
    try:
        artifact = session.artifact(built, recipe, export=False)
    except ArtifactMissing as missing:
        if not allow_export:
            raise ArtifactMissing(
                f"case {case.name!r} has never been exported for {device.name} with "
                f"{recipe.name}: {missing.message}",
                fix=f"run without --no-export (hil exports it), or export it with the suite: "
                f"pytest suites -k {case.name} --target={device.name} "
                f"--hil-cache-dir={cache_dir}",
            ) from missing
        if ready is not None:
            ready()
        progress(
            f"{case.name} has no {recipe.name} artifact for {device.name} in {cache_dir}: "
            "exporting it now (a big model takes minutes; --no-export refuses instead)"
        )
        artifact = session.artifact(built, recipe)
    else:
        if ready is not None:
            ready()
    finally:
        session.close()
    label = safe_label(f"{case.name}--{device.name}--{recipe.name}")
    return Source(
        artifact.pte_path.resolve(),
        label,
        artifact.sha256,
        artifact.folder.resolve(),
        artifact.details,
    )
