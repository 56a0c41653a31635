"""Which installed library a module comes from, and at what version: how a fingerprint counts
code that is not the project's (by its version, not its content)."""

from __future__ import annotations

import contextlib
import functools
import importlib.metadata
import sys
import sysconfig
from collections.abc import Mapping
from pathlib import Path


@functools.cache
def _library_roots() -> tuple[str, ...]:
    """Where installed code lives: this interpreter's library folders, and any other
    site-packages on the path (a venv borrowing another's packages, a distro's dist-packages)."""
    paths = sysconfig.get_paths()
    roots = {paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths}
    roots |= {p for p in sys.path if Path(p).name in ("site-packages", "dist-packages")}
    return tuple(str(Path(r).resolve()) for r in roots)


@functools.cache
def _distributions() -> Mapping[str, list[str]]:
    return importlib.metadata.packages_distributions()  # reads every installed dist: ~1 s


def _namesake(top: str) -> str | None:
    """The distribution named as the module, when it says it provides it (torch, numpy,
    executorch): found without reading every installed distribution's file list."""
    try:
        dist = importlib.metadata.distribution(top)
    except importlib.metadata.PackageNotFoundError:
        return None
    provides = (dist.read_text("top_level.txt") or "").split()
    return f"{dist.metadata['Name']}=={dist.version}" if top in provides else None


@functools.cache
def library_of(module_name: str) -> str | None:
    """How an installed library is identified ("transformers==5.1.0", "python==3.11.7"), or
    None for project code (hashed by its content). Editable installs are project code."""
    top = module_name.partition(".")[0]
    module = sys.modules.get(module_name) or sys.modules.get(top)
    # a namespace package (executorch) has no __file__, only its folders
    file = getattr(module, "__file__", None) or next(iter(getattr(module, "__path__", [])), None)
    python = f"python=={sys.version.split()[0]}"
    if file is None:
        return python if module is not None else None
    path = Path(file).resolve()
    if not str(path).startswith(_library_roots()):
        return None
    if not {"site-packages", "dist-packages"} & set(path.parts):
        return python  # the standard library
    if found := _namesake(top):
        return found
    for dist in _distributions().get(top, []):
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            return f"{dist}=={importlib.metadata.version(dist)}"
    return python
