"""Run provenance: what ran, where, from which commit, with which tools, and how to run it again.

A results folder holds `records.jsonl` (one line per check) and `run.json` (this module's
document, once per run). Together they are everything `hil report` needs, on any machine.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import platform
import secrets
import shlex
import socket
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from hil import simd
from hil.artifacts.keys import tool_versions
from hil.compat.versions import installed
from hil.devices import DeviceSpec
from hil.results.files import now_iso
from hil.speedups import switch as speedups

RUN_VERSION = 1

SEED_POLICY = (
    "fixed seeds: reference inputs come from hil.seeded (a per-case seed, 0 unless the case "
    "names one) and calibration variations from seed 0; no global RNG state is used, so every "
    "run of a commit feeds the same inputs"
)

# Options that choose *what* ran or *where the output went*: replaced or dropped when a single
# line is reproduced. The value is how many following tokens the option consumes.
_SELECTION_OPTIONS = {
    "--target": 1,
    "-k": 1,
    "-m": 1,
    "--hil-report": 1,
    "--hil-baseline": 1,
    "--alluredir": 1,
    "--hil-results-dir": 1,
    "--clean-alluredir": 0,
    "--junitxml": 1,
    "--junit-xml": 1,
    "--lf": 0,
    "--last-failed": 0,
    "--ff": 0,
    "--failed-first": 0,
}

# Distributions whose versions every run carries, besides those that shape an export.
_EXTRA_DISTRIBUTIONS = ("hil", "numpy", "pytest", "allure-pytest")


def new_run_id(started: str, host: str) -> str:
    """Readable and unique across a lab: start time, host, and a random part."""
    stamp = started.replace("-", "").replace(":", "")[:15]
    return f"{stamp}-{host}-{secrets.token_hex(3)}"


def git_state(folder: Path) -> dict[str, Any] | None:
    """Commit, branch and whether the working tree differs from it; None outside a checkout."""

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(
                ["git", "-C", str(folder), *args],
                capture_output=True,
                text=True,
                timeout=20,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout.rstrip("\n") if done.returncode == 0 else None

    commit = (git("rev-parse", "HEAD") or "").strip() or None
    if commit is None:
        return None
    status = git("status", "--porcelain")  # untracked files count: a new suite file changes a run
    return {
        "commit": commit,
        "branch": (git("rev-parse", "--abbrev-ref", "HEAD") or "").strip(),
        "dirty": bool(status),
        "changed_files": status.splitlines()[:50] if status else [],
    }


def _cpu_model() -> str:
    found = simd.cpu_field("model name", "hardware", "cpu model")
    return found or platform.processor() or platform.machine()


def _os_name() -> str:
    try:
        for line in Path("/etc/os-release").read_text(encoding="utf-8").splitlines():
            if line.startswith("PRETTY_NAME="):
                return line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return platform.system()


def machine_info() -> dict[str, str]:
    return {
        "hostname": socket.gethostname(),
        "cpu": _cpu_model(),
        "simd": simd.simd_path(),  # the path host budgets are keyed by (hil.simd)
        "cores": str(os.cpu_count() or 0),
        "arch": platform.machine(),
        "os": _os_name(),
        "kernel": platform.release(),
    }


def tool_inventory() -> dict[str, str]:
    """Versions of everything that shapes an export or a verdict."""
    versions = dict(tool_versions())
    for dist in _EXTRA_DISTRIBUTIONS:
        try:
            versions[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            versions[dist] = "absent"
    versions["python"] = platform.python_version()
    found = installed()  # a source build's commit and folder: its version alone names no code
    if found.executorch_commit:
        versions["executorch_commit"] = found.executorch_commit
    if found.source_checkout:
        versions["executorch_source"] = found.source_checkout
    return versions


def target_entry(spec: DeviceSpec) -> dict[str, Any]:
    """What the device file said, with its hash: the file is part of what was certified."""
    try:
        device_sha256 = hashlib.sha256(spec.source.read_bytes()).hexdigest()
    except OSError:
        device_sha256 = ""
    return {
        "kind": spec.kind,
        "description": spec.description,
        "timing": spec.latency.timing,
        "recipes": list(spec.recipe_names),
        "device_file": str(spec.source),
        "device_sha256": device_sha256,
        "identities": [],
    }


def selection_free(args: Sequence[str], positional: Iterable[str]) -> list[str]:
    """The run's arguments without test selection, targets and output options."""
    drop_positional = set(positional)
    kept: list[str] = []
    skip = 0
    for token in args:
        if skip:
            skip -= 1
            continue
        name = token.split("=", 1)[0]
        if name in _SELECTION_OPTIONS:
            skip = 0 if "=" in token else _SELECTION_OPTIONS[name]
            continue
        if token in drop_positional:
            continue
        kept.append(token)
    return kept


def new_run(
    *,
    argv: Sequence[str],
    positional: Iterable[str],
    invocation_dir: Path,
    rootdir: Path,
    targets: Mapping[str, DeviceSpec],
    line: str | None = None,
) -> dict[str, Any]:
    """The run document as it stands when a run starts (finish fills in the end). `line`: how
    to run it again, where it is not pytest with `argv` (a script using hil.Session).

    `collected` (the node ids pytest kept) and `ended` (those whose teardown was reported)
    stay None outside pytest: a library run has no collection, its records are its checks.
    `records` (count and sha256 of records.jsonl) is filled in by the writer's finish()."""
    started = now_iso()
    machine = machine_info()
    args = list(argv)
    return {
        "run_version": RUN_VERSION,
        "run_id": new_run_id(started, machine["hostname"]),
        "started": started,
        "finished": None,
        "exit_status": None,
        "command": {
            "argv": args,
            "cwd": str(invocation_dir),
            "rootdir": str(rootdir),
            "line": line
            or f"cd {shlex.quote(str(invocation_dir))} && "
            + shlex.join([sys.executable, "-m", "pytest", *args]),
            "options": selection_free(args, positional),
        },
        "git": git_state(rootdir),
        "tools": tool_inventory(),
        "speedups": speedups.declared(),
        "python": {"version": sys.version.split()[0], "executable": sys.executable},
        "machine": machine,
        "seed_policy": SEED_POLICY,
        "environment": {k: v for k, v in sorted(os.environ.items()) if k.startswith("HIL_")},
        "targets": {name: target_entry(spec) for name, spec in targets.items()},
        "items": [],
        "collected": None,
        "ended": None,
        "records": None,
    }


def note_identities(run: dict[str, Any], records: Iterable[Mapping[str, Any]]) -> None:
    """Add each target's identities (runner build id, CPU, FVP version) as the records saw them."""
    for record in records:
        info = record.get("target_info")
        entry = run["targets"].get(record.get("target"))
        if not info or entry is None:
            continue
        identity = {str(k): str(v) for k, v in info.items()}
        if identity not in entry["identities"]:
            entry["identities"].append(identity)
