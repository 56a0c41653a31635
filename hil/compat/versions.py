"""The torch and ExecuTorch hil runs beside, and whether hil was tested with them.

hil is installed into its user's environment, beside the ExecuTorch they already have: a
release from the registry, or one built from a source checkout (operator authors work on
ExecuTorch's main). Supported: the ExecuTorch minor releases in TESTED_MINORS, each with the
torch it asks for, and any source checkout (its commit named everywhere a version is). Outside
that, hil says so in one sentence before any work starts, not with an AttributeError inside a
stage; `HIL_UNTESTED_EXECUTORCH=1` goes on anyway, and every record then carries the sentence.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from hil import environment
from hil.errors import UsageError

# ExecuTorch minor releases hil is tested with (make test: the newest; make compat: the older)
TESTED_MINORS = ("1.4", "1.5")
NEWEST = "1.5.1"  # what `make setup` installs (constraints.txt)
ALLOW_UNTESTED = environment.UNTESTED_EXECUTORCH.name


@dataclass(frozen=True)
class Installed:
    """The torch and ExecuTorch in this environment, as a record names them."""

    torch: str
    executorch: str  # the distribution's version, "absent" when not installed
    executorch_commit: str | None  # the commit it was built from, when it says
    source_checkout: str | None  # the folder it was installed from, for a source build

    @property
    def minor(self) -> str | None:
        found = re.match(r"(\d+)\.(\d+)(?:\.\d+)?", self.executorch)
        return f"{found[1]}.{found[2]}" if found else None

    @property
    def released(self) -> bool:
        """A release as the registry has it (1.5.1, 1.5.1+cpu), not a dev or source build."""
        return re.fullmatch(r"\d+\.\d+\.\d+(\+[a-z0-9]+)?", self.executorch) is not None

    @property
    def supported(self) -> bool:
        if self.source_checkout is not None:
            return True
        return self.released and self.minor in TESTED_MINORS

    def describe(self) -> str:
        """'torch 2.13.0, ExecuTorch 1.5.1 (commit 3b60683)' and where a source build came from."""
        executorch = f"ExecuTorch {self.executorch}"
        if self.executorch_commit:
            executorch += f" (commit {self.executorch_commit[:12]})"
        if self.source_checkout:
            executorch += f" built from the source checkout {self.source_checkout}"
        return f"torch {self.torch}, {executorch}"

    def sentence(self) -> str:
        """Whether hil was tested with these, in one sentence."""
        tested = " or ".join(f"{m}.x" for m in TESTED_MINORS)
        if self.executorch == "absent":
            return (
                f"ExecuTorch is not installed beside torch {self.torch}: hil needs ExecuTorch "
                f"{tested} (pip install 'executorch[ethos-u]=={NEWEST}')"
            )
        if self.source_checkout:
            return (
                f"{self.describe()}: a source checkout, supported as hil finds what it needs "
                f"there (the releases tested are {tested})"
            )
        if self.supported:
            return f"{self.describe()}: a release hil is tested with ({tested})"
        return (
            f"{self.describe()} is outside the ExecuTorch hil is tested with ({tested}, or a "
            f"source checkout): exports, runners and ExecuTorch's own tests are not expected to "
            f"work; install ExecuTorch {tested} (make setup installs {NEWEST}), or set "
            f"{ALLOW_UNTESTED}=1 to try anyway"
        )

    def as_record(self) -> dict[str, str | None]:
        return {
            "torch": self.torch,
            "executorch": self.executorch,
            "executorch_commit": self.executorch_commit,
            "executorch_source": self.source_checkout,
        }


@functools.cache
def installed() -> Installed:
    """What this environment has (read once: a process does not change its ExecuTorch)."""
    torch = _version("torch")
    executorch = _version("executorch")
    return Installed(torch, executorch, _commit(), _source_folder())


def require_supported() -> Installed:
    """The installed versions, or a UsageError with the sentence when hil was not tested with
    them (unless HIL_UNTESTED_EXECUTORCH=1)."""
    found = installed()
    if found.supported or environment.UNTESTED_EXECUTORCH.text() == "1":
        return found
    raise UsageError(
        found.sentence(),
        fix=f"install ExecuTorch {NEWEST} (or an earlier supported release), or set "
        f"{ALLOW_UNTESTED}=1 to run on {found.executorch} at your own risk",
    )


@functools.cache
def source_tree_digest() -> str | None:
    """For a source build, what its installed package holds now (None for a release, whose
    version says it): its Python files by content, its compiled ones by size and time. An
    operator author edits a pass without committing, or rebuilds with other options, and the
    commit stays the same; a cached program made by the earlier code must not be served."""
    if installed().source_checkout is None:
        return None
    import executorch

    digest = hashlib.sha256()
    for root in map(Path, executorch.__path__):
        for path in _package_files(root):
            relative = f"{path.relative_to(root)}\0".encode()
            if path.suffix == ".py":
                digest.update(relative + path.read_bytes())
            else:
                stat = path.stat()
                digest.update(relative + f"{stat.st_size}\0{stat.st_mtime_ns}".encode())
    return digest.hexdigest()[:16]


# ExecuTorch's submodules (XNNPACK, flatbuffers, ...) and what is never code that runs
NOT_THE_PACKAGE = frozenset({"third-party", ".git", "__pycache__"})


def _package_files(root: Path) -> list[Path]:
    """The package's Python and compiled files. An editable install's package folder is links
    to the checkout's own folders (src/executorch/backends -> ../../backends), so links are
    followed, each real folder once; submodules and build outputs are not the package."""
    found: list[Path] = []
    seen: set[str] = set()
    for folder, dirs, names in os.walk(root, followlinks=True):
        real = os.path.realpath(folder)
        if real in seen:
            dirs[:] = []
            continue
        seen.add(real)
        dirs[:] = sorted(d for d in dirs if d not in NOT_THE_PACKAGE)
        found += [Path(folder, n) for n in sorted(names) if n.endswith((".py", ".so", ".pyd"))]
    return found


def _version(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "absent"


def _commit() -> str | None:
    """The commit ExecuTorch says it was built from (executorch/version.py), if any."""
    try:
        from executorch.version import git_version
    except ImportError:
        return None
    return str(git_version) if git_version else None


def _source_folder() -> str | None:
    """The local folder pip installed ExecuTorch from (PEP 610 direct_url.json), for a build
    from a source checkout; None for a wheel from a registry."""
    try:
        text = importlib.metadata.distribution("executorch").read_text("direct_url.json")
    except importlib.metadata.PackageNotFoundError:
        return None
    if not text:
        return None
    try:
        url = json.loads(text)
    except ValueError:
        return None
    location = str(url.get("url", ""))
    if "dir_info" not in url or not location.startswith("file://"):
        return None
    return location.removeprefix("file://")
