"""Google's Model Explorer with Arm's PTE and TOSA adapters, in a tool venv of its own.

Why not hil's venv: the PTE adapter declares `flatbuffers>25.9` while tosa-tools (from
executorch[ethos-u]) pins `flatbuffers==25.2.10`, so pip refuses one environment with both. The
viewer therefore lives in its own venv (default `.venv-explorer` in the working folder,
`$HIL_EXPLORER_VENV` or `--viewer-venv` elsewhere), installed from PyPI on first use with pip's
progress shown (`make setup` does it ahead of time). hil's process never imports the viewer:
it runs the venv's python for conversions (hil/explore/viewer_side.py) and its `model-explorer`
command as the server (hil.explore.server).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from hil import environment
from hil.errors import ViewerFailed, ViewerMissing
from hil.locks import file_lock

REQUIREMENTS = (
    "ai-edge-model-explorer==0.1.34",
    "pte-adapter-model-explorer==0.2.0",
    "tosa-adapter-model-explorer==0.1.0",
)
DEFAULT_VENV = environment.EXPLORER_VENV.default
STAMP = ".hil-viewer.json"
VIEWER_SIDE = Path(__file__).with_name("viewer_side.py")
CONVERT_TIMEOUT_S = 600.0
PIP_SHOWN = ("Collecting", "Downloading", "Installing", "Successfully", "ERROR", "error:")

Progress = Callable[[str], None]


def default_venv() -> Path:
    return environment.EXPLORER_VENV.path()


def install_command(venv: Path) -> str:
    """The command a person can run instead of letting hil install the viewer."""
    return f"{sys.executable} -m venv {venv} && {venv}/bin/pip install " + " ".join(REQUIREMENTS)


@dataclass(frozen=True)
class Viewer:
    """A tool venv holding the viewer (installed or not)."""

    venv: Path

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    @property
    def server_command(self) -> Path:
        return self.venv / "bin" / "model-explorer"

    def installed(self) -> bool:
        """Whether the venv holds exactly the pinned packages (hil's stamp says so)."""
        try:
            stamp = json.loads((self.venv / STAMP).read_text())
        except (OSError, ValueError):
            return False
        return (
            stamp.get("requirements") == list(REQUIREMENTS)
            and self.python.exists()
            and self.server_command.exists()
        )

    def ensure(self, progress: Progress, *, allow_install: bool = True) -> Viewer:
        """The viewer, installed now if it is missing (or refused, with the fix)."""
        if self.installed():
            return self
        if not allow_install:
            raise ViewerMissing(
                f"Model Explorer is not installed in {self.venv}",
                fix=f"run without --no-install (hil installs it, about 700 MB), run `make "
                f"setup`, or: {install_command(self.venv)}",
            )

        def unwritable(e: OSError) -> ViewerMissing:
            return ViewerMissing(
                f"cannot create the viewer's venv {self.venv}: {e.strerror}",
                fix="set HIL_EXPLORER_VENV to a writable folder",
            )

        with file_lock(self.venv.with_name(self.venv.name + ".lock"), unwritable):
            if not self.installed():  # another process may have installed it meanwhile
                self._install(progress)
        return self

    def _install(self, progress: Progress) -> None:
        started = time.monotonic()
        progress(
            f"installing Model Explorer into {self.venv} (first use; {', '.join(REQUIREMENTS)})"
        )
        shutil.rmtree(self.venv, ignore_errors=True)
        self._run([sys.executable, "-m", "venv", str(self.venv)], progress, "creating the venv")
        self._run(
            [
                str(self.python),
                "-m",
                "pip",
                "install",
                "--progress-bar",
                "off",
                "--disable-pip-version-check",
                *REQUIREMENTS,
            ],
            progress,
            "pip install",
        )
        (self.venv / STAMP).write_text(json.dumps({"requirements": list(REQUIREMENTS)}))
        progress(f"Model Explorer installed in {time.monotonic() - started:.0f} s")

    def _run(self, command: Sequence[str], progress: Progress, what: str) -> None:
        try:
            process = subprocess.Popen(
                command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
            )
        except OSError as e:
            raise ViewerMissing(
                f"{what} for the viewer could not start: {e}", fix=install_command(self.venv)
            ) from e
        lines: list[str] = []
        assert process.stdout is not None
        for line in process.stdout:
            lines.append(line.rstrip())
            if line.startswith(PIP_SHOWN):
                progress(f"  {line.rstrip()}")
        if process.wait() != 0:
            tail = "\n".join("    " + t for t in lines[-15:])
            raise ViewerMissing(
                f"{what} for the viewer failed (exit {process.returncode}):\n{tail}",
                fix="check that PyPI is reachable through pip (proxy, index-url), then run "
                f"again; or install by hand: {install_command(self.venv)}",
            )

    def convert(self, pte: Path, delegate_files: Sequence[Path], label: str, out: Path) -> None:
        """The .pte (and its delegates' TOSA graphs) as one graph collection in `out`."""
        command = [
            str(self.python),
            str(VIEWER_SIDE),
            "convert",
            "--pte",
            str(pte),
            "--label",
            label,
            "--out",
            str(out),
        ]
        for path in delegate_files:
            command += ["--delegate-file", str(path)]
        try:
            done = subprocess.run(
                command, capture_output=True, text=True, timeout=CONVERT_TIMEOUT_S
            )
        except (OSError, subprocess.TimeoutExpired) as e:
            raise ViewerFailed(
                f"the viewer's conversion of {pte} did not finish: {e}",
                fix=f"delete {self.venv} so hil reinstalls it",
            ) from e
        if done.returncode != 0:
            raise ViewerFailed(
                f"the PTE adapter could not convert {pte} (exit {done.returncode})",
                fix=f"if the .pte is sound, delete {self.venv} so hil reinstalls the viewer",
                log_tail="\n".join((done.stderr or done.stdout).splitlines()[-12:]),
            )
