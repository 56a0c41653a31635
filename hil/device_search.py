"""Where a run finds its device files: the way a project's configuration is found.

The folders, searched in this order; the first file of a given `name` wins, so any of them
overrides a bundled device file by writing one of the same name:

1. the project's own `devices/`: in pytest's rootdir for the plugin; for the `hil` command and
   the library, in the nearest folder upward from the working directory holding a project
   marker (PROJECT_MARKERS), never above it, or in the working directory when none has one.
   A parent folder beyond the project is never read: a project in a shared /tmp does not
   load what another user left in /tmp/devices.
2. the folders given with `--hil-devices` (plugin) or `--devices` (`hil`), in their order;
3. the folders in `$HIL_DEVICES` (separated by ':');
4. the device files hil ships (hil.bundled). 2 and 3 add to these, they replace none.

The project's `devices/` is found, not named, so it may be someone else's folder of YAML (a
Kubernetes manifest). It is hil's when any of its YAML files is a hil device file in intent:
a YAML mapping that names one of hil's target kinds (`kind: host`) or has a key only hil's
device files have (HIL_ONLY_KEYS: `recipes`, `latency`, ...). Then every file in it is read
as a device file and a malformed one is a DeviceSpecError, as for a folder that was named.
Otherwise the folder is ignored with one warning line saying so. A named folder (2, 3) is
always read, and must exist.

Every folder read and every file in it is refused (DeviceSpecError) when someone other than
this user could have written it (hil.trust): a device file can make hil run commands.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from hil import environment
from hil.bundled import devices_dir
from hil.devices import TARGET_KINDS, DeviceRegistry, DeviceSpec, load_folder
from hil.errors import UsageError

log = logging.getLogger(__name__)

PROJECT_MARKERS = ("pyproject.toml", "setup.cfg", "pytest.ini", "tox.ini", ".git")
# Top-level keys a hil device file may have that other YAML files (Kubernetes, compose, CI)
# do not: one of them, or a hil target kind, makes a file hil's (`name`, `kind`,
# `description` alone are everyone's).
HIL_ONLY_KEYS = ("recipes", "latency", "memory", "connection", "npu", "device_allowance")

Say = Callable[[str], None]


@dataclass(frozen=True)
class DeviceFolder:
    """One folder of the search, and how it came to be searched (for messages)."""

    path: Path
    source: str  # "the project", "--hil-devices", "$HIL_DEVICES", "hil's bundled files"
    named: bool  # named by the user or hil: read as it is; else found, and may be ignored


@dataclass(frozen=True)
class FoundDevices:
    """The registry a run uses and the folders its files came from, in search order."""

    registry: DeviceRegistry
    folders: tuple[Path, ...]


def project_root(start: Path | None = None) -> Path:
    """The nearest folder from `start` (default: the working directory) upward holding a
    project marker; `start` itself when none does."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if any((folder / marker).exists() for marker in PROJECT_MARKERS):
            return folder
    return here


def search_order(
    project: Path, given: Sequence[Path | str] = (), option: str = "--devices"
) -> list[DeviceFolder]:
    """The folders searched, first to last, without repeats (the same folder named twice, or
    this checkout's devices/ as both the project's and the bundled one, is read once)."""
    folders = [DeviceFolder(project / "devices", "the project", named=False)]
    folders += [DeviceFolder(Path(p), option, named=True) for p in given]
    folders += [
        DeviceFolder(Path(p), f"${environment.DEVICES.name}", named=True)
        for p in environment.DEVICES.text().split(os.pathsep)
        if p
    ]
    folders.append(DeviceFolder(devices_dir(), "hil's bundled files", named=True))
    seen: set[Path] = set()
    unique = []
    for folder in folders:
        key = folder.path.expanduser().resolve()
        if key not in seen:
            seen.add(key)
            unique.append(DeviceFolder(key, folder.source, folder.named))
    return unique


def _intent(path: Path) -> str | None:
    """None when the file is meant as a hil device file; else why it is not."""
    try:
        data: Any = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return f"{path.name}: not readable YAML"
    if not isinstance(data, dict):
        return f"{path.name}: not a mapping"
    if data.get("kind") in TARGET_KINDS or any(key in data for key in HIL_ONLY_KEYS):
        return None
    keys = ", ".join(str(k) for k in list(data)[:3])
    return f"{path.name}: keys {keys}"


def unrelated(folder: Path) -> str | None:
    """When `folder` holds YAML files and none is meant as a hil device file, why not (one
    line); else None: the folder is hil's (or holds no YAML at all)."""
    files = sorted(folder.glob("*.yaml")) if folder.is_dir() else []
    reasons = []
    for path in files:
        reason = _intent(path)
        if reason is None:
            return None
        reasons.append(reason)
    if not reasons:
        return None
    shown = "; ".join(reasons[:3]) + ("; ..." if len(reasons) > 3 else "")
    return (
        f"ignoring {folder}: none of its {len(files)} YAML files is a hil device file "
        f"(none has a hil kind or a key such as recipes or connection: {shown})"
    )


def find_devices(
    project: Path | None = None,
    given: Sequence[Path | str] = (),
    *,
    option: str = "--devices",
    say: Say | None = None,
) -> FoundDevices:
    """The device files of a run, searched as the module docstring says. `project` is the
    project's folder (pytest's rootdir), else found from the working directory; `given` are
    the folders named on the command line as `option`; `say` gets the one warning line of an
    ignored folder (default: a logging warning)."""
    warn = say or (lambda line: log.warning("hil: %s", line))
    specs: dict[str, DeviceSpec] = {}
    read: list[Path] = []
    for folder in search_order(project or project_root(), given, option):
        if folder.named and not folder.path.is_dir():
            raise UsageError(
                f"{folder.source} names {folder.path}, which is not a folder",
                fix=f"give a folder of device files to {folder.source}, or leave it out",
            )
        if not folder.named and (why := unrelated(folder.path)):
            warn(why)
            continue
        loaded = load_folder(folder.path)
        if loaded:
            read.append(folder.path)
        for spec in loaded:
            specs.setdefault(spec.name, spec)
    return FoundDevices(DeviceRegistry(specs), tuple(read))
